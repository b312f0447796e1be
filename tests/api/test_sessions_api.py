"""The /sessions family over HTTP, listing, creating and reading sessions: exact bodies, status
codes, null handling, scoping, query counts.

``client`` is an open server's caller (AgentOS without auth: every user's rows, ``user_id``
honoured as a filter); ``alice``/``bob`` are logged-in browser users, bound to their own rows
(user isolation).
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from sessions.models import Session
from tests.api.sessions_data import (
    AGENT_DETAIL_KEYS, CHAT_HISTORY, ISO_T0, MODEL, SESSION_ITEM_KEYS, T0, TEAM_DETAIL_KEYS, WORKFLOW_DETAIL_KEYS, agent_session, iso,
    stamp,
)
from tests.factories import make_run, make_session

pytestmark = pytest.mark.django_db


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
