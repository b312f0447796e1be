"""A follow stream whose database fails mid-stream ends with AgentOS's in-band error frame.

The failure is real: the events table is renamed away while the stream is following a queued run
(its next read fails on SQLite and PostgreSQL alike), then put back.
"""
from __future__ import annotations

import threading

import httpx
import pytest
from django.db import connection

from jobs.models import Job
from tests.agents.conftest import wait_for
from tests.api.sse import parse_sse

pytestmark = pytest.mark.django_db(transaction=True)


class Stream(threading.Thread):
    def __init__(self, method: str, url: str, form: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.method, self.url, self.form = method, url, form
        self.raw, self.lock, self.failure = "", threading.Lock(), None

    def run(self) -> None:
        try:
            with httpx.stream(self.method, self.url, data=self.form, timeout=30) as response:
                for chunk in response.iter_text():
                    with self.lock:
                        self.raw += chunk
        except httpx.HTTPError as exc:  # a cut-off response
            self.failure = exc

    def frames(self) -> list[tuple[str, dict]]:
        with self.lock:
            complete = self.raw[: self.raw.rfind("\n\n") + 2] if "\n\n" in self.raw else ""
        return parse_sse(complete)


def _rename(old: str, new: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {old} RENAME TO {new}")


@pytest.mark.parametrize("stream", ["resume", "background submission"])
def test_a_stream_that_loses_its_database_ends_with_the_error_frame(live_api, worker, settings, stream) -> None:
    settings.EMBEDDED_WORKER = False  # the run stays queued: the stream follows it, reading the database
    form = {"message": "wait", "background": "true", "user_id": "alice", "session_id": "s-dberr"}
    if stream == "resume":
        run_id = httpx.post(f"{live_api}/agents/assistant/runs", data={**form, "stream": "false"}, timeout=30).json()["run_id"]
        follower = Stream("POST", f"{live_api}/agents/assistant/runs/{run_id}/resume", {"session_id": "s-dberr"})
        follower.start()
        wait_for(lambda: [name for name, _ in follower.frames()] == ["catch_up", "subscribed"])
    else:
        follower = Stream("POST", f"{live_api}/agents/assistant/runs", {**form, "stream": "true"})
        follower.start()
        run_id = wait_for(lambda: Job.objects.unscoped("test").filter(session_id="s-dberr").values_list("id", flat=True).first())
        wait_for(lambda: follower.raw or follower.is_alive())  # the stream is open and polling
    _rename("agno_run_events", "agno_run_events_away")
    try:
        follower.join(timeout=20)
    finally:
        _rename("agno_run_events_away", "agno_run_events")
    assert not follower.is_alive() and follower.failure is None
    assert follower.raw.endswith("\n\n")
    name, data = follower.frames()[-1]
    assert (name, data["run_id"]) == ("error", run_id)
    assert data["error"].endswith(f"resume run {run_id} later")
    # The server goes on serving, the same stream included, once the database is back.
    again = Stream("POST", f"{live_api}/agents/assistant/runs/{run_id}/resume", {"session_id": "s-dberr"})
    again.start()
    wait_for(lambda: [name for name, _ in again.frames()] == ["catch_up", "subscribed"])
    assert httpx.get(f"{live_api}/agents/assistant/runs/{run_id}", params={"session_id": "s-dberr"}, timeout=10).json()["status"] == "PENDING"
    httpx.post(f"{live_api}/agents/assistant/runs/{run_id}/cancel", timeout=10)  # which ends that stream
    again.join(timeout=20)
    assert not again.is_alive()
