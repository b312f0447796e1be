"""Settings for every environment, read from the process environment (see .env.example).

``local.py`` (development, the default of manage.py) and ``test.py`` set a few defaults before
importing this module; production runs this module as ``agno_site.settings.production``.
"""
from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from . import envtools as env

BASE_DIR = Path(__file__).resolve().parent.parent.parent

if Path(BASE_DIR / ".env").is_file() and not env.boolean("AGNO_SITE_IGNORE_DOTENV", False):
    import environ

    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

VAR_DIR = Path(env.string("VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env.boolean("DEBUG", False)


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

AGENT_OS_HOST = env.string("AGENT_OS_HOST", "127.0.0.1")
AGENT_OS_PORT = env.integer("AGENT_OS_PORT", 7777, minimum=1, maximum=65535)
# The most a request line and its headers may take in `manage.py serve` (uvicorn with h11).
HTTP_MAX_HEADER_BYTES = env.integer("HTTP_MAX_HEADER_BYTES", 64 * 1024, minimum=1024)
AGENT_OS_ID = env.string("AGENT_OS_ID", "agno-site")
AGENT_OS_NAME = env.string("AGENT_OS_NAME", "Agno Site")
# What /config says this OS is for, and the version /info reports (AgentOS's description= and version=).
AGENT_OS_DESCRIPTION = env.string("AGENT_OS_DESCRIPTION", "") or None
AGENT_OS_VERSION = env.string("AGENT_OS_VERSION", "1.0.0")

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

# --- Database -----------------------------------------------------------------------------
DATABASES = {"default": env.database("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    if DATABASES["default"]["NAME"] != ":memory:":
        Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # Django's backend, with the transactions of this process taking turns on a lock rather than
    # in SQLite's sleeping busy handler (core/db/sqlite3/base.py).
    DATABASES["default"]["ENGINE"] = "core.db.sqlite3"
    DATABASES["default"]["OPTIONS"] = {
        # WAL lets readers run beside the one writer; IMMEDIATE takes the write lock at BEGIN,
        # so a read-then-write transaction never fails half way with "database is locked".
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        # How long a writer waits for the lock (seconds; SQLite's busy timeout too).
        "timeout": env.integer("SQLITE_BUSY_TIMEOUT_MS", 10000, minimum=0) / 1000,
    }
# Connections are kept between requests (and between runs in the run threads): opening one costs
# more than a whole run's queries (SQLite re-runs its PRAGMAs, PostgreSQL authenticates).
DATABASES["default"]["CONN_MAX_AGE"] = env.integer("DB_CONN_MAX_AGE", 600, minimum=0)
# A kept connection is checked before its first use after a request or task; a pooled one (below)
# before the pool lends it (Django passes ConnectionPool.check_connection as the pool's check), so
# after a restart of the database or a terminated session the next query gets a good connection.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Values travel beside the statement (no quoting of every value into the SQL text), and a
    # statement a connection has run five times is prepared: PostgreSQL stops parsing and
    # planning it on every run. DB_PREPARED_STATEMENTS=false behind a pooler that cannot keep
    # prepared statements (PgBouncer before 1.21 in transaction mode).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        server_side_binding=True,
        prepare_threshold=5 if env.boolean("DB_PREPARED_STATEMENTS", True) else None,
    )
    # A process stopped inside a transaction (SIGSTOP, a frozen VM, a debugger) would hold its
    # locks for good: the job queue's advisory lock would stall every submission. PostgreSQL ends
    # a session idle in a transaction this long, which frees them; no transaction here waits on
    # anything but the database, so this never ends a healthy one. 0 turns it off.
    idle_timeout = env.integer("DB_IDLE_IN_TRANSACTION_TIMEOUT", 60, minimum=0)
    if idle_timeout:
        DATABASES["default"]["OPTIONS"]["options"] = f"-c idle_in_transaction_session_timeout={idle_timeout * 1000}"
    # A bounded pool per process (psycopg_pool, through Django's OPTIONS["pool"]): a thread holds
    # a connection only while it works on the database and hands it back when it closes it, so a
    # process never holds more than DB_POOL_MAX_SIZE, however many requests and runs are in flight
    # (a run waiting on its model holds none: core.db.release_connections). Beyond that, a thread
    # waits up to DB_POOL_TIMEOUT seconds for a connection; then the request answers 503.
    if env.boolean("DB_POOL", True):
        DATABASES["default"]["OPTIONS"]["pool"] = {
            "min_size": env.integer("DB_POOL_MIN_SIZE", 1, minimum=0),
            "max_size": env.integer("DB_POOL_MAX_SIZE", 10, minimum=1),
            "timeout": env.number("DB_POOL_TIMEOUT", 10.0, minimum=0.1),
        }
        # Idle connections above min_size go back to the server within DB_POOL_IDLE_SECONDS of the
        # load ending. psycopg_pool's max_idle is not a per-connection idle time: every max_idle
        # seconds its ShrinkPool task closes ONE connection if some connection sat unused the
        # whole window (the first window after the load still saw it in use). So going from
        # max_size down to min_size takes (max_size - min_size) + 2 windows at most, and the
        # window is DB_POOL_IDLE_SECONDS divided by that.
        _pool = DATABASES["default"]["OPTIONS"]["pool"]
        DB_POOL_IDLE_SECONDS = env.number("DB_POOL_IDLE_SECONDS", 60.0, minimum=1.0)
        _pool["max_idle"] = DB_POOL_IDLE_SECONDS / (_pool["max_size"] - min(_pool["min_size"], _pool["max_size"]) + 2)
        if DATABASES["default"]["OPTIONS"]["pool"]["min_size"] > DATABASES["default"]["OPTIONS"]["pool"]["max_size"]:
            raise ImproperlyConfigured("DB_POOL_MIN_SIZE must not exceed DB_POOL_MAX_SIZE")
        # Pooled connections go back to the pool when closed; Django refuses persistent ones.
        DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis, Celery, Channels -----------------------------------------------------------------
REDIS_URL = env.redis_url("REDIS_URL")

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
# Celery's Django fixup closes the DB connection around every task unless this is set
# (a new PostgreSQL connection per task costs ~15 ms).
CELERY_DB_REUSE_MAX = 1000
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 defaults socket_timeout to 5 s, the same as channels-redis's blocking
            # pop, which kills idle consumers (django/channels_redis#422).
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": None}]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Auth, static files, i18n ----------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Browser logins lock out after LOGIN_FAILURE_LIMIT failures per account and per client address,
# for LOGIN_LOCKOUT_MINUTES after the last one (django-axes; core.logins). ModelBackend still
# does the authenticating; axes' backend only refuses locked-out attempts in front of it.
AUTHENTICATION_BACKENDS = ["core.logins.LoginLockoutBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env.integer("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env.integer("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_CLIENT_IP_CALLABLE = "core.addresses.client_address"
# Failed attempts are kept (the lockout needs them); a row per successful login would be a log
# of personal data (who, from where, with what browser) that nothing here reads.
AXES_DISABLE_ACCESS_LOG = True
# core.middleware.LoginLockoutMiddleware stands in for axes' middleware (see there).
SILENCED_SYSTEM_CHECKS = ["axes.W002"]
LOGIN_URL = "/chat/login/"
LOGIN_REDIRECT_URL = "/chat/"
LOGOUT_REDIRECT_URL = "/chat/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env.string("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "chat" / "static_vendor"] if (BASE_DIR / "chat" / "static_vendor").is_dir() else []
WHITENOISE_USE_FINDERS = True

# --- API ---------------------------------------------------------------------------------------
DOCS_ENABLED = env.boolean("DOCS_ENABLED", True)
# Bounds on what a client sends (README: Security). Over them: 413 for size, 400 for too many
# fields, 422 for nesting; always JSON on API paths (core.api.errors). The depth bound stays far
# below the interpreter's recursion limit, which everything that walks a JSON value shares.
# (DATA_UPLOAD_MAX_MEMORY_SIZE is set with the run form's bounds below.)
DATA_UPLOAD_MAX_NUMBER_FIELDS = env.integer("DATA_UPLOAD_MAX_NUMBER_FIELDS", 1000, minimum=10)
JSON_MAX_DEPTH = env.integer("JSON_MAX_DEPTH", 64, minimum=2, maximum=200)
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # Any DRF view, ours or a library's, reads JSON through the bounded parser (core.api.parsers).
    "DEFAULT_PARSER_CLASSES": ["core.api.parsers.StrictJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "core.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "DEFAULT_GENERATOR_CLASS": "core.api.openapi.AgentOSSchemaGenerator",
    # The document and the docs pages are public in every auth mode, as in AgentOS.
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "TITLE": AGENT_OS_NAME,
    "DESCRIPTION": "AgentOS-compatible API served by Agno Site.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and Redoc from our own static files (drf-spectacular-sidecar), never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Swagger UI's default validator badge is an image from validator.swagger.io.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "COMPONENT_SPLIT_REQUEST": True,
    # AgentOS's name for the run statuses (several serializers' "status" and "run_status" fields).
    "ENUM_NAME_OVERRIDES": {
        "RunStatus": "sessions.api.serializers.common.RUN_STATUSES",
        "ContentStatus": "knowledge.api.serializers.CONTENT_STATUSES",
    },
    # The open (no-credentials) authenticator is not a security scheme; leave it out.
    "AUTHENTICATION_WHITELIST": [
        "core.api.authentication.BearerAuthentication",
        "core.api.authentication.BrowserSessionAuthentication",
    ],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "core.api.openapi.strip_optional_slashes",
        "core.api.openapi.declare_common_errors",
        "core.api.openapi.overlapping_alternatives",
        "core.api.openapi.declare_health",
        # Last: every operation's summary and description, from core/api/operations/.
        "core.api.operations.document_operations",
        "core.api.operations.form_examples",
    ],
}

# --- Authentication and authorization (README: Security) ------------------------------------
# JWT (RBAC scopes, user isolation) when verification keys or a JWKS file are set; else a static
# security key when OS_SECURITY_KEY is set; else none (development only).
# Comma-separated (PEM has no commas); JWT_VERIFICATION_KEYS_FILE may hold them instead.
JWT_VERIFICATION_KEYS = [key.strip() for key in (env.secret("JWT_VERIFICATION_KEYS") or "").split(",") if key.strip()]
# AgentOS's variable, one key (an HS secret or a PEM public key), so a deployment moved over as it
# is starts with JWT on; it is one more key beside the list above.
_jwt_single_key = (env.secret("JWT_VERIFICATION_KEY") or "").strip()
if _jwt_single_key and _jwt_single_key not in JWT_VERIFICATION_KEYS:
    JWT_VERIFICATION_KEYS.append(_jwt_single_key)
JWT_JWKS_FILE = env.string("JWT_JWKS_FILE")
JWT_ALGORITHMS = env.listing("JWT_ALGORITHMS", ["HS256", "RS256", "ES256"])
JWT_AUDIENCE = env.string("JWT_AUDIENCE", AGENT_OS_ID)
JWT_VERIFY_AUDIENCE = env.boolean("JWT_VERIFY_AUDIENCE", True)
JWT_ISSUER = env.string("JWT_ISSUER")
JWT_LEEWAY_SECONDS = env.integer("JWT_LEEWAY_SECONDS", 10, minimum=0, maximum=300)
JWT_USER_ID_CLAIM = env.string("JWT_USER_ID_CLAIM", "sub")
JWT_SCOPES_CLAIM = env.string("JWT_SCOPES_CLAIM", "scopes")
JWT_SESSION_ID_CLAIM = env.string("JWT_SESSION_ID_CLAIM", "session_id")
# Signs tokens minted by `manage.py issue_token` (default: the first verification key).
JWT_SIGNING_KEY = env.secret("JWT_SIGNING_KEY")
OS_SECURITY_KEY = env.secret("OS_SECURITY_KEY")
ADMIN_SCOPE = env.string("ADMIN_SCOPE", "agent_os:admin")
# Under JWT, a non-admin caller only ever sees and changes their own data.
USER_ISOLATION = env.boolean("USER_ISOLATION", True)
ALLOW_UNAUTHENTICATED = env.boolean("ALLOW_UNAUTHENTICATED", False)

if JWT_VERIFICATION_KEYS or JWT_JWKS_FILE:
    AGENT_OS_AUTH_MODE = "jwt"
elif OS_SECURITY_KEY:
    AGENT_OS_AUTH_MODE = "security_key"
else:
    AGENT_OS_AUTH_MODE = "none"
if AGENT_OS_AUTH_MODE == "none" and not DEBUG and not ALLOW_UNAUTHENTICATED:
    raise ImproperlyConfigured(
        "No authentication configured with DEBUG=false: set JWT_VERIFICATION_KEYS (or JWT_VERIFICATION_KEY) or JWT_JWKS_FILE "
        "(JWT), or OS_SECURITY_KEY, or ALLOW_UNAUTHENTICATED=true to serve an open API on purpose"
    )
for _algorithm in JWT_ALGORITHMS:
    if _algorithm.lower() == "none" or not _algorithm[:2] in {"HS", "RS", "ES", "PS", "Ed"}:
        raise ImproperlyConfigured(f"JWT_ALGORITHMS: {_algorithm!r} is not an allowed signature algorithm")
AGENT_OS_USER_ISOLATION = AGENT_OS_AUTH_MODE == "jwt" and USER_ISOLATION
# With no authentication configured, what a caller without credentials may reach (README:
# Security). "guests": only user ids nobody signs in as (no account, no access token, no service
# account), and without a user_id only rows without an owner, so the browser users of a
# development server stay apart from anonymous API calls. "open": any user_id and every row, as
# AgentOS's open server; the default when ALLOW_UNAUTHENTICATED=true opens the server on purpose.
ANONYMOUS_ACCESS = env.string("ANONYMOUS_ACCESS", "open" if ALLOW_UNAUTHENTICATED else "guests")
if ANONYMOUS_ACCESS not in ("guests", "open"):
    raise ImproperlyConfigured(f"ANONYMOUS_ACCESS must be guests or open, not {ANONYMOUS_ACCESS!r}")

# Per-principal request limits (DRF throttling rates: "<n>/second|minute|hour|day").
RATE_LIMIT_USER = env.rate("RATE_LIMIT_USER", "1200/minute")
RATE_LIMIT_ANONYMOUS = env.rate("RATE_LIMIT_ANONYMOUS", "300/minute")
# Failed bearer authentications (JWTs, access tokens, the security key) per client address; past
# it every credential from that address is refused with 429 until the window has room again.
AUTH_FAILURE_LIMIT = env.rate("AUTH_FAILURE_LIMIT", "20/minute")
# Proxies whose X-Forwarded-For is believed (addresses or networks). None by default: the client
# address is the direct peer's, whatever the header says (core.addresses).
TRUSTED_PROXIES = env.networks("TRUSTED_PROXIES")

# Request bounds (README: Security). Run forms: each uploaded file and all of a request's uploads
# together (file parts, and inline images/audio/videos/input_files at their encoded size); the
# message (or a continue's input), in characters; sessions per user. Over a bound: 413, or 409
# for the session count.
UPLOAD_MAX_FILE_BYTES = env.integer("UPLOAD_MAX_FILE_BYTES", 20 * 1024 * 1024, minimum=1)
UPLOAD_MAX_TOTAL_BYTES = env.integer("UPLOAD_MAX_TOTAL_BYTES", 20 * 1024 * 1024, minimum=1)
RUN_MAX_MESSAGE_CHARS = env.integer("RUN_MAX_MESSAGE_CHARS", 1_000_000, minimum=1)
MAX_SESSIONS_PER_USER = env.integer("MAX_SESSIONS_PER_USER", 10_000, minimum=1)
# Django's bound on a request's form fields (all but file parts), kept consistent with the ones
# above: room for the longest message (at worst 4 UTF-8 bytes a character), inline media up to
# the upload total, and Django's own 2.5 MiB for every other field. Above it a run form is 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.integer(
    "DATA_UPLOAD_MAX_MEMORY_SIZE", UPLOAD_MAX_TOTAL_BYTES + 4 * RUN_MAX_MESSAGE_CHARS + 2_621_440, minimum=1024
)
# A whole request body, read by core.asgi before any view: past every bound above (the fields,
# the uploads, 1 MiB of multipart framing) it is refused unread with a 413, rather than spooled
# to disk first as Django's handler would.
REQUEST_MAX_BODY_BYTES = env.integer(
    "REQUEST_MAX_BODY_BYTES", DATA_UPLOAD_MAX_MEMORY_SIZE + UPLOAD_MAX_TOTAL_BYTES + 1_048_576, minimum=1024
)
# Django's default, on purpose: a body above it spools to an anonymous temporary file (no name
# on disk, gone with the request) rather than to memory. The run form's upload handler keeps the
# files it accepts in memory (at most UPLOAD_MAX_TOTAL_BYTES) and never writes one to disk.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# Browser origins allowed to call the API (core.middleware.CorsMiddleware): the configured ones,
# then AgentOS's defaults, agent-ui on its development port and Agno's control plane. Only the
# configured ones may open a WebSocket (core.websocket), which a login cookie could ride on.
CORS_CONFIGURED_ORIGINS = env.listing("CORS_ALLOWED_ORIGINS")
AGENTOS_DEFAULT_ORIGINS = [
    "http://localhost:3000",
    "https://agno.com",
    "https://www.agno.com",
    "https://app.agno.com",
    "https://os-stg.agno.com",
    "https://os.agno.com",
]
CORS_ALLOWED_ORIGINS = list(dict.fromkeys([*CORS_CONFIGURED_ORIGINS, *AGENTOS_DEFAULT_ORIGINS]))
CORS_PREFLIGHT_MAX_AGE = 600

# Content Security Policy on every response (django-csp; README: Security). What the sanitiser
# of the chat UI (chat/static/chat/js/render.js) misses, the browser still refuses: scripts only
# from our own files (no inline script, no eval), images only from us or data: URLs (a remote
# image would carry data out in its URL), forms post only to us, nothing frames us.
# 'self' in connect-src also lets a page open ws:/wss: sockets to its own host (CSP Level 3;
# tests/ui/test_csp_browser.py checks it in Chromium).
# style-src 'self': <style> elements and style attributes are refused, so model output cannot
# restyle or cover the page. Styles that scripts set through the CSSOM (Chart.js, the admin's
# widgets, the chat's auto-growing composer) are not inline styles to CSP and keep working.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# Tracebacks and error reports never show credentials (Django's filter misses Authorization).
DEFAULT_EXCEPTION_REPORTER_FILTER = "core.logging.CredentialFilter"

CACHES = (
    {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
    if REDIS_URL
    else {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
)

# --- Agents -------------------------------------------------------------------------------------
# Python modules that define agents in code (each exposes AGENTS, a list of runtime Agents).
AGENT_MODULES = env.listing("AGENT_MODULES")
# Root of the per-user folders the "workspace" toolkit works in.
WORKSPACE_ROOT = Path(env.string("WORKSPACE_ROOT", str(VAR_DIR / "workspace")))
# Hosts or networks the "http" toolkit may fetch although they are private (e.g. an intranet).
HTTP_FETCH_ALLOW_HOSTS = env.listing("HTTP_FETCH_ALLOW_HOSTS")
# MCP servers an operator may give a database-defined agent in the admin (the allow-list):
# ``name=command`` (a stdio server the worker starts) or ``name=url`` (streamable HTTP, through the
# "http" toolkit's address guard: a private address needs HTTP_FETCH_ALLOW_HOSTS). The bundled demo
# server is allowed by default; MCP_SERVERS=none allows none.
MCP_SERVERS = env.named_targets("MCP_SERVERS", "demo=python -m mcp_server.demo_tools")
# How long one MCP operation (connect, list or call) may take before it fails as a tool call.
MCP_TIMEOUT_SECONDS = env.number("MCP_TIMEOUT_SECONDS", 30.0, minimum=1.0)
# The platform's own MCP server at /mcp (its agents, teams and workflows as MCP tools).
MCP_SERVER_ENABLED = env.boolean("MCP_SERVER_ENABLED", True)
# Threads per process for the database phases of runs (a run's start, its end; a request's
# preparation). Runs wait on their models on the event loop and hold none while they wait.
RUN_THREADS = env.integer("RUN_THREADS", 32, minimum=1)
# Threads per process that sync tools run in (the run loop is async: a tool that blocks on files,
# HTTP or a database must not block it). Async tools are awaited on the loop and need none.
TOOL_THREADS = env.integer("TOOL_THREADS", 16, minimum=1)
# Connection pools per model provider and event loop; the runtime (no Django) reads the variable
# itself, so it is checked here, at start-up.
MODEL_HTTP_POOLS = env.integer("MODEL_HTTP_POOLS", 8, minimum=1)
# Inline and streamed runs one user may have in progress in each web process (0: no cap); over
# it a run is refused with 429: one user can never take more than that share of a process, and a
# person chatting needs one or two.
RUN_MAX_PER_USER = env.integer("RUN_MAX_PER_USER", 8, minimum=0)

# --- Tracing (OpenTelemetry) ------------------------------------------------------------------
# Every top-level run's spans (the run, model calls, tool calls, member runs, workflow steps) to
# the trace tables, and to an OTLP collector when OTEL_EXPORTER_OTLP_ENDPOINT is set. A code
# component's own ``tracing=`` setting wins over this. On in development (make run), opt-in in
# production, as AgentOS's tracing=True: a traced run costs about 0.2 ms more CPU, 3-5% of a run
# through a provider SDK (bench/README.md).
TRACING = env.boolean("TRACING", DEBUG)
# How long the span writer gathers finished runs' spans before it writes them (milliseconds).
TRACING_EXPORT_DELAY_MS = env.integer("TRACING_EXPORT_DELAY_MS", 1000, minimum=10)
OTEL_SERVICE_NAME = env.string("OTEL_SERVICE_NAME", "agno-site")

# --- Knowledge ----------------------------------------------------------------------------------
# The embedder new knowledge bases use: "minilm" (all-MiniLM-L6-v2, int8 ONNX, from PyPI packages:
# offline), "openai:<model>" (an OpenAI-compatible /embeddings endpoint: EMBEDDINGS_BASE_URL, else
# OPENAI_BASE_URL) or "fastembed:<model>" (any fastembed model; downloaded on first use).
KNOWLEDGE_EMBEDDER = env.string("KNOWLEDGE_EMBEDDER", "minilm")
# Where the packaged model's files are assembled for fastembed (links, plus two small JSON files).
KNOWLEDGE_MODEL_DIR = Path(env.string("KNOWLEDGE_MODEL_DIR", str(VAR_DIR / "models")))
# Largest content accepted (upload, text, fetched URL), in bytes.
KNOWLEDGE_MAX_CONTENT_BYTES = env.integer("KNOWLEDGE_MAX_CONTENT_BYTES", 20 * 1024 * 1024, minimum=1)
# What reading one content may cost, whatever its size on the wire (a 13 KB DOCX can inflate to
# 5 MB of text): the members of a document archive (a DOCX), inflated, all together, and each
# compressed PDF stream (pypdf's own limits, lowered to this when they are higher); the text
# extracted, in characters (1,000,000: a 500-page book); and the chunks one content is split
# into (2,500: the default chunk size makes 2,000 of that much text; embedding 10,000 took half an
# hour of one core).
KNOWLEDGE_MAX_UNPACKED_BYTES = env.integer("KNOWLEDGE_MAX_UNPACKED_BYTES", 32 * 1024 * 1024, minimum=1)
KNOWLEDGE_MAX_TEXT_CHARS = env.integer("KNOWLEDGE_MAX_TEXT_CHARS", 1_000_000, minimum=1)
KNOWLEDGE_MAX_CHUNKS = env.integer("KNOWLEDGE_MAX_CHUNKS", 2_500, minimum=1)
# Wall-clock limit for fetching a URL (redirects and body included), seconds.
KNOWLEDGE_URL_TIMEOUT_SECONDS = env.integer("KNOWLEDGE_URL_TIMEOUT_SECONDS", 20, minimum=1)
# Default chunk size and overlap in characters: all-MiniLM-L6-v2 reads 256 word pieces and cuts
# the rest silently. That is about 1,000 characters of plain English, but technical text (code,
# identifiers, URLs) makes a piece of every 2.5 characters: at 800, 22 of the 294 chunks of the
# shipped corpus were longer than the window (bench/knowledge_quality.py); at 600 the longest is
# 245 pieces, and retrieval is as good.
KNOWLEDGE_CHUNK_SIZE = env.integer("KNOWLEDGE_CHUNK_SIZE", 600, minimum=50)
KNOWLEDGE_CHUNK_OVERLAP = env.integer("KNOWLEDGE_CHUNK_OVERLAP", 100, minimum=0)
# HNSW's candidate list per search (pgvector's hnsw.ef_search); iterative scans extend it while
# a user's filter leaves fewer than the limit. 400: at 100,000 chunks over 20 users the recall@10
# of a user holding 30% of them is 0.91 at 100 and 0.97 at 400, for ~0.5 ms more per search
# (bench/knowledge_search.py).
KNOWLEDGE_HNSW_EF_SEARCH = env.integer("KNOWLEDGE_HNSW_EF_SEARCH", 400, minimum=1, maximum=1000)
# A user whose candidate chunks (own and shared, in the base) are at most this many is searched
# exactly on PostgreSQL (their rows by the owner's index, all scored): exact, and faster than the
# graph when they hold a small share of a large table. 0: always the HNSW index.
KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS = env.integer("KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS", 10000, minimum=0)
# The shared base the /knowledge API and the chat's "My documents" use when a request names none
# (created on first use). A user's uploads into it are theirs; searches see theirs and the shared.
KNOWLEDGE_DEFAULT_BASE = env.string("KNOWLEDGE_DEFAULT_BASE", "documents")
# Server folders offered as remote content sources (GET /knowledge/{id}/sources), as
# "id=/path" pairs separated by ";" (e.g. "handbook=/srv/handbook;specs=/srv/specs"). A file is
# ingested by POST /knowledge/remote-content with config_id=<id> and its path in the folder.
KNOWLEDGE_SOURCES = env.string("KNOWLEDGE_SOURCES", "")
# Reranking (knowledge/rerankers.py): off when empty; "remote:<model>" posts the candidates to
# KNOWLEDGE_RERANKER_URL (an endpoint of the common /rerank API: Cohere, Jina, Infinity, vLLM),
# "fastembed:<model>" runs a cross-encoder locally (downloaded on first use; no PyPI package ships
# one). A reranker that fails or times out leaves the search's own order, with a warning logged.
KNOWLEDGE_RERANKER = env.string("KNOWLEDGE_RERANKER", "") or ""
KNOWLEDGE_RERANKER_URL = env.string("KNOWLEDGE_RERANKER_URL", "") or ""
KNOWLEDGE_RERANKER_API_KEY = env.secret("KNOWLEDGE_RERANKER_API_KEY")
KNOWLEDGE_RERANKER_TIMEOUT_SECONDS = env.number("KNOWLEDGE_RERANKER_TIMEOUT_SECONDS", 10.0, minimum=0.1)
# How many candidates a reranked search reads from its ranking (at least the results asked for).
KNOWLEDGE_RERANK_CANDIDATES = env.integer("KNOWLEDGE_RERANK_CANDIDATES", 30, minimum=1, maximum=200)
if KNOWLEDGE_RERANKER:
    _kind, _, _model = KNOWLEDGE_RERANKER.partition(":")
    if _kind not in ("remote", "fastembed") or not _model.strip():
        raise ImproperlyConfigured(f"KNOWLEDGE_RERANKER must be remote:<model> or fastembed:<model>, got {KNOWLEDGE_RERANKER!r}")
    if _kind == "remote" and not KNOWLEDGE_RERANKER_URL:
        raise ImproperlyConfigured("KNOWLEDGE_RERANKER=remote:<model> needs KNOWLEDGE_RERANKER_URL (the endpoint's /rerank URL)")
if KNOWLEDGE_RERANKER_URL and not KNOWLEDGE_RERANKER_URL.lower().startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"KNOWLEDGE_RERANKER_URL must be an http:// or https:// URL, got {KNOWLEDGE_RERANKER_URL!r}")

# --- Background runs (the durable job queue) --------------------------------------------------
AGENTOS_BACKGROUND_MAX_CONCURRENCY = env.integer("AGENTOS_BACKGROUND_MAX_CONCURRENCY", 256, minimum=1)
AGENTOS_BACKGROUND_MAX_PER_USER = env.integer("AGENTOS_BACKGROUND_MAX_PER_USER", 8, minimum=1)
AGENTOS_BACKGROUND_MAX_QUEUE_DEPTH = env.integer("AGENTOS_BACKGROUND_MAX_QUEUE_DEPTH", 1000, minimum=0)
# One user's share of the queue (0: only the depth above limits it).
AGENTOS_BACKGROUND_MAX_QUEUE_PER_USER = env.integer("AGENTOS_BACKGROUND_MAX_QUEUE_PER_USER", 100, minimum=0)
AGENTOS_BACKGROUND_MAX_ATTEMPTS = env.integer("AGENTOS_BACKGROUND_MAX_ATTEMPTS", 1, minimum=1)
AGENTOS_BACKGROUND_LEASE_SECONDS = env.integer("AGENTOS_BACKGROUND_LEASE_SECONDS", 60, minimum=3)
AGENTOS_BACKGROUND_RETRY_DELAY_SECONDS = env.integer("AGENTOS_BACKGROUND_RETRY_DELAY_SECONDS", 5, minimum=0)
AGENTOS_BACKGROUND_TIMEOUT_SECONDS = env.integer("AGENTOS_BACKGROUND_TIMEOUT_SECONDS", 3600, minimum=1)
AGENTOS_IDEMPOTENCY_TTL_SECONDS = env.integer("AGENTOS_IDEMPOTENCY_TTL_SECONDS", 86400, minimum=1)
# Without a broker (no REDIS_URL) each web process executes the job table itself (false: never).
EMBEDDED_WORKER = env.boolean("EMBEDDED_WORKER", True)
# Jobs one worker process (Celery, or the embedded worker) carries at once on its event loop.
WORKER_RUNS_PER_PROCESS = env.integer("WORKER_RUNS_PER_PROCESS", 256, minimum=1)
# How often the reaper looks for expired leases (Celery beat, or the embedded worker).
AGENTOS_REAPER_INTERVAL_SECONDS = env.integer("AGENTOS_REAPER_INTERVAL_SECONDS", 10, minimum=1)
# GET /ready answers 503 once no process has finished a reaper pass for this long.
READY_REAPER_MAX_AGE_SECONDS = env.integer("READY_REAPER_MAX_AGE_SECONDS", max(60, 3 * AGENTOS_REAPER_INTERVAL_SECONDS), minimum=1)
# Each process holding jobs writes its liveness this often (one row per worker), and the reaper
# gives up the jobs of a worker whose heartbeat is this old, without waiting for their leases.
AGENTOS_PROCESS_HEARTBEAT_SECONDS = env.number("AGENTOS_PROCESS_HEARTBEAT_SECONDS", 5.0, minimum=0.1)
AGENTOS_PROCESS_LOST_AFTER_SECONDS = env.number("AGENTOS_PROCESS_LOST_AFTER_SECONDS", 4 * AGENTOS_PROCESS_HEARTBEAT_SECONDS, minimum=0.3)
if AGENTOS_PROCESS_LOST_AFTER_SECONDS < 2 * AGENTOS_PROCESS_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured("AGENTOS_PROCESS_LOST_AFTER_SECONDS must be at least twice AGENTOS_PROCESS_HEARTBEAT_SECONDS")
# Metrics (metrics/): days are cut in this time zone; a refresh also recomputes the days of runs
# updated up to the overlap before its watermark (a run written just before it, committed after);
# a refresh marked running for longer than the stale time may be started again.
METRICS_TIMEZONE = env.string("METRICS_TIMEZONE", "UTC")
try:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    ZoneInfo(METRICS_TIMEZONE)
except (ZoneInfoNotFoundError, ValueError) as exc:
    raise ImproperlyConfigured(f"METRICS_TIMEZONE={METRICS_TIMEZONE!r} is not a known time zone (e.g. UTC, Europe/Paris)") from exc
METRICS_REFRESH_OVERLAP_SECONDS = env.integer("METRICS_REFRESH_OVERLAP_SECONDS", 300, minimum=0)
METRICS_REFRESH_STALE_SECONDS = env.integer("METRICS_REFRESH_STALE_SECONDS", 3600, minimum=60)
# Every user's rows are refreshed (incrementally) once per interval: beat's task with a broker,
# each web process's embedded refresher without one; a key per interval makes it one refresh
# however many ask. 0: only on demand (POST /metrics/refresh, the dashboard, manage.py).
METRICS_REFRESH_INTERVAL_SECONDS = env.integer("METRICS_REFRESH_INTERVAL_SECONDS", 3600, minimum=0)
if 0 < METRICS_REFRESH_INTERVAL_SECONDS < 60:
    raise ImproperlyConfigured(f"METRICS_REFRESH_INTERVAL_SECONDS must be 0 (off) or at least 60, got {METRICS_REFRESH_INTERVAL_SECONDS}")
# --- Schedules ---------------------------------------------------------------------------------
# How often schedules are swept: due fires, their runs' statuses, retries (the embedded ticker
# without a broker; beat's safety-net task next to the per-schedule PeriodicTasks with one).
SCHEDULER_TICK_SECONDS = env.integer("SCHEDULER_TICK_SECONDS", 15, minimum=1)
# Without a broker each web process runs the ticker (false: schedules fire only through beat).
SCHEDULER_TICKER = env.boolean("SCHEDULER_TICKER", True)
# How many schedules one user (or service account) may hold, and the shortest time between two
# of a schedule's ticks (cron has minute precision: 60 allows every minute). 0: no limit.
SCHEDULES_MAX_PER_USER = env.integer("SCHEDULES_MAX_PER_USER", 100, minimum=0)
SCHEDULE_MIN_INTERVAL_SECONDS = env.integer("SCHEDULE_MIN_INTERVAL_SECONDS", 60, minimum=0)
CELERY_BEAT_SCHEDULE = {
    "reap-expired-jobs": {"task": "agno_site.reap_jobs", "schedule": float(AGENTOS_REAPER_INTERVAL_SECONDS)},
    "scheduler-tick": {"task": "agno_site.scheduler.tick", "schedule": float(SCHEDULER_TICK_SECONDS)},
}
if METRICS_REFRESH_INTERVAL_SECONDS:
    # Sent twice per interval, so that beat's drift never skips an interval; the interval's key
    # makes the second a no-op. The task does nothing once the interval is set to 0 (beat keeps
    # an entry it once stored in its database).
    CELERY_BEAT_SCHEDULE["metrics-refresh"] = {"task": "agno_site.metrics.refresh", "schedule": METRICS_REFRESH_INTERVAL_SECONDS / 2}
CELERY_TASK_SOFT_TIME_LIMIT = AGENTOS_BACKGROUND_TIMEOUT_SECONDS + 60
CELERY_TASK_TIME_LIMIT = AGENTOS_BACKGROUND_TIMEOUT_SECONDS + 120
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # Above the hard time limit, else Redis redelivers a task that is still running.
    "visibility_timeout": CELERY_TASK_TIME_LIMIT + 600,
    # Scan for the unacknowledged tasks of a dead worker every 10 s (kombu's default throttles to ~100 s).
    "unacked_restore_interval": 10,
    "unacked_restore_throttle": 1,
}

# --- Evals -------------------------------------------------------------------------------------
# The model that judges accuracy and agent-as-judge evals ("provider:model_id"); empty: the
# evaluated agent's or team's own model judges (a workflow then needs this set).
EVALS_JUDGE_MODEL = env.string("EVALS_JUDGE_MODEL", "")
# POST /eval-runs answers with the finished eval, as AgentOS does, waiting at most this long for
# its background job; past it, a 202 with the eval run as it stands (poll GET /eval-runs/{id}).
EVALS_SYNC_WAIT_SECONDS = env.integer("EVALS_SYNC_WAIT_SECONDS", 120, minimum=1)
# Where file_path_to_save_results templates are written (relative to it); unset: refused.
EVALS_RESULTS_DIR = env.string("EVALS_RESULTS_DIR", "") or None

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
