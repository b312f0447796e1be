"""The README's top is the first ten minutes: it names what `make run` serves and what to type to see
each feature, and its curl block works as written against a live server in the development
default (ANONYMOUS_ACCESS=guests) with make run's components (bootstrap's demo agent, agents.demo)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.agents.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
TOP = README[: README.index("\n## Configuration")]


def test_the_top_is_the_first_ten_minutes_not_a_status_report():
    assert "Not built yet" not in README and "Status." not in TOP
    for named in ("operator", "createuser", "demo-docs", "`demo`", "demo-team", "demo-workflow", "demo-planets", "My documents", "My approvals"):
        assert named in TOP, named
    for typed in ("/call add", "/slow", "/fail", "How hot should the water be for green tea?", "/call send_email", "/call issue_refund", "/markdown", "Brief me on background jobs", "/call planet_facts"):
        assert typed in TOP, typed
    # Then links to the rest, each to a heading that exists.
    anchors = set(re.findall(r"\]\(#([a-z0-9-]+)\)", TOP))
    headings = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", README, re.M)}
    assert anchors and anchors <= headings, anchors - headings


def _objects(text: str) -> list[dict]:
    """The JSON bodies curl printed one after another (no newline between them), SSE left out."""
    decoder, found, index = json.JSONDecoder(), [], 0
    while (start := text.find('{"', index)) >= 0:
        try:
            body, index = decoder.raw_decode(text, start)
        except ValueError:
            index = start + 1
            continue
        if "event" not in body:
            found.append(body)
    return found


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_quick_starts_curl_block_works_as_written(live_api, settings, tmp_path, offline_demo):
    from knowledge.models import Content
    from tests.knowledge.conftest import ingest

    settings.ANONYMOUS_ACCESS = "guests"
    settings.AGENT_OS_AUTH_MODE = "none"
    settings.AGENT_MODULES = ["agents.demo"]
    call_command("bootstrap", stdout=open("/dev/null", "w"))
    start = TOP.index("The same over the API")
    block = TOP[TOP.index("```bash\n", start) + 8 : TOP.index("```", TOP.index("```bash\n", start) + 8)]
    block = block.replace("localhost:7777", live_api.removeprefix("http://"))
    before, after = block.split("\nsleep 5\n")

    def run(script: str) -> str:
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return result.stdout

    first = run(before)
    # (The reader's `sleep 5`: the ingestion, run here or by the live server's worker.)
    ingest()
    wait_for(lambda: Content.objects.for_user("ada").filter(name="tea notes", status="completed").exists())  # the guest wrote it as ada
    hello, markdown, upload = _objects(first)
    assert hello["content"].startswith("(offline demo) You said: Hello! My name is Ada.")
    assert '"event":"ToolCallCompleted"' in first and '"result": 42' in first.replace("\\", "")
    assert "```python" in markdown["content"] and "$$" in markdown["content"] and "|---|" in markdown["content"]
    assert upload["name"] == "tea notes"

    docs, email, refund, team, workflow, planets, learner, learnings = _objects(run(after))
    assert docs["status"] == "COMPLETED" and '"tea notes": Green tea is steeped at eighty degrees' in docs["content"]
    assert docs["references"][0]["references"][0]["name"] == "tea notes"
    assert (email["status"], email["tools"][0]["tool_name"]) == ("PAUSED", "send_email")
    assert (refund["status"], refund["tools"][0]["approval_type"]) == ("PAUSED", "required") and refund["tools"][0]["approval_id"]
    assert (team["status"], team["requirements"][0]["member_agent_id"]) == ("PAUSED", "demo-writer")
    assert workflow["status"] == "PAUSED" and [r["step_name"] for r in workflow["step_requirements"]] == ["publish"]
    assert "gather" in {result["step_name"] for result in workflow["step_results"]}
    assert (planets["status"], planets["tools"][0]["result"]) == ("COMPLETED", "Mars: 2 moon(s), a day of 24.7 hours, 1.52 AU from the Sun.")
    assert learner["status"] == "COMPLETED"
    assert [(row["learning_id"], [m["content"] for m in row["content"]["memories"]]) for row in learnings["data"]] == [
        ("memories_ada", ["User's name is Ada"]),
    ]


def test_a_guests_background_run_is_polled_and_resumed_for_the_user_it_names(live_api, settings, offline_demo):
    """The README's background run, as its quick start's guest (user_id=ada): poll it, then resume
    it from an index; the resume read only ownerless runs and said "not found" for ada's."""
    import httpx

    from tests.knowledge.conftest import ingest

    settings.ANONYMOUS_ACCESS = "guests"
    settings.AGENT_OS_AUTH_MODE = "none"
    call_command("bootstrap", stdout=open("/dev/null", "w"))
    accepted = httpx.post(f"{live_api}/agents/demo/runs", data={"message": "hi", "background": "true", "stream": "false", "user_id": "ada"}, timeout=30)
    assert accepted.status_code == 202, accepted.text
    run_id, session_id = accepted.json()["run_id"], accepted.json()["session_id"]
    ingest()  # the live server's worker may take it first: either way it ends
    wait_for(lambda: httpx.get(f"{live_api}/agents/demo/runs/{run_id}", params={"session_id": session_id, "user_id": "ada"}).json()["status"] == "COMPLETED")
    with httpx.stream("POST", f"{live_api}/agents/demo/runs/{run_id}/resume", data={"session_id": session_id, "user_id": "ada", "last_event_index": "0"}, timeout=30) as response:
        frames = "".join(response.iter_text())
    assert "not found" not in frames, frames
    assert re.findall(r"^event: (\w+)", frames, re.M)[-1] == "RunCompleted", frames
    # Another guest name, or none, still finds nothing of ada's.
    for other in ({"user_id": "bea"}, {}):
        with httpx.stream("POST", f"{live_api}/agents/demo/runs/{run_id}/resume", data={"session_id": session_id, **other}, timeout=30) as response:
            assert f"Run {run_id} not found" in "".join(response.iter_text())
