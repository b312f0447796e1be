#!/usr/bin/env bash
# Create the throw-away venv that runs sentence-transformers (torch CPU) for bench.embedder_compare
# (outside the repo; the project never installs torch).
#   bash bench/st_reference/setup.sh            # -> /tmp/st-venv
#   ST_VENV=/some/dir bash bench/st_reference/setup.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${ST_VENV:-/tmp/st-venv}"
python="${PYTHON:-python3.11}"
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check)

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
# torch's CPU build first, without its dependencies (the next step resolves them): a local wheel
# (this machine's pip config lists a folder of wheels) else PyTorch's CPU index. Plain `torch` from
# PyPI is the CUDA build, gigabytes this bench does not use.
if ! "$venv/bin/python" -c "import torch, sys; sys.exit(torch.__version__ != '2.13.0+cpu')" 2>/dev/null; then
    "${pip[@]}" --no-deps --no-index "torch==2.13.0+cpu" 2>/dev/null \
        || "${pip[@]}" --no-deps "torch==2.13.0+cpu" --index-url https://download.pytorch.org/whl/cpu
fi
# requirements.lock pins every transitive package as first resolved, so reruns get the same set.
# (The grep drops one warning per package about local index folders in this machine's pip config.)
"${pip[@]}" -r "$here/requirements.txt" -c "$here/requirements.lock" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
"$venv/bin/python" -c "import torch, sentence_transformers; \
print('torch', torch.__version__, 'sentence-transformers', sentence_transformers.__version__, 'in', '$venv')"
