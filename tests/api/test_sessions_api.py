"""The /sessions family over HTTP: exact bodies, status codes, null handling, scoping, query counts.

``client`` is an open server's caller (AgentOS without auth: every user's rows, ``user_id``
honoured as a filter); ``alice``/``bob`` are logged-in browser users, bound to their own rows
(user isolation).
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from sessions.models import Run, RunEvent, Session
from sessions.services import run_events_append
from sessions.services.runs import RunRecord, run_finish, run_record
from tests.factories import make_run, make_session

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 30, 9, 42, 53, tzinfo=timezone.utc)
ISO_T0 = "2026-11-30T09:42:53Z"
MODEL = {"id": "gpt-4o", "name": "OpenAIChat", "provider": "OpenAI"}
SESSION_ITEM_KEYS = {
    "session_id", "session_name", "session_state", "created_at", "updated_at", "session_type", "user_id",
    "agent_id", "team_id", "workflow_id", "session_summary", "metrics", "total_tokens", "metadata",
    "origin",  # ours: where the session came from (the chat lists chat and API sessions only)
}
# Ours, beside AgentOS's keys in every run body: where the run came from, its place in the branches.
OURS = {"origin": "api", "branch_active": True}
AGENT_DETAIL_KEYS = [
    "user_id", "agent_session_id", "session_id", "session_name", "session_summary", "session_state", "agent_id",
    "total_tokens", "agent_data", "metrics", "metadata", "chat_history", "created_at", "updated_at",
]
TEAM_DETAIL_KEYS = [
    "session_id", "session_name", "user_id", "team_id", "session_summary", "session_state", "metrics", "team_data",
    "metadata", "chat_history", "created_at", "updated_at", "total_tokens",
]
WORKFLOW_DETAIL_KEYS = [
    "user_id", "workflow_id", "workflow_name", "session_id", "session_name", "session_data", "session_state",
    "workflow_data", "metadata", "created_at", "updated_at",
]
NO_MEDIA = {"images": [], "videos": [], "audios": [], "files": []}


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")



def stamp(session: Session, *, created: datetime = T0, updated: datetime | None = None, **fields: Any) -> Session:
    """Pin a session's timestamps (and other columns) so whole bodies can be asserted."""
    Session.all_users.filter(pk=session.pk).update(created_at=created, updated_at=updated or created, **fields)
    return Session.all_users.get(pk=session.pk)


