"""What every settings module reads first: where the project and its data are, whether this is
development, and the site's identity. A ``.env`` file in the project root is read here, once,
before any variable is (real environment variables win)."""
from __future__ import annotations

from pathlib import Path

from . import envtools as env

BASE_DIR = Path(__file__).resolve().parent.parent.parent

if Path(BASE_DIR / ".env").is_file() and not env.boolean("AGNO_SITE_IGNORE_DOTENV", False):
    import environ

    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

VAR_DIR = Path(env.string("VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env.boolean("DEBUG", False)

AGENT_OS_HOST = env.string("AGENT_OS_HOST", "127.0.0.1")
AGENT_OS_PORT = env.integer("AGENT_OS_PORT", 7777, minimum=1, maximum=65535)
# The most a request line and its headers may take in `manage.py serve` (uvicorn with h11).
HTTP_MAX_HEADER_BYTES = env.integer("HTTP_MAX_HEADER_BYTES", 64 * 1024, minimum=1024)
AGENT_OS_ID = env.string("AGENT_OS_ID", "agno-site")
AGENT_OS_NAME = env.string("AGENT_OS_NAME", "Agno Site")
# What /config says this OS is for, and the version /info reports (AgentOS's description= and version=).
AGENT_OS_DESCRIPTION = env.string("AGENT_OS_DESCRIPTION", "") or None
AGENT_OS_VERSION = env.string("AGENT_OS_VERSION", "1.0.0")
