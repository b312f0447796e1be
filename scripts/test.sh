#!/usr/bin/env bash
# The whole suite, on SQLite and on PostgreSQL (+pgvector). Called by `make test` and .ci/run.
# Under CI=true a missing PostgreSQL, Redis, pgvector or Chromium fails the run; elsewhere the
# run warns loudly and skips only what needs the missing piece.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
CI="${CI:-false}"
in_ci() { [[ "${CI,,}" =~ ^(1|true|yes)$ ]]; }
warn() { printf '\n\033[1;33m!!! %s\033[0m\n\n' "$*" >&2; }
die() { printf '\n\033[1;31m%s\033[0m\n' "$*" >&2; exit 1; }

export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/agno_site}"
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379/15}"

if ! bash scripts/install_pgvector.sh; then
  in_ci && die "pgvector could not be installed"
  warn "pgvector is not installed: the PostgreSQL run will fail to migrate"
fi
if ! bash scripts/install_chromium.sh; then
  in_ci && die "Chromium could not be installed"
  warn "Chromium is not installed: browser tests will be skipped"
fi

pg_up=true
if ! $PY - "$TEST_DATABASE_URL" <<'PYEOF'
import sys, psycopg
from urllib.parse import urlsplit, urlunsplit
url = urlsplit(sys.argv[1])
admin = urlunsplit(url._replace(path="/postgres"))
psycopg.connect(admin.replace("postgres://", "postgresql://", 1), connect_timeout=5).close()
PYEOF
then
  in_ci && die "PostgreSQL is unreachable at $TEST_DATABASE_URL"
  warn "PostgreSQL is unreachable at $TEST_DATABASE_URL: SKIPPING the PostgreSQL run"
  pg_up=false
fi

# The API fuzz run (schemathesis) needs the plugins the main runs switch off.
FUZZ=(-o "addopts=-p no:cacheprovider --strict-markers -ra" tests/fuzz)

status=0
sqlite_url="sqlite:///$(mktemp -d)/agno_site.sqlite3"
echo "=== suite on SQLite ==="
DATABASE_URL="$sqlite_url" $PY -m pytest "$@" || status=1
echo "=== API fuzz on SQLite ==="
DATABASE_URL="$sqlite_url" $PY -m pytest "${FUZZ[@]}" || status=1
if $pg_up; then
  echo "=== suite on PostgreSQL ($TEST_DATABASE_URL) ==="
  DATABASE_URL="$TEST_DATABASE_URL" $PY -m pytest "$@" || status=1
  echo "=== API fuzz on PostgreSQL ==="
  DATABASE_URL="$TEST_DATABASE_URL" $PY -m pytest "${FUZZ[@]}" || status=1
fi
exit $status
