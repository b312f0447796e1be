"""Development settings: the default of manage.py. Embedded defaults, DEBUG on unless set."""
import os

os.environ.setdefault("DEBUG", "true")

from .base import *  # noqa: E402,F403