def agent_session(user_id: str = "alice", session_id: str = "s-agent") -> Session:
    """An agent session with one finished run whose messages include every kind of message."""
    session = make_session(
        user_id,
        session_id=session_id,
        component_id="assistant",
        session_state={"cart": ["tea"]},
        metadata={"channel": "web"},
        component_data={"name": "Assistant", "model": MODEL},
    )
    make_run(
        user_id,
        session=session,
        run_id=f"{session_id}-r1",
        status="COMPLETED",
        input={"input_content": "What tools do you have?"},
        created_at=T0 + timedelta(seconds=1),
        run_data={
            "content": "I can add numbers.",
            "content_type": "str",
            "metrics": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
            "messages": [
                {"role": "system", "content": "Be brief.", "created_at": 1},
                {"role": "user", "content": "Earlier question", "from_history": True, "created_at": 1},
                {"role": "user", "content": "What tools do you have?", "created_at": 2},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function"}], "created_at": 2},
                {"role": "tool", "content": "3", "tool_call_id": "c1", "created_at": 2},
                {"role": "assistant", "content": "I can add numbers.", "created_at": 3},
            ],
        },
    )
    return stamp(
        session,
        updated=T0 + timedelta(seconds=5),
        metrics={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        total_tokens=15,
        summary={"summary": "Tools talk", "topics": ["tools"]},
    )


def streamed(run: Run) -> list[dict[str, Any]]:
    """Store a streamed run's events; return the ones AgentOS keeps (no per-token RunContent)."""
    events = [
        {"event": "RunStarted", "run_id": run.pk, "created_at": 1},
        {"event": "RunContent", "run_id": run.pk, "content": "I can ", "created_at": 1},
        {"event": "ToolCallStarted", "run_id": run.pk, "tool": {"tool_name": "add"}, "created_at": 2},
        {"event": "RunContent", "run_id": run.pk, "content": "add.", "created_at": 2},
        {"event": "RunCompleted", "run_id": run.pk, "content": "I can add.", "created_at": 3},
    ]
    run_events_append(run=run, events=events)
    return [event for event in events if event["event"] != "RunContent"]


CHAT_HISTORY = [
    {"role": "user", "content": "What tools do you have?", "created_at": 2},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function"}], "created_at": 2},
    {"role": "assistant", "content": "I can add numbers.", "created_at": 3},
]


# --- GET /sessions ------------------------------------------------------------------------------

class TestListSessions:
    def test_lists_sessions_in_the_session_schema_without_nulls(self, client: Client) -> None:
        agent_session()
        bare = stamp(make_session("bob", session_id="s-bare", component_id=""), created=T0 - timedelta(hours=1))

        response = client.get("/sessions")

        assert response.status_code == 200
        assert response.json() == {
            "data": [
                {
                    "session_id": "s-agent",
                    "session_name": "What tools do you have?",
                    "session_state": {"cart": ["tea"]},
                    "created_at": ISO_T0,
                    "updated_at": "2026-11-30T09:42:58Z",
                    "session_type": "agent",
                    "user_id": "alice",
                    "agent_id": "assistant",
                    "session_summary": {"summary": "Tools talk", "topics": ["tools"]},
                    "metrics": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
                    "total_tokens": 15,
                    "metadata": {"channel": "web"},
                    "origin": "api",
                },
                {
                    "session_id": "s-bare",
                    "session_name": "",
                    "session_state": {},
                    "created_at": iso(bare.created_at),
                    "updated_at": iso(bare.created_at),
                    "session_type": "agent",
                    "user_id": "bob",
                    "origin": "api",
                },
            ],
            "meta": {"page": 1, "limit": 20, "total_pages": 1, "total_count": 2, "search_time_ms": 0.0},
        }

    def test_every_item_key_is_a_session_schema_field(self, client: Client) -> None:
        agent_session()
        make_session("bob", session_id="t", session_type="team", component_id="crew")
        for item in client.get("/sessions").json()["data"]:
            assert set(item) <= SESSION_ITEM_KEYS
            assert {"session_id", "session_name"} <= set(item)

    def test_a_team_session_carries_its_team_id_only(self, client: Client) -> None:
        stamp(make_session("alice", session_id="t1", session_type="team", component_id="crew"))
        stamp(make_session("alice", session_id="w1", session_type="workflow", component_id="flow"), created=T0 - timedelta(seconds=1))
        items = client.get("/sessions").json()["data"]
        assert [(i["session_id"], i.get("agent_id"), i.get("team_id"), i.get("workflow_id")) for i in items] == [
            ("t1", None, "crew", None),
            ("w1", None, None, "flow"),
        ]

    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            ("type=team", ["team-1"]),
            ("type=agent", ["agent-2", "agent-1"]),
            ("component_id=helper", ["agent-2"]),
            ("user_id=bob", ["team-1"]),
            ("session_name=ORDER", ["agent-2", "agent-1"]),
            ("session_name=second", ["agent-2"]),
            ("type=agent&user_id=alice&component_id=helper", ["agent-2"]),
        ],
    )
    def test_filters(self, client: Client, query: str, expected: list[str]) -> None:
        stamp(make_session("alice", session_id="agent-1", component_id="assistant", session_name="First order"), created=T0)
        stamp(make_session("alice", session_id="agent-2", component_id="helper", session_name="Second ORDER"), created=T0 + timedelta(seconds=1))
        stamp(make_session("bob", session_id="team-1", session_type="team", component_id="crew", session_name="Crew"), created=T0 - timedelta(seconds=1))
        body = client.get(f"/sessions?{query}").json()
        assert [item["session_id"] for item in body["data"]] == expected
        assert body["meta"]["total_count"] == len(expected)

    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            ("", ["c", "b", "a"]),
            ("sort_order=asc", ["a", "b", "c"]),
            ("sort_by=updated_at&sort_order=desc", ["a", "c", "b"]),
            ("sort_by=session_name&sort_order=asc", ["b", "c", "a"]),
            ("sort_by=no_such_column", ["c", "b", "a"]),
        ],
    )
    def test_sorting_with_unknown_columns_falling_back_to_created_at(self, client: Client, query: str, expected: list[str]) -> None:
        stamp(make_session("alice", session_id="a", session_name="zeta"), created=T0, updated=T0 + timedelta(hours=3))
        stamp(make_session("alice", session_id="b", session_name="alpha"), created=T0 + timedelta(seconds=1), updated=T0 + timedelta(hours=1))
        stamp(make_session("alice", session_id="c", session_name="mid"), created=T0 + timedelta(seconds=2), updated=T0 + timedelta(hours=2))
        assert [item["session_id"] for item in client.get(f"/sessions?{query}").json()["data"]] == expected

    def test_pages_past_the_end_are_empty_and_echo_the_page(self, client: Client) -> None:
        for index in range(3):
            stamp(make_session("alice", session_id=f"s{index}"), created=T0 + timedelta(seconds=index))
        assert client.get("/sessions?limit=2&page=2").json() == {
            "data": [client.get("/sessions?limit=1&page=3").json()["data"][0]],
            "meta": {"page": 2, "limit": 2, "total_pages": 2, "total_count": 3, "search_time_ms": 0.0},
        }
        assert client.get("/sessions?limit=2&page=999").json() == {
            "data": [],
            "meta": {"page": 999, "limit": 2, "total_pages": 2, "total_count": 3, "search_time_ms": 0.0},
        }

    def test_a_huge_page_is_empty_not_an_error(self, client: Client) -> None:
        make_session("alice")
        body = client.get(f"/sessions?limit=5000&page={10**30}").json()
        assert (body["data"], body["meta"]["total_count"]) == ([], 1)

    @pytest.mark.parametrize(
        ("query", "error"),
        [
            ("page=0&limit=5", {"type": "greater_than_equal", "loc": ["query", "page"], "msg": "Input should be greater than or equal to 1", "input": "0", "ctx": {"ge": 1}}),
            ("limit=0", {"type": "greater_than_equal", "loc": ["query", "limit"], "msg": "Input should be greater than or equal to 1", "input": "0", "ctx": {"ge": 1}}),
            ("limit=ten", {"type": "int_parsing", "loc": ["query", "limit"], "msg": "Input should be a valid integer, unable to parse string as an integer", "input": "ten"}),
            ("sort_order=down", {"type": "enum", "loc": ["query", "sort_order"], "msg": "Input should be 'asc' or 'desc'", "input": "down", "ctx": {"expected": "'asc' or 'desc'"}}),
            ("type=robot", {"type": "enum", "loc": ["query", "type"], "msg": "Input should be 'agent' or 'team' or 'workflow'", "input": "robot", "ctx": {"expected": "'agent' or 'team' or 'workflow'"}}),
        ],
    )
    def test_invalid_query_params_are_422_in_fastapi_shape(self, client: Client, query: str, error: dict[str, Any]) -> None:
        response = client.get(f"/sessions?{query}")
        assert response.status_code == 422
        assert response.json() == {"detail": [error]}

    @pytest.mark.parametrize("per_page", [1, 50])
    def test_runs_two_queries_whatever_the_page_size(self, client: Client, per_page: int) -> None:
        for index in range(60):
            make_session("alice" if index % 2 else "bob", session_id=f"s{index:02}", component_data={"name": "A"})
        with CaptureQueriesContext(connection) as queries:
            body = client.get(f"/sessions?limit={per_page}&page=1").json()
        assert len(body["data"]) == per_page
        assert len(queries.captured_queries) == 2

    def test_isolated_users_see_only_their_own_sessions_whatever_user_id_they_ask_for(self, alice: Client, bob: Client) -> None:
        make_session("alice", session_id="mine")
        make_session("bob", session_id="theirs")
        assert [item["session_id"] for item in alice.get("/sessions?user_id=bob").json()["data"]] == ["mine"]
        assert [item["session_id"] for item in bob.get("/sessions").json()["data"]] == ["theirs"]

    def test_trailing_slash_is_tolerated(self, client: Client) -> None:
        make_session("alice", session_id="s1")
        assert client.get("/sessions/").json() == client.get("/sessions").json()

    def test_unknown_db_id_is_404_and_table_without_db_id_is_400(self, client: Client) -> None:
        assert (client.get("/sessions?db_id=nope").status_code, client.get("/sessions?db_id=nope").json()) == (
            404,
            {"detail": "No database found with id 'nope'"},
        )
        response = client.get("/sessions?table=agno_sessions")
        assert (response.status_code, response.json()) == (400, {"detail": "The db_id query parameter is required when passing a table"})
        assert client.get("/sessions?db_id=agno-site-db&table=agno_sessions").status_code == 200


# --- POST /sessions ------------------------------------------------------------------------------

