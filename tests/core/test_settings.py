"""Start-up refuses malformed configuration with a message naming the variable."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


SHOW = "print(settings.DATABASES['default']['ENGINE'], settings.AGENT_OS_PORT, settings.DEBUG)"


def load_settings(tmp_path: Path, module: str = "agno_site.settings.base", show: str = SHOW, **env: str) -> subprocess.CompletedProcess:
    unset = {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "DB_PREPARED_STATEMENTS",
             "AUTH_FAILURE_LIMIT", "TRUSTED_PROXIES", "LOGIN_FAILURE_LIMIT", "LOGIN_LOCKOUT_MINUTES"}
    clean = {key: value for key, value in os.environ.items() if key not in unset}
    clean.update({"VAR_DIR": str(tmp_path), "AGNO_SITE_IGNORE_DOTENV": "true", "DJANGO_SETTINGS_MODULE": module, **env})
    code = f"import django; django.setup(); from django.conf import settings; {show}"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"AGENT_OS_PORT": "seventy"}, "AGENT_OS_PORT must be an integer"),
        ({"AGENT_OS_PORT": "70000"}, "AGENT_OS_PORT must be at most 65535"),
        ({"DEBUG": "maybe"}, "DEBUG must be true or false"),
        ({"DATABASE_URL": "mysql://u@h/db"}, "DATABASE_URL must be a sqlite:/// or postgres:// URL"),
        ({"DATABASE_URL": "garbage"}, "DATABASE_URL must be a sqlite:/// or postgres:// URL"),
        ({"DATABASE_URL": "postgres://host:5432"}, "DATABASE_URL names no database"),
        ({"REDIS_URL": "http://localhost:6379"}, "REDIS_URL must be a redis://"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL must be"),
        ({"SECRET_KEY_FILE": "/nonexistent/secret"}, "SECRET_KEY_FILE: cannot read"),
    ],
)
def test_malformed_values_stop_startup_naming_the_variable(tmp_path: Path, env: dict[str, str], message: str) -> None:
    result = load_settings(tmp_path, "agno_site.settings.local", **env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def test_production_requires_a_secret_key_and_hosts(tmp_path: Path) -> None:
    result = load_settings(tmp_path, "agno_site.settings.production")
    assert result.returncode != 0 and "SECRET_KEY must be set when DEBUG is false" in result.stderr
    result = load_settings(tmp_path, "agno_site.settings.production", SECRET_KEY="x" * 50)
    assert result.returncode != 0 and "ALLOWED_HOSTS must be set" in result.stderr


def test_secret_key_can_come_from_a_file(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("from-a-file-" + "k" * 40 + "\n")
    result = load_settings(tmp_path, "agno_site.settings.production", SECRET_KEY_FILE=str(key_file), ALLOWED_HOSTS="example.com")
    assert result.returncode == 0, result.stderr


def test_development_defaults_sqlite_and_a_generated_secret_kept_in_a_file(tmp_path: Path) -> None:
    first = load_settings(tmp_path, "agno_site.settings.local")
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["core.db.sqlite3", "7777", "True"]
    key_file = tmp_path / "secret_key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    key = key_file.read_text()
    assert load_settings(tmp_path, "agno_site.settings.local").returncode == 0
    assert key_file.read_text() == key and len(key) >= 50


@pytest.mark.parametrize(("flag", "threshold"), [(None, "5"), ("false", "None")])
def test_postgres_binds_values_server_side_and_prepares_what_runs_often(tmp_path: Path, flag: str | None, threshold: str) -> None:
    env = {"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/agno_site"}
    if flag is not None:
        env["DB_PREPARED_STATEMENTS"] = flag
    show = "o = settings.DATABASES['default']['OPTIONS']; print(o['server_side_binding'], o['prepare_threshold'])"
    result = load_settings(tmp_path, "agno_site.settings.local", show=show, **env)
    assert result.stdout.split() == ["True", threshold], result.stderr


@pytest.mark.django_db
def test_sqlite_runs_in_wal_mode_with_a_busy_timeout() -> None:
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite only")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] == 10000
    assert connection.settings_dict["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


@pytest.mark.django_db
@pytest.mark.postgres_only
def test_postgres_has_the_pgvector_extension() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    assert row is not None and row[0] >= "0.5"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TRUSTED_PROXIES": "10.0.0.0/8,proxy.internal"}, "TRUSTED_PROXIES: 'proxy.internal' is not an IP address or network"),
        ({"AUTH_FAILURE_LIMIT": "twenty"}, "AUTH_FAILURE_LIMIT must be <n>/second"),
        ({"RATE_LIMIT_ANONYMOUS": "300"}, "RATE_LIMIT_ANONYMOUS must be <n>/second"),
        ({"LOGIN_FAILURE_LIMIT": "0"}, "LOGIN_FAILURE_LIMIT must be at least 1"),
        ({"LOGIN_LOCKOUT_MINUTES": "soon"}, "LOGIN_LOCKOUT_MINUTES must be an integer"),
    ],
)
def test_malformed_limits_stop_startup_naming_the_variable(tmp_path: Path, env: dict[str, str], message: str) -> None:
    result = load_settings(tmp_path, "agno_site.settings.local", **env)
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr and message in result.stderr


def test_limits_and_trusted_proxies_from_the_environment(tmp_path: Path) -> None:
    show = "print(settings.TRUSTED_PROXIES, settings.AUTH_FAILURE_LIMIT, settings.AXES_FAILURE_LIMIT, settings.AXES_COOLOFF_TIME)"
    defaults = load_settings(tmp_path, "agno_site.settings.local", show=show)
    assert defaults.stdout.strip() == "[] 20/minute 5 0:15:00", defaults.stderr
    chosen = load_settings(tmp_path, "agno_site.settings.local", show=show, TRUSTED_PROXIES="10.0.0.0/8, ::1",
                           AUTH_FAILURE_LIMIT="5/hour", LOGIN_FAILURE_LIMIT="3", LOGIN_LOCKOUT_MINUTES="60")
    assert chosen.stdout.strip() == "['10.0.0.0/8', '::1'] 5/hour 3 1:00:00", chosen.stderr
