"""The README and .env.example document every environment variable the settings read."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def settings_variables() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "agno_site" / "settings").glob("*.py"):
        text = path.read_text()
        names |= set(re.findall(r"env\.(?:string|boolean|integer|number|listing|secret|database|redis_url)\(\s*[\"']([A-Z_]+)", text))
        names |= set(re.findall(r"_env\.(?:boolean|string|integer)\(\s*[\"']([A-Z_]+)", text))
    return names


def test_settings_read_some_variables() -> None:
    assert {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "AGENT_OS_PORT", "SQLITE_BUSY_TIMEOUT_MS"} <= settings_variables()


def test_every_variable_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = sorted(name for name in settings_variables() if f"`{name}`" not in readme)
    assert missing == []


def test_every_variable_is_in_env_example() -> None:
    example = (ROOT / ".env.example").read_text()
    internal = {"AGNO_SITE_IGNORE_DOTENV"}
    missing = sorted(name for name in settings_variables() - internal if not re.search(rf"^#? ?{name}=", example, re.M))
    assert missing == []