class TestCreateSession:
    def test_creates_an_agent_session_and_answers_201_without_nulls(self, client: Client) -> None:
        response = client.post(
            "/sessions",
            {
                "session_id": "new-1",
                "session_name": "Planning",
                "session_state": {"step": 1},
                "metadata": {"k": "v"},
                "user_id": "alice",
                "agent_id": "assistant",
                "team_id": None,
                "workflow_id": None,
            },
            content_type="application/json",
        )
        assert response.status_code == 201
        session = Session.all_users.get(pk="new-1")
        assert response.json() == {
            "user_id": "alice",
            "agent_session_id": "new-1",
            "session_id": "new-1",
            "session_name": "Planning",
            "session_state": {"step": 1},
            "agent_id": "assistant",
            "metrics": {},  # AgentOS's agent detail carries an empty one rather than none
            "metadata": {"k": "v"},
            "chat_history": [],
            "created_at": iso(session.created_at),
            "updated_at": iso(session.updated_at),
        }
        assert (session.user_id, session.session_type, session.component_id) == ("alice", "agent", "assistant")

    def test_the_clients_explicit_nulls_mean_absent_and_an_id_is_minted(self, client: Client) -> None:
        keys = ["session_id", "session_name", "session_state", "metadata", "user_id", "agent_id", "team_id", "workflow_id"]
        response = client.post("/sessions?type=team", dict.fromkeys(keys), content_type="application/json")
        assert response.status_code == 201
        body = response.json()
        session = Session.all_users.get(pk=body["session_id"])
        assert body == {
            "session_id": session.session_id,
            "session_name": "",
            "session_state": {},
            "chat_history": [],
            "created_at": iso(session.created_at),
            "updated_at": iso(session.updated_at),
        }
        assert (session.session_type, session.user_id, len(session.session_id)) == ("team", None, 36)

    def test_an_empty_body_is_allowed(self, client: Client) -> None:
        response = client.generic("POST", "/sessions?type=workflow")
        assert response.status_code == 201
        assert set(response.json()) == {"session_id", "session_name", "session_data", "session_state", "created_at", "updated_at"}

    @pytest.mark.parametrize(("session_type", "id_key"), [("agent", "agent_id"), ("team", "team_id"), ("workflow", "workflow_id")])
    def test_the_component_id_is_the_one_of_the_sessions_type(self, client: Client, session_type: str, id_key: str) -> None:
        body = {"agent_id": "a", "team_id": "t", "workflow_id": "w"}
        created = client.post(f"/sessions?type={session_type}", body, content_type="application/json").json()
        assert created[id_key] == body[id_key]
        assert Session.all_users.get(pk=created["session_id"]).component_id == body[id_key]

    def test_reserved_run_metadata_keys_are_stripped(self, client: Client) -> None:
        created = client.post(
            "/sessions",
            {"session_id": "m", "metadata": {"agno_dispatch_depth": 9, "agno_component_version": 1, "team": "x"}},
            content_type="application/json",
        ).json()
        assert created["metadata"] == {"team": "x"}

    def test_an_existing_id_is_409_pointing_at_patch(self, client: Client) -> None:
        make_session("alice", session_id="dup")
        response = client.post("/sessions", {"session_id": "dup"}, content_type="application/json")
        assert (response.status_code, response.json()) == (
            409,
            {"detail": "Session with id 'dup' already exists. Use PATCH /sessions/dup to update it."},
        )

    def test_an_id_taken_by_another_user_answers_as_the_callers_own_taken_id(self, bob: Client) -> None:
        # Ids are unique across users, so a taken id is never created; the answer must not tell
        # whose session holds it: another user's id answers as bob's own would.
        make_session("alice", session_id="alices")
        make_session("bob", session_id="bobs")
        theirs = bob.post("/sessions", {"session_id": "alices"}, content_type="application/json")
        own = bob.post("/sessions", {"session_id": "bobs"}, content_type="application/json")
        assert (theirs.status_code, theirs.json()) == (
            409,
            {"detail": "Session with id 'alices' already exists. Use PATCH /sessions/alices to update it."},
        )
        assert (own.status_code, own.json()["detail"].replace("bobs", "alices")) == (409, theirs.json()["detail"])
        assert dict(theirs.headers).keys() == dict(own.headers).keys()
        assert Session.all_users.get(pk="alices").user_id == "alice"

    def test_an_isolated_caller_always_owns_what_they_create(self, alice: Client) -> None:
        created = alice.post("/sessions", {"session_id": "x", "user_id": "bob"}, content_type="application/json").json()
        assert created["user_id"] == "alice"
        assert Session.all_users.get(pk="x").user_id == "alice"

    @pytest.mark.parametrize(
        ("body", "error"),
        [
            ({"session_state": [1, 2]}, {"type": "not_a_dict", "loc": ["body", "session_state"], "msg": 'Expected a dictionary of items but got type "list".', "input": None}),
            ({"metadata": "x"}, {"type": "not_a_dict", "loc": ["body", "metadata"], "msg": 'Expected a dictionary of items but got type "str".', "input": None}),
            ({"session_name": {"a": 1}}, {"type": "invalid", "loc": ["body", "session_name"], "msg": "Not a valid string.", "input": None}),
        ],
    )
    def test_wrongly_typed_fields_are_422(self, client: Client, body: dict[str, Any], error: dict[str, Any]) -> None:
        response = client.post("/sessions", body, content_type="application/json")
        assert (response.status_code, response.json()) == (422, {"detail": [error]})

    def test_a_body_that_is_not_an_object_is_422(self, client: Client) -> None:
        response = client.post("/sessions", [1], content_type="application/json")
        assert response.status_code == 422
        assert response.json()["detail"][0]["loc"] == ["body"]

    def test_invalid_json_is_422(self, client: Client) -> None:
        response = client.post("/sessions", "{nope", content_type="application/json")
        assert response.status_code == 422
        assert response.json()["detail"][0]["type"] == "json_invalid"

    def test_an_invalid_type_is_422(self, client: Client) -> None:
        assert client.post("/sessions?type=robot", {}, content_type="application/json").status_code == 422


# --- GET /sessions/{id} --------------------------------------------------------------------------

