"""Test settings: whatever DATABASE_URL says (the Makefile runs the suite on SQLite and PostgreSQL)."""
import os
import tempfile

os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-use-0123456789")
os.environ.setdefault("ALLOWED_HOSTS", "*")
os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="agno-site-test-"))
os.environ["AGNO_SITE_IGNORE_DOTENV"] = "true"
os.environ.setdefault("AGENT_MODULES", "tests.agents_for_tests")
# Most tests run the open (no-auth) server; tests/security switches auth on per test.
os.environ.setdefault("ALLOW_UNAUTHENTICATED", "true")
os.environ.setdefault("RATE_LIMIT_USER", "1000000/minute")
os.environ.setdefault("RATE_LIMIT_ANONYMOUS", "1000000/minute")
os.environ.setdefault("AUTH_FAILURE_LIMIT", "1000000/minute")
# No periodic metrics refresh jobs in other tests' queues (tests/metrics switch it on).
os.environ.setdefault("METRICS_REFRESH_INTERVAL_SECONDS", "0")

from .base import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

if DATABASES["default"]["ENGINE"] == "core.db.sqlite3":  # noqa: F405
    # A file, not SQLite's shared-cache memory database: that one reports "table is locked"
    # to concurrent writers instead of waiting, which the file database in production never does.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}  # noqa: F405
# Close connections after every request and run, so no server thread holds one when the test
# database is dropped.
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    # A test database need not outlive a crash of its server: commits return without waiting for
    # the WAL to reach the disk (every committed row is seen by every session at once, as ever).
    # Each test's commits and each transactional test's TRUNCATE waited on an fsync: tests/traces
    # and tests/admin took a quarter to two fifths less time without (measured under load).
    options = DATABASES["default"]["OPTIONS"]  # noqa: F405
    options["options"] = " ".join(filter(None, [options.get("options", ""), "-c synchronous_commit=off"]))
