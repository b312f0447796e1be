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

# The two databases' runs go side by side (each its own Redis database, so neither flushes the
# other's): most of a run is waiting on sockets, model delays and subprocesses, not on the CPU.
# Each run's output is kept in a file and printed whole when both have ended.
logs=$(mktemp -d)
sqlite_url="sqlite:///$(mktemp -d)/agno_site.sqlite3"
redis_base=$(printf %s "$TEST_REDIS_URL" | sed -E "s#/[0-9]+\$##")
run_db() {  # name, DATABASE_URL, Redis database number, pytest arguments...
  local name=$1 url=$2 redis_db=$3; shift 3
  {
    echo "=== suite on $name ==="
    DATABASE_URL="$url" TEST_REDIS_URL="$redis_base/$redis_db" $PY -m pytest "$@" || echo "FAILED: suite on $name"
    echo "=== API fuzz on $name ==="
    DATABASE_URL="$url" TEST_REDIS_URL="$redis_base/$redis_db" $PY -m pytest "${FUZZ[@]}" || echo "FAILED: API fuzz on $name"
  } > "$logs/$name.log" 2>&1
}
started=$(date +%s)
run_db SQLite "$sqlite_url" 15 "$@" &
sqlite_pid=$!
if $pg_up; then
  run_db PostgreSQL "$TEST_DATABASE_URL" 14 "$@" &
  pg_pid=$!
  wait $pg_pid
fi
wait $sqlite_pid
status=0
for log in "$logs"/SQLite.log "$logs"/PostgreSQL.log; do
  [[ -f $log ]] || continue
  cat "$log"
  grep -q '^FAILED: ' "$log" && status=1
done
echo "=== both databases in $(( $(date +%s) - started )) s: $( ((status)) && echo FAILED || echo passed) ==="
exit $status
