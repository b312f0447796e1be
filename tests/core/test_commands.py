"""manage.py for operators: a command pointed at the wrong database says so, and end users'
accounts are created from the command line (issue 19)."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, var_dir: Path, stdin: str = "", **env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    environment.update({"VAR_DIR": str(var_dir), "AGNO_SITE_IGNORE_DOTENV": "true", **env})
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=environment, input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_a_command_without_the_servers_var_dir_says_what_is_wrong(tmp_path) -> None:
    result = manage("changepassword", "operator", var_dir=tmp_path)
    assert result.returncode == 2
    assert "no such table" not in result.stderr
    assert f"No database at {tmp_path}/db.sqlite3 (DATABASE_URL is unset: $VAR_DIR/db.sqlite3, with VAR_DIR={tmp_path})" in result.stderr
    assert "Run the command with the server's VAR_DIR (or DATABASE_URL)" in result.stderr
    assert not (tmp_path / "db.sqlite3").exists()  # and no empty database was left behind


def test_an_unmigrated_database_named_by_database_url_is_named(tmp_path) -> None:
    (tmp_path / "empty.sqlite3").touch()
    result = manage("createuser", "alice", "--password-stdin", var_dir=tmp_path, stdin="x\n",
                    DATABASE_URL=f"sqlite:///{tmp_path}/empty.sqlite3")
    assert result.returncode == 2
    assert f"The database {tmp_path}/empty.sqlite3 (from DATABASE_URL) has no tables: no migrations are applied." in result.stderr


def test_migrate_makes_the_database_and_then_commands_run(tmp_path) -> None:
    """And createuser reads the password from standard input (--password-stdin)."""
    assert manage("migrate", "--noinput", "-v0", var_dir=tmp_path).returncode == 0
    result = manage("createuser", "alice", "--password-stdin", var_dir=tmp_path, stdin="a-long-passphrase-9\n")
    assert (result.returncode, result.stdout.strip()) == (0, "Created user 'alice' (not staff): they sign in at /chat/."), result.stderr


DB = pytest.mark.django_db


@DB
def test_createuser_makes_a_normal_user_who_can_sign_in(client) -> None:
    out = io.StringIO()
    call_command("createuser", "alice", "--password", "a-long-passphrase-9", "--email", "alice@example.com", stdout=out)
    user = get_user_model().objects.get(username="alice")
    assert (user.is_active, user.is_staff, user.is_superuser, user.email) == (True, False, False, "alice@example.com")
    assert client.login(username="alice", password="a-long-passphrase-9")
    assert client.get("/admin/").status_code == 302  # no admin access


@DB
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["carol", "--password", "short"], "This password is too short"),
        (["carol", "--password", "password123"], "This password is too common"),
        (["bad name!", "--password", "a-long-passphrase-9"], "Enter a valid username"),
        (["carol", "--password", ""], "The password is empty"),
    ],
)
def test_createuser_refuses_bad_input(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("createuser", *args, stdout=io.StringIO())
    assert not get_user_model().objects.exists()


@DB
def test_createuser_refuses_a_taken_username() -> None:
    call_command("createuser", "dave", "--password", "a-long-passphrase-9", stdout=io.StringIO())
    with pytest.raises(CommandError, match="A user with that username already exists"):
        call_command("createuser", "dave", "--password", "another-passphrase-8", stdout=io.StringIO())


@DB
def test_createuser_without_a_password_and_no_terminal_refuses() -> None:
    with pytest.raises(CommandError, match="No password: pass --password-stdin"):
        call_command("createuser", "erin", stdout=io.StringIO())
