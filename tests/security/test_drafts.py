"""Draft versions are not runnable by users (issue 17, item 3): a draft answers 404 as a missing
version does, on every path that takes a version; an admin may run one to test it."""
from __future__ import annotations

import json

import httpx
import pytest

from agents.services.definitions import definition_create, draft_for
from sessions.models import Run
from tests.agents.conftest import wait_for, worker  # noqa: F401 (a fixture: the embedded worker)
from tests.factories import make_session
from tests.security.conftest import auth, snapshot, token

ADMIN = ["agent_os:admin"]

DRAFT_MARK = "DRAFT-ONLY-INSTRUCTIONS-41c2"
RUNNER = ["agents:read", "agents:run", "sessions:read"]


@pytest.fixture
def drafted(db):
    """Agent ``drafty``: version 1 published, version 2 a draft whose instructions carry a marker."""
    definition = definition_create(agent_id="drafty", name="Drafty", model="offline:demo", instructions="Published rules.")
    draft = draft_for(definition)
    draft.instructions = DRAFT_MARK
    draft.save(update_fields=["instructions"])
    return draft.version


@pytest.mark.django_db(transaction=True)
class TestDraftVersions:
    @staticmethod
    def run(client, version, *, caller: str = "alice", scopes: list[str] = RUNNER, **form):
        form = {"message": "hello", "stream": "false", "version": str(version), **form}
        return client.post("/agents/drafty/runs", form, **auth(token(caller, scopes)))

    @pytest.mark.parametrize(("mode", "accepted"), [({"stream": "false"}, 200), ({"stream": "true"}, 200), ({"background": "true"}, 202)])
    def test_a_draft_is_404_as_a_missing_version_for_a_user_and_runs_for_an_admin(self, client, jwt_server, worker, drafted, mode, accepted) -> None:  # noqa: F811
        # (worker: the background runs accepted here are executed, and the worker is stopped after.)
        before = snapshot()
        draft, missing = self.run(client, drafted, **mode), self.run(client, 99, **mode)
        assert (draft.status_code, draft.json()) == (missing.status_code, missing.json()) == (404, {"detail": "Agent not found"})
        assert DRAFT_MARK not in draft.content.decode()
        assert snapshot() == before
        assert self.run(client, 1, **mode).status_code == accepted  # a published version runs
        by_admin = self.run(client, drafted, caller="root", scopes=ADMIN, **mode)
        assert by_admin.status_code == accepted
        if mode == {"stream": "false"}:
            assert DRAFT_MARK in json.dumps(by_admin.json()["messages"])

    def test_only_an_admins_queued_run_runs_a_draft(self, live_api, worker, jwt_server, drafted) -> None:  # noqa: F811
        from jobs.services.jobs import job_submit

        def settled(run_id: str) -> Run:
            wait_for(lambda: Run.objects.unscoped("test").get(pk=run_id).status in ("COMPLETED", "ERROR"))
            return Run.objects.unscoped("test").get(pk=run_id)

        # A job that pins the draft but was not accepted for an admin (queued before this check existed).
        session = make_session("alice", session_id="queued-sess")
        queued = job_submit(
            owner_id="alice", session=session, session_id=session.pk, component_id="drafty",
            payload={"message": "hi", "stream": False, "version": drafted}, input={"input_content": "hi"}, stream=False,
        )
        worker().start()
        run = settled(queued.job.pk)
        assert run.status == "ERROR" and DRAFT_MARK not in json.dumps(run.run_data)

        response = httpx.post(f"{live_api}/agents/drafty/runs", data={"message": "hi", "background": "true", "stream": "false", "version": str(drafted)},
                              headers={"Authorization": f"Bearer {token('root', ADMIN)}"}, timeout=30)
        assert response.status_code == 202
        run = settled(response.json()["run_id"])
        assert run.status == "COMPLETED" and DRAFT_MARK in json.dumps(run.run_data["messages"])
