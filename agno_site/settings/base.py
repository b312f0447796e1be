"""Settings for every environment, read from the process environment (see .env.example).

``local.py`` (development, the default of manage.py) and ``test.py`` set a few defaults before
importing this module; production runs this module as ``agno_site.settings.production``.

This module holds Django's own (applications, middleware, templates, static files, logging)
and gathers the rest, one module per concern: ``environment`` (read first: paths, DEBUG, the
site's identity), ``database``, ``background`` (broker, job queue, periodic work), ``security``,
``api``, ``agents`` and ``knowledge``.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from . import envtools as env
from .environment import *  # noqa: F403  (read first: .env, VAR_DIR, DEBUG)
from .environment import BASE_DIR, DEBUG, VAR_DIR


def _secret_key() -> str:
    key = env.secret("SECRET_KEY")
    if key:
        return key
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is false (or SECRET_KEY_FILE)")
    # Development: generate once and keep it in an untracked file, so logins survive restarts.
    path = VAR_DIR / "secret_key"
    if path.exists():
        return path.read_text().strip()
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key)
    return key


SECRET_KEY = _secret_key()

ALLOWED_HOSTS = env.listing("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when DEBUG is false")
CSRF_TRUSTED_ORIGINS = env.listing("CSRF_TRUSTED_ORIGINS")
# A failed CSRF check answers JSON on API paths (HTML on the browser's pages).
CSRF_FAILURE_VIEW = "core.api.errors.csrf_failure"

INSTALLED_APPS = [
    "core.console_site.ConsoleAdminConfig",  # Django's admin, as the operator console
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "django_celery_beat",
    "axes",
    "csp",
    "core",
    "jobs",
    "agents",
    "sessions.apps.SessionsConfig",
    "learnings",
    "knowledge",
    "scheduler",
    "approvals",
    "metrics",
    "traces",
    "evals",
    "chat",
    "importer",
]

MIDDLEWARE = [
    # Django's own middleware, with hooks that stay on the event loop (see core.middleware).
    "core.middleware.SecurityMiddleware",
    # Ahead of the static files, so every response carries the policy (an SVG opened on its own too).
    "core.middleware.ContentSecurityPolicyMiddleware",
    # CORS as AgentOS answers it (README: Security): preflights answered here, before any view.
    "core.middleware.CorsMiddleware",
    "core.middleware.StaticFilesMiddleware",
    "core.middleware.SessionMiddleware",
    "core.middleware.CommonMiddleware",
    "core.middleware.CsrfViewMiddleware",
    "core.middleware.AuthenticationMiddleware",
    "core.middleware.MessageMiddleware",
    "core.middleware.XFrameOptionsMiddleware",
    # Last, as axes wants (it reads what the login view did): a locked-out login answers 429.
    "core.middleware.LoginLockoutMiddleware",
]

ROOT_URLCONF = "agno_site.urls"
ASGI_APPLICATION = "agno_site.asgi.application"
WSGI_APPLICATION = "agno_site.wsgi.application"
# AgentOS tolerates a trailing slash on every route without redirecting; so do we (see core.urls).
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env.string("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "chat" / "static_vendor"] if (BASE_DIR / "chat" / "static_vendor").is_dir() else []
WHITENOISE_USE_FINDERS = True

# --- Each concern's settings --------------------------------------------------------------------
from .database import *  # noqa: E402,F403
from .background import *  # noqa: E402,F403
from .security import *  # noqa: E402,F403
from .api import *  # noqa: E402,F403
from .agents import *  # noqa: E402,F403
from .knowledge import *  # noqa: E402,F403

# --- Logging -----------------------------------------------------------------------------------
LOG_LEVEL = env.string("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(f"LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {LOG_LEVEL!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
