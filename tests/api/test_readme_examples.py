"""The README's human-in-the-loop example, run as a reader would paste it into bash, against a
live server in the development default (ANONYMOUS_ACCESS=guests) with make run's demo agent."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db(transaction=True)

# README, "Human in the loop" (exactly as written there, on the default port).
CONTINUE_EXAMPLE = r"""
# 1. A run that pauses: the demo agent's send_email asks for approval first
curl -s localhost:7777/agents/demo/runs -d stream=false -d user_id=ada \
  --data-urlencode 'message=/call send_email {"to": "bob@example.com", "subject": "Hi"}' > paused.json
RUN=$(python3 -c 'import json; print(json.load(open("paused.json"))["run_id"])')
SESSION=$(python3 -c 'import json; print(json.load(open("paused.json"))["session_id"])')
# 2. Approve it: the paused tools, each with "confirmed": true
TOOLS=$(python3 -c 'import json; print(json.dumps([dict(t, confirmed=True) for t in json.load(open("paused.json"))["tools"] if t["requires_confirmation"]]))')
curl -s localhost:7777/agents/demo/runs/$RUN/continue -d session_id=$SESSION -d user_id=ada -d stream=false \
  --data-urlencode "tools=$TOOLS"
"""


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_continue_example_approves_the_paused_email(live_api, settings, tmp_path, monkeypatch) -> None:
    settings.ANONYMOUS_ACCESS = "guests"
    settings.AGENT_OS_AUTH_MODE = "none"
    # make run without a key: the demo agent on the offline model (a fixture may have set one)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    call_command("bootstrap", stdout=open("/dev/null", "w"))
    script = CONTINUE_EXAMPLE.replace("localhost:7777", live_api.removeprefix("http://"))
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    paused = json.loads((tmp_path / "paused.json").read_text())
    assert paused["status"] == "PAUSED"
    done = json.loads(result.stdout)
    assert (done["run_id"], done["status"]) == (paused["run_id"], "COMPLETED")
    (tool,) = done["tools"]
    assert (tool["tool_name"], tool["confirmed"]) == ("send_email", True)
    assert tool["result"] == "Email to bob@example.com with subject 'Hi' was queued (demo: nothing was sent)."
