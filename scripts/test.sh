#!/usr/bin/env bash
# The whole suite, on SQLite and on PostgreSQL (+pgvector). Called by `make test` and .ci/run.
# Under CI=true a missing PostgreSQL, Redis, pgvector or Chromium fails the run; elsewhere the
# run warns loudly and skips only what needs the missing piece.
#
# `bash scripts/test.sh` runs every group where it belongs (below); `bash scripts/test.sh ARGS...`
# runs pytest ARGS on both databases, as they are (e.g. `bash scripts/test.sh tests/api -x`).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
CI="${CI:-false}"
in_ci() { [[ "${CI,,}" =~ ^(1|true|yes)$ ]]; }
warn() { printf '\n\033[1;33m!!! %s\033[0m\n\n' "$*" >&2; }
die() { printf '\n\033[1;31m%s\033[0m\n' "$*" >&2; exit 1; }

# ---- where each group runs --------------------------------------------------------------------
# A group is a directory of tests/: a new test file runs where the other files of its directory
# run, and a directory named nowhere below runs on both databases (the safe default: most of the
# suite reads and writes through the ORM, and each database has code of its own: the queue's
# claim, full-text search, pgvector, metrics' SQL, the SQLite backend). Tests marked
# postgres_only skip on SQLite wherever they are. The two databases' runs go side by side, so a
# group that needs only one run goes where it evens out the two.
#
# The browser tests drive the chat UI and the admin's pages in Chromium: what they prove is the
# pages' behaviour (HTML, JavaScript, the streams they follow), so each file runs once. The
# database code under those pages is tested on both databases where it is written: search
# (tests/sessions), metrics and the dashboard's numbers (tests/metrics), the queue (tests/jobs,
# tests/agents), approvals, tenancy (tests/security). They are split between the two streams to
# even them out: these on PostgreSQL, every other browser file (a new one too) on SQLite.
# Measured from a clean clone with all of them on SQLite: SQLite's stream 887 s + 248 s of fuzz,
# PostgreSQL's 514 s + 86 s; these files are about half the browser tests' time (437 s on
# PostgreSQL for all of them, run alone).
# (test_chat_small_defects.py stays on SQLite: its phone-keyboard focus check failed once on the
# busier PostgreSQL stream, a timing of the page under load, not of the database.)
UI_ON_POSTGRES=(
  tests/ui/test_chat_browser.py tests/ui/test_chat_workflows.py tests/ui/test_console.py
  tests/ui/test_chat_documents.py tests/ui/test_chat_approvals.py tests/ui/test_chat_teams.py
)
mapfile -t UI_ON_SQLITE < <(ls tests/ui/test_*.py | grep -vxF -f <(printf '%s\n' "${UI_ON_POSTGRES[@]}"))
# Run once, in the SQLite stream:
ONCE_ON_SQLITE=(
  # The engine: models, tools, teams, workflows, checkpoints, run in memory; no test of it
  # touches a database (tests/engine runs even without Django).
  tests/engine
  "${UI_ON_SQLITE[@]}"
  # The endpoint matrix (every operation against every bad credential, a missing scope and
  # another user's ids: about 1,500 cases) proves the authentication and authority layer, which
  # reads the same ORM queries on both databases; the tenancy of those queries is proven on both
  # by tests/security's other files, tests/api and the tenancy guard. It took 278 s on
  # PostgreSQL against 86 s on SQLite (clean clones), so it runs on SQLite.
  tests/security/test_endpoint_matrix.py
)
# Run once, in the PostgreSQL stream:
ONCE_ON_POSTGRES=("${UI_ON_POSTGRES[@]}")
# The API fuzz (schemathesis, tests/fuzz) runs on both databases: a 5xx it finds is usually a
# database's own refusal (PostgreSQL: NUL bytes in text, integers past bigint; SQLite: integers
# past 64 bits), which only that database shows. Each stream ends with its database's fuzz: with
# both fuzz runs after the SQLite suite, that stream took 1,228 s against 888 s; so, 936 s against
# 1,165 s (clean clones, 2 cores).

# The API fuzz run (schemathesis) needs the plugins the main runs switch off.
FUZZ=(-o "addopts=-p no:cacheprovider --strict-markers -ra" tests/fuzz)
# On PostgreSQL every operation and every hostile payload kind still runs (the fixed bad-text
# cases in full), with 4 random draws per operation instead of SQLite's 15 and 8, and without
# Hypothesis's explicit phase: the OpenAPI document's own examples and schemathesis's coverage
# cases (boundary values, each parameter missing or of a wrong type), fixed requests that SQLite's
# run sends, and most of its time (283 s against about 120 without). The database-specific
# refusals the fuzz once found (NUL bytes in text, integers past bigint) have fixed tests of their
# own in tests/api. The hostile-payload test has no explicit phase on either database (its
# coverage cases were test_api_fuzz.py's, sent again: tests/fuzz/test_bad_input_fuzz.py).
PG_FUZZ_EXAMPLES=4
# The slowest tests of each run are listed at its end (where CI's time goes).
DURATIONS=(--durations=50)

