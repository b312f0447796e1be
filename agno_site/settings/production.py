"""Production settings: DEBUG off unless set, HTTPS hardening switchable from the environment."""
from . import envtools as _env
from .base import *  # noqa: F403

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if _env.boolean("BEHIND_HTTPS_PROXY", False) else None
SESSION_COOKIE_SECURE = _env.boolean("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