class TestGetSession:
    def test_agent_detail_has_the_chat_history_of_user_and_assistant_messages(self, client: Client) -> None:
        agent_session()
        response = client.get("/sessions/s-agent")
        assert response.status_code == 200
        body = response.json()
        assert body == {
            "user_id": "alice",
            "agent_session_id": "s-agent",
            "session_id": "s-agent",
            "session_name": "What tools do you have?",
            "session_summary": {"summary": "Tools talk", "topics": ["tools"]},
            "session_state": {"cart": ["tea"]},
            "agent_id": "assistant",
            "total_tokens": 15,
            "agent_data": {"name": "Assistant", "agent_id": "assistant", "model": MODEL},
            "metrics": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
            "metadata": {"channel": "web"},
            "chat_history": CHAT_HISTORY,
            "created_at": ISO_T0,
            "updated_at": "2026-11-30T09:42:58Z",
        }
        assert list(body) == AGENT_DETAIL_KEYS

    def test_chat_history_leaves_out_team_members_runs(self, client: Client) -> None:
        session = make_session("alice", session_id="team", session_type="team", component_id="crew")
        leader = make_run("alice", session=session, run_id="lead", run_type="team", component_id="crew",
                          run_data={"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": "done"}]})
        make_run("alice", session=session, run_id="member", run_type="agent", component_id="researcher", parent_run_id=leader.run_id,
                 run_data={"messages": [{"role": "user", "content": "research"}, {"role": "assistant", "content": "found"}]})
        assert client.get("/sessions/team").json()["chat_history"] == [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "done"},
        ]

    def test_type_shapes_the_body_and_ids_follow_the_stored_type(self, client: Client) -> None:
        agent_session()
        team_shaped = client.get("/sessions/s-agent?type=team").json()
        assert list(team_shaped) == [key for key in TEAM_DETAIL_KEYS if key not in ("team_id", "team_data")]
        assert team_shaped["chat_history"] == CHAT_HISTORY
        workflow_shaped = client.get("/sessions/s-agent?type=workflow").json()
        assert workflow_shaped == {
            "user_id": "alice",
            "session_id": "s-agent",
            "session_name": "What tools do you have?",
            "session_data": {
                "session_name": "What tools do you have?",
                "session_state": {"cart": ["tea"]},
                "session_metrics": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
            },
            "session_state": {"cart": ["tea"]},
            "metadata": {"channel": "web"},
            "created_at": ISO_T0,
            "updated_at": "2026-11-30T09:42:58Z",
        }

    def test_team_detail(self, client: Client) -> None:
        stamp(make_session("bob", session_id="t", session_type="team", component_id="crew", component_data={"name": "Crew", "model": MODEL}))
        assert client.get("/sessions/t").json() == {
            "session_id": "t",
            "session_name": "",
            "user_id": "bob",
            "team_id": "crew",
            "session_state": {},
            "team_data": {"name": "Crew", "team_id": "crew", "model": MODEL},
            "chat_history": [],
            "created_at": ISO_T0,
            "updated_at": ISO_T0,
        }

    def test_workflow_detail(self, client: Client) -> None:
        steps = [{"name": "draft", "description": "Draft it", "type": "Step"}]
        stamp(make_session("bob", session_id="w", session_type="workflow", component_id="flow", component_data={"name": "Flow", "steps": steps}))
        with CaptureQueriesContext(connection) as queries:
            body = client.get("/sessions/w").json()
        assert body == {
            "user_id": "bob",
            "workflow_id": "flow",
            "workflow_name": "Flow",
            "session_id": "w",
            "session_name": "",
            "session_data": {"session_state": {}},
            "session_state": {},
            "workflow_data": {"name": "Flow", "workflow_id": "flow", "steps": steps},
            "created_at": ISO_T0,
            "updated_at": ISO_T0,
        }
        assert list(body) == [key for key in WORKFLOW_DETAIL_KEYS if key != "metadata"]
        assert len(queries.captured_queries) == 1  # a workflow detail has no chat history to read

    def test_an_external_agents_sdk_label_shows_in_metadata(self, client: Client) -> None:
        make_session("alice", session_id="ext", component_id="a", metadata={"k": 1}, component_data={"name": "Ext", "sdk": "langgraph"})
        assert client.get("/sessions/ext").json()["metadata"] == {"k": 1, "sdk": "langgraph"}

    def test_reads_the_session_and_its_history_in_two_queries(self, client: Client) -> None:
        session = agent_session()
        for index in range(5):
            make_run("alice", session=session, run_data={"messages": [{"role": "user", "content": str(index)}]})
        with CaptureQueriesContext(connection) as queries:
            body = client.get("/sessions/s-agent").json()
        assert len(body["chat_history"]) == 8
        assert len(queries.captured_queries) == 2

    def test_missing_session_is_404(self, client: Client) -> None:
        response = client.get("/sessions/nope")
        assert (response.status_code, response.json()) == (404, {"detail": "Session with id 'nope' not found"})
        response = client.get("/sessions/nope?type=team")
        assert (response.status_code, response.json()) == (404, {"detail": "Team Session with id 'nope' not found"})

    def test_outsider_gets_404(self, bob: Client) -> None:
        agent_session("alice")
        response = bob.get("/sessions/s-agent")
        assert (response.status_code, response.json()) == (404, {"detail": "Session with id 's-agent' not found"})

    def test_open_caller_filtering_on_another_user_gets_404(self, client: Client) -> None:
        agent_session("alice")
        assert client.get("/sessions/s-agent?user_id=bob").status_code == 404
        assert client.get("/sessions/s-agent?user_id=alice").status_code == 200


# --- PATCH /sessions/{id} and POST /sessions/{id}/rename -------------------------------------------

def usage(**models: tuple[str, str, int, int]) -> dict[str, Any]:
    """A run's metrics as the runtime writes them: ``model_type=(provider, id, input, output)``."""
    details = {kind: [{"input_tokens": i, "output_tokens": o, "total_tokens": i + o, "id": model, "provider": provider}]
               for kind, (provider, model, i, o) in models.items()}
    entries = [entry for kind in details.values() for entry in kind]
    tokens = {name: sum(entry[name] for entry in entries) for name in ("input_tokens", "output_tokens", "total_tokens")}
    return {**tokens, "duration": 0.5, "details": details}


def record(session_id: str, run_id: str, metrics: dict[str, Any], *, new: bool = False, status: str = "COMPLETED") -> Run:
    return run_record(RunRecord(session_id=session_id, owner_id="alice", component_id="assistant", run_id=run_id,
                                status=status, input={"input_content": "hi"}, output={"content": "ok", "metrics": metrics}), create_session=new)


