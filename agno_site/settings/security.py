"""Who may sign in and call the API, and what a client may send (README: Security): browser
logins and their lockout, authentication (JWT, the security key, none) and isolation, rate
limits, trusted proxies, request bounds, CORS, the Content Security Policy."""
from __future__ import annotations

from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured

from . import envtools as env
from .environment import AGENT_OS_ID, DEBUG

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