ignore_each() { local dir; for dir in "$@"; do printf -- '--ignore=%s\n' "$dir"; done; }
if (( $# )); then
  sqlite_args=("$@")
  pg_args=("$@")
else
  mapfile -t sqlite_args < <(ignore_each ${ONCE_ON_POSTGRES[@]+"${ONCE_ON_POSTGRES[@]}"})
  mapfile -t pg_args < <(ignore_each ${ONCE_ON_SQLITE[@]+"${ONCE_ON_SQLITE[@]}"})
  sqlite_args=(tests ${sqlite_args[@]+"${sqlite_args[@]}"})
  pg_args=(tests ${pg_args[@]+"${pg_args[@]}"})
fi

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
  # Without it, the SQLite run takes the groups it would have run once.
  (( $# )) || sqlite_args=(tests)
fi

# The two streams go side by side (each its own Redis database, so neither flushes the other's): most of a run is waiting on sockets, model delays and subprocesses, not on the CPU.
# Each stream's output is kept in a file and printed whole when both have ended.
logs=$(mktemp -d)
sqlite_url="sqlite:///$(mktemp -d)/agno_site.sqlite3"
sqlite_var_dir=$(mktemp -d)
redis_base=$(printf %s "$TEST_REDIS_URL" | sed -E "s#/[0-9]+\$##")
# SQLite on TEST_REDIS_URL's database (15 by default), PostgreSQL on the one below it (14).
redis_db=$(printf %s "$TEST_REDIS_URL" | sed -nE "s#.*/([0-9]+)\$#\1#p"); redis_db=${redis_db:-15}
# A stream's fuzz runs on the test database its suite made and emptied (the suite makes it anew,
# `--create-db`, and keeps it, `--reuse-db`; the fuzz reuses it): making one runs every migration
# (15 to 40 s a database under load) and dropping one on PostgreSQL waits for a checkpoint (up to
# 30 s), each once per stream instead of twice. The suite leaves no rows behind (a transactional
# test's are deleted after it, the others' rolled back), and the next run's suite makes it anew.
# On SQLite the database is a file in VAR_DIR (agno_site/settings/test.py): one folder per stream.
suite() {  # name, DATABASE_URL, Redis database number, pytest arguments...
  local name=$1 url=$2 redis_db=$3 start=$(date +%s); shift 3
  echo "=== suite on $name: pytest $* ==="
  DATABASE_URL="$url" TEST_REDIS_URL="$redis_base/$redis_db" $PY -m pytest --create-db --reuse-db "${DURATIONS[@]}" "$@" || echo "FAILED: suite on $name"
  echo "=== suite on $name took $(( $(date +%s) - start )) s ==="
}
fuzz() {  # name, DATABASE_URL, Redis database number, examples per operation (empty: the defaults)
  local name=$1 url=$2 redis_db=$3 examples=${4:-} start=$(date +%s)
  echo "=== API fuzz on $name ${examples:+($examples examples per operation, no explicit examples)} ==="
  env DATABASE_URL="$url" TEST_REDIS_URL="$redis_base/$redis_db" ${examples:+FUZZ_EXAMPLES=$examples FUZZ_EXPLICIT_EXAMPLES=0} \
    $PY -m pytest --reuse-db "${FUZZ[@]}" || echo "FAILED: API fuzz on $name"
  echo "=== API fuzz on $name took $(( $(date +%s) - start )) s ==="
}
pg_redis_db=$(( redis_db > 0 ? redis_db - 1 : 1 ))
started=$(date +%s)
(
  export VAR_DIR="$sqlite_var_dir"
  suite SQLite "$sqlite_url" "$redis_db" "${sqlite_args[@]}"
  fuzz SQLite "$sqlite_url" "$redis_db"
) > "$logs/SQLite.log" 2>&1 &
sqlite_pid=$!
if $pg_up; then
  {
    suite PostgreSQL "$TEST_DATABASE_URL" "$pg_redis_db" "${pg_args[@]}"
    fuzz PostgreSQL "$TEST_DATABASE_URL" "$pg_redis_db" "$PG_FUZZ_EXAMPLES"
  } > "$logs/PostgreSQL.log" 2>&1 &
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