class TestSessionMetrics:
    """A session's metrics are Agno's SessionMetrics: its runs' tokens added up, per model too."""

    def test_the_detail_and_the_list_add_up_every_runs_tokens_per_model(self, client: Client) -> None:
        record("s-m", "r1", usage(model=("OpenAI", "gpt-4o", 10, 5), memory_model=("OpenAI", "gpt-4o-mini", 3, 1)), new=True)
        record("s-m", "r2", usage(model=("OpenAI", "gpt-4o", 20, 7)))
        record("s-m", "r3", usage(model=("Anthropic", "claude-sonnet-4-5", 1, 1)))
        metrics = {
            "input_tokens": 34,
            "output_tokens": 14,
            "total_tokens": 48,
            "details": {
                "model": [
                    {"input_tokens": 30, "output_tokens": 12, "total_tokens": 42, "id": "gpt-4o", "provider": "OpenAI"},
                    {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "id": "claude-sonnet-4-5", "provider": "Anthropic"},
                ],
                "memory_model": [{"input_tokens": 3, "output_tokens": 1, "total_tokens": 4, "id": "gpt-4o-mini", "provider": "OpenAI"}],
            },
        }
        detail = client.get("/sessions/s-m").json()
        assert (detail["metrics"], detail["total_tokens"]) == (metrics, 48)
        (listed,) = client.get("/sessions").json()["data"]
        assert (listed["metrics"], listed["total_tokens"]) == (metrics, 48)

    def test_a_continued_run_adds_only_what_it_used_since(self, client: Client) -> None:
        paused = record("s-c", "r1", usage(model=("OpenAI", "gpt-4o", 10, 5)), new=True, status="PAUSED")
        run_finish(paused, RunRecord(run_id="r1", session_id="s-c", owner_id="alice", component_id="assistant", status="COMPLETED",
                                     output={"content": "done", "metrics": usage(model=("OpenAI", "gpt-4o", 25, 9))}))
        assert client.get("/sessions/s-c").json()["metrics"] == {
            "input_tokens": 25, "output_tokens": 9, "total_tokens": 34,
            "details": {"model": [{"input_tokens": 25, "output_tokens": 9, "total_tokens": 34, "id": "gpt-4o", "provider": "OpenAI"}]},
        }

    def test_recording_a_run_costs_the_same_whatever_the_sessions_length(self) -> None:
        record("s-f", "r0", usage(model=("OpenAI", "gpt-4o", 1, 1)), new=True)
        with CaptureQueriesContext(connection) as early:
            record("s-f", "r1", usage(model=("OpenAI", "gpt-4o", 1, 1)))
        for index in range(2, 32):
            record("s-f", f"r{index}", usage(model=("OpenAI", "gpt-4o", 1, 1)))
        with CaptureQueriesContext(connection) as late:
            record("s-f", "r-last", usage(model=("OpenAI", "gpt-4o", 1, 1)))
        statements = [q["sql"].split()[:3] for q in late.captured_queries]
        assert statements == [q["sql"].split()[:3] for q in early.captured_queries]
        assert ["SELECT"] not in [statement[:1] for statement in statements], statements
        assert Session.all_users.get(pk="s-f").metrics["details"]["model"][0]["total_tokens"] == 66


class TestUpdateSession:
    def test_updates_the_given_fields_and_answers_with_explicit_nulls(self, client: Client) -> None:
        stamp(make_session("alice", session_id="s", component_id="assistant", metadata={"old": True}))
        response = client.patch(
            "/sessions/s",
            {
                "session_name": "Renamed",
                "session_state": {"step": 2},
                "metadata": {"new": True},
                "summary": {"summary": "We planned.", "topics": ["plans"], "updated_at": "2026-11-30T10:00:00Z"},
            },
            content_type="application/json",
        )
        assert response.status_code == 200
        session = Session.all_users.get(pk="s")
        assert response.json() == {
            "user_id": "alice",
            "agent_session_id": "s",
            "session_id": "s",
            "session_name": "Renamed",
            "session_summary": {"summary": "We planned.", "topics": ["plans"], "updated_at": "2026-11-30T10:00:00+00:00"},
            "session_state": {"step": 2},
            "agent_id": "assistant",
            "total_tokens": None,
            "agent_data": None,
            "metrics": {},
            "metadata": {"new": True},
            "chat_history": [],
            "created_at": ISO_T0,
            "updated_at": iso(session.updated_at),
        }
        assert session.updated_at > T0

    def test_fields_left_out_or_null_are_kept(self, client: Client) -> None:
        make_session("alice", session_id="s", session_name="Keep", session_state={"a": 1}, metadata={"m": 1})
        body = client.patch("/sessions/s", {"session_state": None}, content_type="application/json").json()
        assert (body["session_name"], body["session_state"], body["metadata"]) == ("Keep", {"a": 1}, {"m": 1})

    def test_type_shapes_the_answer(self, client: Client) -> None:
        make_session("alice", session_id="s", session_type="team", component_id="crew")
        assert list(client.patch("/sessions/s?type=team", {}, content_type="application/json").json()) == TEAM_DETAIL_KEYS
        assert list(client.patch("/sessions/s?type=workflow", {}, content_type="application/json").json()) == WORKFLOW_DETAIL_KEYS
        assert list(client.patch("/sessions/s", {}, content_type="application/json").json()) == TEAM_DETAIL_KEYS

    def test_a_summary_without_text_is_422(self, client: Client) -> None:
        make_session("alice", session_id="s")
        response = client.patch("/sessions/s", {"summary": {"topics": ["x"]}}, content_type="application/json")
        assert (response.status_code, response.json()) == (
            422,
            {"detail": [{"type": "missing", "loc": ["body", "summary", "summary"], "msg": "Field required", "input": None}]},
        )

    def test_a_missing_body_is_422(self, client: Client) -> None:
        make_session("alice", session_id="s")
        response = client.generic("PATCH", "/sessions/s")
        assert (response.status_code, response.json()) == (
            422,
            {"detail": [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]},
        )

    def test_unknown_session_is_404(self, client: Client) -> None:
        response = client.patch("/sessions/nope", {"session_name": "x"}, content_type="application/json")
        assert (response.status_code, response.json()) == (404, {"detail": "Session with id 'nope' not found"})

    def test_outsider_gets_404_and_changes_nothing(self, bob: Client) -> None:
        make_session("alice", session_id="s", session_name="Alice's")
        response = bob.patch("/sessions/s", {"session_name": "Bob's now"}, content_type="application/json")
        assert response.status_code == 404
        assert Session.all_users.get(pk="s").session_name == "Alice's"


class TestRenameSession:
    def test_renames_and_answers_with_explicit_nulls(self, client: Client) -> None:
        agent_session()
        response = client.post("/sessions/s-agent/rename", {"session_name": "Tools"}, content_type="application/json")
        assert response.status_code == 200
        body = response.json()
        assert list(body) == AGENT_DETAIL_KEYS
        assert (body["session_name"], body["chat_history"]) == ("Tools", CHAT_HISTORY)
        assert Session.all_users.get(pk="s-agent").session_name == "Tools"

    def test_an_empty_name_is_allowed(self, client: Client) -> None:
        make_session("alice", session_id="s", session_name="x")
        assert client.post("/sessions/s/rename", {"session_name": ""}, content_type="application/json").json()["session_name"] == ""

    @pytest.mark.parametrize(
        ("body", "error"),
        [
            ({}, {"type": "missing", "loc": ["body", "session_name"], "msg": "Field required", "input": None}),
            ({"session_name": None}, {"type": "null", "loc": ["body", "session_name"], "msg": "Input should be a valid string", "input": None}),
        ],
    )
    def test_session_name_is_required(self, client: Client, body: dict[str, Any], error: dict[str, Any]) -> None:
        make_session("alice", session_id="s")
        response = client.post("/sessions/s/rename", body, content_type="application/json")
        assert (response.status_code, response.json()) == (422, {"detail": [error]})

    def test_outsider_gets_404(self, bob: Client) -> None:
        make_session("alice", session_id="s", session_name="mine")
        response = bob.post("/sessions/s/rename", {"session_name": "hijacked"}, content_type="application/json")
        assert (response.status_code, response.json()) == (404, {"detail": "Session with id 's' not found"})
        assert Session.all_users.get(pk="s").session_name == "mine"


