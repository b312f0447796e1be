"""The runtime is importable without Django and without importing the provider SDKs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )


def test_importing_the_runtime_imports_no_sdk_and_no_django():
    result = run_python(
        "import json, sys\n"
        "import engine, engine.models.openai, engine.models.anthropic\n"
        "from engine import get_model\n"
        "get_model('openai:gpt-4o-mini'); get_model('anthropic:claude-sonnet-4-5')\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'openai', 'anthropic', 'django', 'httpx2', 'pydantic'})))\n"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_runtime_runs_with_django_unavailable():
    # A None entry in sys.modules makes any `import django` fail, as if it were not installed.
    result = run_python(
        "import sys\n"
        "sys.modules['django'] = None\n"
        "from engine import Agent, RunContext\n"
        "out = Agent(id='a').run('hello', RunContext(run_id='r', session_id='s'))\n"
        "print(out['status'])\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "COMPLETED"
