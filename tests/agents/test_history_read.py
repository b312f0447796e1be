"""A run reads its session's history only when the session has had another run."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.pipeline.runs import RunRequest, component_entry, prepare_for_owner
from sessions.models import Run, RunStatus, Session
from tests.factories import make_run, make_session

pytestmark = pytest.mark.django_db


def prepare(session: Session, stored: Run | None = None):
    with CaptureQueriesContext(connection) as captured:
        prepared = prepare_for_owner(
            entry=component_entry("assistant", kind="agent"), owner_id="alice", session=session, session_id=session.pk,
            request=RunRequest(message="hi"), stored=stored,
        )
    reads = [q["sql"] for q in captured.captured_queries if "agno_runs" in q["sql"]]
    return prepared, reads


def test_the_first_run_of_a_session_reads_no_history() -> None:
    session = make_session("alice", component_id="assistant")
    _, reads = prepare(session)  # an inline run: not indexed yet
    assert reads == []
    own = make_run("alice", session=session, status=RunStatus.PENDING)  # a background run: indexed
    session.refresh_from_db()
    _, reads = prepare(session, stored=own)
    assert reads == []


def test_a_later_run_reads_the_earlier_ones() -> None:
    session = make_session("alice", component_id="assistant")
    make_run("alice", session=session, status=RunStatus.COMPLETED, run_data={"content": "earlier", "messages": []})
    session.refresh_from_db()
    prepared, reads = prepare(session)
    assert len(reads) == 1
    assert [run["content"] for run in prepared.ctx.history] == ["earlier"]