# --- DELETE /sessions/{id} and DELETE /sessions ---------------------------------------------------

class TestDeleteSessions:
    def test_deletes_a_session_with_its_runs_and_events(self, client: Client) -> None:
        session = agent_session()
        run = Run.all_users.get(session=session)
        RunEvent.all_users.create(run=run, user_id="alice", event_index=0, event="RunStarted", payload={})
        response = client.delete("/sessions/s-agent")
        assert (response.status_code, response.content) == (204, b"")
        assert not Session.all_users.filter(pk="s-agent").exists()
        assert not Run.all_users.filter(pk=run.pk).exists()
        assert not RunEvent.all_users.filter(run_id=run.pk).exists()

    def test_unknown_ids_are_204(self, client: Client) -> None:
        assert client.delete("/sessions/nope").status_code == 204

    def test_outsider_cannot_delete(self, bob: Client) -> None:
        make_session("alice", session_id="s")
        assert bob.delete("/sessions/s").status_code == 204
        assert Session.all_users.filter(pk="s").exists()

    def test_open_callers_user_id_filters_what_is_deleted(self, client: Client) -> None:
        make_session("alice", session_id="s")
        client.delete("/sessions/s?user_id=bob")
        assert Session.all_users.filter(pk="s").exists()
        client.delete("/sessions/s?user_id=alice")
        assert not Session.all_users.filter(pk="s").exists()

    def test_deleting_media_too_deletes_the_session_as_no_media_is_stored(self, client: Client) -> None:
        make_session("alice", session_id="s")
        assert client.delete("/sessions/s?delete_media=maybe").status_code == 422
        assert Session.all_users.filter(pk="s").exists()
        assert client.delete("/sessions/s?delete_media=true").status_code == 204
        assert not Session.all_users.filter(pk="s").exists()

    def test_bulk_delete_reads_a_json_body(self, client: Client) -> None:
        for session_id in ("a", "b", "c"):
            make_session("alice", session_id=session_id)
        response = client.delete(
            "/sessions", {"session_ids": ["a", "b", "zzz"], "session_types": ["agent", "team", "agent"]}, content_type="application/json"
        )
        assert response.status_code == 204
        assert list(Session.all_users.values_list("pk", flat=True)) == ["c"]

    def test_bulk_delete_skips_sessions_outside_the_callers_scope(self, bob: Client) -> None:
        make_session("alice", session_id="a")
        make_session("bob", session_id="b")
        bob.delete("/sessions", {"session_ids": ["a", "b"], "session_types": ["agent", "agent"]}, content_type="application/json")
        assert list(Session.all_users.values_list("pk", flat=True)) == ["a"]

    def test_bulk_delete_needs_as_many_types_as_ids(self, client: Client) -> None:
        make_session("alice", session_id="a")
        response = client.delete("/sessions", {"session_ids": ["a"], "session_types": ["agent", "team"]}, content_type="application/json")
        assert (response.status_code, response.json()) == (400, {"detail": "Session IDs and session types must have the same length"})
        assert Session.all_users.filter(pk="a").exists()

    @pytest.mark.parametrize(
        ("body", "loc"),
        [
            (None, ["body"]),
            ({"session_types": ["agent"]}, ["body", "session_ids"]),
            ({"session_ids": [], "session_types": []}, ["body", "session_ids"]),
            ({"session_ids": ["a"], "session_types": ["robot"]}, ["body", "session_types", 0]),
        ],
    )
    def test_bulk_delete_validates_its_body(self, client: Client, body: dict[str, Any] | None, loc: list[Any]) -> None:
        response = client.delete("/sessions", body, content_type="application/json") if body is not None else client.delete("/sessions")
        assert response.status_code == 422
        assert response.json()["detail"][0]["loc"] == loc


# --- Runs of a session -----------------------------------------------------------------------------

def team_session() -> Session:
    """A team session: one team run led by 'crew' with a member run of 'researcher'."""
    session = stamp(make_session("alice", session_id="s-team", session_type="team", component_id="crew"))
    make_run("alice", session=session, run_id="lead", run_type="team", component_id="crew", status="COMPLETED",
             input={"input_content": "Research tea"}, created_at=T0 + timedelta(seconds=1),
             run_data={"content": "Tea is good.", "metrics": {"total_tokens": 9}, "events": [{"event": "TeamRunStarted"}]})
    make_run("alice", session=session, run_id="member", run_type="agent", component_id="researcher", parent_run_id="lead",
             status="COMPLETED", input={"input_content": "Find facts"}, created_at=T0 + timedelta(seconds=2),
             run_data={"content": {"facts": ["green"]}, "content_type": "Facts"})
    return session


