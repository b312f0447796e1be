#!/usr/bin/env bash
# Create the throw-away venv that runs AgentOS 3.1.10 for bench.compare (outside the repo).
#   bash bench/agentos_reference/setup.sh            # -> /tmp/agentos-bench-venv
#   BENCH_VENV=/some/dir bash bench/agentos_reference/setup.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${BENCH_VENV:-/tmp/agentos-bench-venv}"
python="${PYTHON:-python3.11}"

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
# requirements.lock pins every transitive package as first resolved, so reruns get the same set.
# (The grep drops one warning per package about local index folders in this machine's pip config.)
"$venv/bin/pip" install --quiet --disable-pip-version-check \
    -r "$here/requirements.txt" -c "$here/requirements.lock" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
"$venv/bin/python" -c "import agno.os, uvicorn, openai; from importlib.metadata import version as v; \
print('agno', v('agno'), 'uvicorn', v('uvicorn'), 'in', '$venv')"