class TestSessionRuns:
    def test_lists_an_agent_sessions_runs_without_nulls(self, client: Client) -> None:
        agent_session()
        response = client.get("/sessions/s-agent/runs")
        assert response.status_code == 200
        run = Run.all_users.get(pk="s-agent-r1")
        assert response.json() == [
            {
                "run_id": "s-agent-r1",
                "parent_run_id": "",
                "agent_id": "assistant",
                "user_id": "alice",
                "status": "COMPLETED",
                "run_input": "What tools do you have?",
                "content": "I can add numbers.",
                "run_response_format": "text",
                "reasoning_content": "",
                "reasoning_steps": [],
                "metrics": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
                "messages": run.run_data["messages"],
                "created_at": "2026-11-30T09:42:54Z",
                "references": [],
                "reasoning_messages": [],
                "images": [],
                "videos": [],
                "audio": [],
                "files": [],
                "input_media": NO_MEDIA,
                **OURS,
            }
        ]

    def test_a_streamed_runs_events_are_listed_without_the_content_deltas(self, client: Client) -> None:
        agent_session()
        kept = streamed(Run.all_users.get(pk="s-agent-r1"))
        listed = client.get("/sessions/s-agent/runs").json()
        assert [run["events"] for run in listed] == [kept]

    def test_a_team_session_lists_member_runs_before_the_team_run(self, client: Client) -> None:
        """As AgentOS stores them (a member's run ends first): agent-ui shows the member's reply above the team's answer."""
        team_session()
        assert client.get("/sessions/s-team/runs").json() == [
            {
                "run_id": "member",
                "parent_run_id": "lead",
                "agent_id": "researcher",
                "user_id": "alice",
                "status": "COMPLETED",
                "run_input": "Find facts",
                "content": {"facts": ["green"]},
                "run_response_format": "json",
                "reasoning_content": "",
                "reasoning_steps": [],
                "metrics": {},
                "created_at": "2026-11-30T09:42:55Z",
                "references": [],
                "reasoning_messages": [],
                "images": [],
                "videos": [],
                "audio": [],
                "files": [],
                "input_media": NO_MEDIA,
                **OURS,
            },
            {
                "run_id": "lead",
                "parent_run_id": "",
                "team_id": "crew",
                "user_id": "alice",
                "status": "COMPLETED",
                "content": "Tea is good.",
                "reasoning_content": "",
                "reasoning_steps": [],
                "run_input": "Research tea",
                "run_response_format": "text",
                "metrics": {"total_tokens": 9},
                "events": [{"event": "TeamRunStarted"}],
                "created_at": "2026-11-30T09:42:54Z",
                "references": [],
                "reasoning_messages": [],
                "input_media": NO_MEDIA,
                "images": [],
                "videos": [],
                "audio": [],
                "files": [],
                **OURS,
            },
        ]

    def test_a_workflow_run_is_listed_in_the_workflow_run_schema(self, client: Client) -> None:
        session = stamp(make_session("alice", session_id="s-flow", session_type="workflow", component_id="flow"))
        make_run("alice", session=session, run_id="wf", run_type="workflow", component_id="flow", status="PAUSED",
                 input={"input_content": {"topic": "tea"}}, created_at=T0,
                 run_data={"step_results": [{"step_name": "draft"}], "pause_kind": "step", "paused_step_index": 0})
        assert client.get("/sessions/s-flow/runs").json() == [
            {
                "run_id": "wf",
                "run_input": '{\n  "topic": "tea"\n}',
                "events": [],
                "workflow_id": "flow",
                "user_id": "alice",
                "content": "",
                "content_type": "",
                "status": "PAUSED",
                "step_results": [{"step_name": "draft"}],
                "step_executor_runs": [],
                "pause_kind": "step",
                "paused_step_index": 0,
                "metrics": {},
                "created_at": ISO_T0,
                "reasoning_content": "",
                "reasoning_steps": [],
                "references": [],
                "reasoning_messages": [],
                "images": [],
                "videos": [],
                "audio": [],
                "files": [],
                **OURS,
            }
        ]

    def test_type_agent_lists_every_run_as_an_agent_run(self, client: Client) -> None:
        team_session()
        runs = client.get("/sessions/s-team/runs?type=agent").json()
        assert [(run["run_id"], run["agent_id"], "team_id" in run) for run in runs] == [("member", "researcher", False), ("lead", "", False)]

    def test_status_filter_is_repeatable_and_case_insensitive(self, client: Client) -> None:
        session = make_session("alice", session_id="s")
        for index, status in enumerate(["COMPLETED", "RUNNING", "PAUSED", "ERROR"]):
            make_run("alice", session=session, run_id=f"r{index}", status=status)
        runs = client.get("/sessions/s/runs?status=running&status=Paused").json()
        assert [run["run_id"] for run in runs] == ["r1", "r2"]

    def test_an_unknown_status_is_400(self, client: Client) -> None:
        make_session("alice", session_id="s")
        response = client.get("/sessions/s/runs?status=done&status=running")
        assert (response.status_code, response.json()) == (
            400,
            {"detail": "Invalid status value(s) ['DONE']; expected one of ['CANCELLED', 'COMPLETED', 'ERROR', 'PAUSED', 'PENDING', 'REGENERATED', 'RUNNING']"},
        )

    def test_created_after_and_before_are_inclusive_whole_seconds(self, client: Client) -> None:
        session = make_session("alice", session_id="s")
        base = int(T0.timestamp())
        for index in range(4):
            make_run("alice", session=session, run_id=f"r{index}", created_at=T0 + timedelta(seconds=index, milliseconds=500))
        runs = client.get(f"/sessions/s/runs?created_after={base + 1}&created_before={base + 2}").json()
        assert [run["run_id"] for run in runs] == ["r1", "r2"]

    @pytest.mark.parametrize("query", [f"created_after={10**30}", f"created_before=-{10**30}", "created_after=99999999999999"])
    def test_out_of_range_times_match_nothing_rather_than_fail(self, client: Client, query: str) -> None:
        make_run("alice", session=make_session("alice", session_id="s"))
        response = client.get(f"/sessions/s/runs?{query}")
        assert (response.status_code, response.json()) == (200, [])

    def test_a_non_integer_time_is_422(self, client: Client) -> None:
        make_session("alice", session_id="s")
        response = client.get("/sessions/s/runs?created_after=yesterday")
        assert response.status_code == 422
        assert response.json()["detail"][0]["loc"] == ["query", "created_after"]

    @pytest.mark.parametrize("count", [1, 50])
    def test_runs_three_queries_whatever_the_number_of_runs(self, client: Client, count: int) -> None:
        session = make_session("alice", session_id="s")
        kept = [streamed(make_run("alice", session=session, run_data={"messages": [{"role": "user", "content": "x"}]})) for _ in range(count)]
        with CaptureQueriesContext(connection) as queries:
            runs = client.get("/sessions/s/runs").json()
        assert [run["events"] for run in runs] == kept
        assert len(queries.captured_queries) == 3  # the session, its runs, their events

    def test_missing_session_is_404(self, client: Client) -> None:
        response = client.get("/sessions/nope/runs")
        assert (response.status_code, response.json()) == (404, {"detail": "Session with ID nope not found"})

    def test_outsider_gets_404(self, bob: Client) -> None:
        agent_session("alice")
        assert bob.get("/sessions/s-agent/runs").status_code == 404
        assert bob.get("/sessions/s-agent/run-previews").status_code == 404


class TestRunPreviews:
    def test_previews_carry_ids_status_and_truncated_texts(self, client: Client) -> None:
        team_session()
        long_input = "word " * 100
        make_run("alice", session=Session.all_users.get(pk="s-team"), run_id="long", run_type="team", component_id="crew",
                 status="RUNNING", input={"input_content": long_input}, created_at=T0 + timedelta(seconds=3),
                 run_data={"content": "y" * 300})
        assert client.get("/sessions/s-team/run-previews").json() == [
            {"run_id": "member", "parent_run_id": "lead", "agent_id": "researcher", "user_id": "alice", "status": "COMPLETED",
             "run_input": "Find facts", "content_preview": '{"facts": ["green"]}', "created_at": "2026-11-30T09:42:55Z"},
            {"run_id": "lead", "parent_run_id": "", "team_id": "crew", "user_id": "alice", "status": "COMPLETED",
             "run_input": "Research tea", "content_preview": "Tea is good.", "created_at": "2026-11-30T09:42:54Z"},
        ]
        assert client.get("/sessions/s-team/run-previews?status=running").json() == [
            {"run_id": "long", "parent_run_id": "", "team_id": "crew", "user_id": "alice", "status": "RUNNING",
             "run_input": long_input[:280], "content_preview": "y" * 280, "created_at": "2026-11-30T09:42:56Z"},
        ]

    def test_previews_take_the_same_filters(self, client: Client) -> None:
        session = make_session("alice", session_id="s")
        make_run("alice", session=session, run_id="done", status="COMPLETED")
        make_run("alice", session=session, run_id="live", status="RUNNING")
        assert [p["run_id"] for p in client.get("/sessions/s/run-previews?status=running").json()] == ["live"]

    @pytest.mark.parametrize("count", [1, 50])
    def test_runs_two_queries_whatever_the_number_of_runs(self, client: Client, count: int) -> None:
        session = make_session("alice", session_id="s")
        for _ in range(count):
            make_run("alice", session=session)
        with CaptureQueriesContext(connection) as queries:
            previews = client.get("/sessions/s/run-previews").json()
        assert len(previews) == count
        assert len(queries.captured_queries) == 2


class TestSessionRun:
    def test_one_run_keeps_explicit_nulls(self, client: Client) -> None:
        agent_session()
        response = client.get("/sessions/s-agent/runs/s-agent-r1")
        assert response.status_code == 200
        body = response.json()
        assert body == {
            **client.get("/sessions/s-agent/runs").json()[0],
            "cancellation_stage": None,
            "metadata": None,
            "tools": None,
            "events": None,
            "citations": None,
            "session_state": None,
            "response_audio": None,
            "followups": None,
            "forked_from_run_id": None,
            "forked_from_message_index": None,
            "forked_from_session_id": None,
            "regenerated_from": None,
            "last_checkpoint_at_message_index": None,
            "previous_run_id": None,
        }
        assert list(body)[:4] == ["run_id", "parent_run_id", "agent_id", "user_id"]

    def test_a_streamed_run_carries_its_events_without_the_content_deltas(self, client: Client) -> None:
        agent_session()
        kept = streamed(Run.all_users.get(pk="s-agent-r1"))
        assert client.get("/sessions/s-agent/runs/s-agent-r1").json()["events"] == kept

    def test_the_schema_follows_the_runs_own_kind(self, client: Client) -> None:
        team_session()
        assert client.get("/sessions/s-team/runs/lead?type=agent").json()["team_id"] == "crew"
        member = client.get("/sessions/s-team/runs/member").json()
        assert (member["agent_id"], member["parent_run_id"], "team_id" in member) == ("researcher", "lead", False)

    def test_missing_session_run_and_runless_session_are_404s(self, client: Client) -> None:
        agent_session()
        make_session("alice", session_id="empty")
        cases = {
            "/sessions/nope/runs/x": "Session with ID nope not found",
            "/sessions/empty/runs/x": "Session with ID empty has no runs",
            "/sessions/s-agent/runs/x": "Run with ID x not found in session s-agent",
        }
        for url, detail in cases.items():
            response = client.get(url)
            assert (response.status_code, response.json()) == (404, {"detail": detail}), url

    def test_a_run_of_another_session_is_404(self, client: Client) -> None:
        agent_session("alice", "one")
        agent_session("alice", "two")
        assert client.get("/sessions/two/runs/one-r1").status_code == 404

    def test_outsider_gets_404(self, bob: Client) -> None:
        agent_session("alice")
        response = bob.get("/sessions/s-agent/runs/s-agent-r1")
        assert (response.status_code, response.json()) == (404, {"detail": "Session with ID s-agent not found"})


def test_media_is_never_found(client: Client) -> None:
    agent_session()
    response = client.get("/sessions/s-agent/media/images/a/b.png")
    assert (response.status_code, response.json()) == (404, {"detail": "Media not found"})


def test_wrong_method_is_405(client: Client) -> None:
    response = client.put("/sessions/s", {}, content_type="application/json")
    assert (response.status_code, response.json()) == (405, {"detail": "Method Not Allowed"})


def test_a_runs_own_component_ids_decide_its_schema(client: Client) -> None:
    """A member run recorded under the team's kind still lists as the agent run its output says it is."""
    session = make_session("alice", session_id="s", session_type="team", component_id="crew")
    make_run("alice", session=session, run_id="lead", run_type="team", component_id="crew")
    make_run("alice", session=session, run_id="member", run_type="team", component_id="crew", parent_run_id="lead",
             run_data={"agent_id": "researcher", "agent_name": "Researcher"})
    runs = client.get("/sessions/s/runs").json()
    assert [(run["run_id"], run.get("team_id"), run.get("agent_id")) for run in runs] == [("member", None, "researcher"), ("lead", "crew", None)]


@pytest.mark.parametrize(
    ("method", "url", "body", "loc"),
    [
        ("get", "/sessions/%00", None, ["path", "session_id"]),
        ("get", "/sessions?session_name=a%00", None, ["query", "session_name"]),
        ("get", "/sessions?user_id=%00", None, ["query", "user_id"]),
        ("get", "/sessions/s/runs/%00", None, ["path", "run_id"]),
        ("delete", "/sessions/%00", None, ["path", "session_id"]),
        ("post", "/sessions", '{"session_state": {"a": "\\u0000"}}', ["body", "session_state", "a"]),
        ("post", "/sessions", '{"metadata": {"k\\u0000": 1}}', ["body", "metadata"]),
        ("post", "/sessions", '{"session_state": {"a": [1e400]}}', ["body", "session_state", "a", 0]),
        ("patch", "/sessions/s", '{"session_state": {"deep": [[{"x": "\\u0000"}]]}}', ["body", "session_state", "deep", 0, 0, "x"]),
        ("post", "/sessions", '{"session_name": "a\\u0000"}', ["body", "session_name"]),
        ("post", "/sessions", '{"session_id": "' + "x" * 256 + '"}', ["body", "session_id"]),
        ("post", "/sessions", "[" * 100_000 + "]" * 100_000, ["body"]),
    ],
)
def test_input_the_database_cannot_take_is_422_not_a_server_error(client: Client, method: str, url: str, body: str | None, loc: list[str]) -> None:
    make_session("alice", session_id="s")
    response = getattr(client, method)(url, body, content_type="application/json") if body is not None else getattr(client, method)(url)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == loc
