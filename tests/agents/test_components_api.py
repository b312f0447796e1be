"""/components over the admin's definitions: an admin writes them through AgentOS's component API
with the admin's validation; a user bound to their own data reads only what is published and
changes nothing; a draft never runs for a user, and runs for an admin (agents.pipeline.authority)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from agents.models import AgentDefinition, AgentVersion, Stage, TeamDefinition, WorkflowDefinition
from agents.registry import agent_get
from agents.services.definitions import definition_create
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db

ADMIN = ["agent_os:admin"]
READER = ["components:read", "agents:read", "agents:run"]
# Everything a user may be granted on components: still no write to a shared definition.
USER_ALL = ["components:read", "components:write", "components:delete", "agents:read", "agents:run"]


def send(client, method: str, path: str, body=None, *, scopes=ADMIN, sub="root", **query):
    headers = auth(token(sub, scopes))
    url = path + ("?" + "&".join(f"{key}={value}" for key, value in query.items()) if query else "")
    if body is None:  # no body at all, as a client's bodyless POST (the test client's default is a multipart one)
        return getattr(client, method)(url, content_type="application/json", **headers)
    return getattr(client, method)(url, data=json.dumps(body), content_type="application/json", **headers)


def create(client, **body):
    body = {"name": "Helper", "component_id": "helper", "component_type": "agent", "config": {"instructions": "Be brief."}, **body}
    return send(client, "post", "/components", body)


@pytest.fixture
def helper(client, jwt_server):
    response = create(client, stage="published")
    assert response.status_code == 201, response.content
    return response.json()


class TestAnAdminWritesDefinitions:
    def test_create_publishes_the_first_version_and_the_agent_is_live(self, client, jwt_server) -> None:
        response = create(client, stage="published", description="Answers briefly", config={"model": {"provider": "offline", "id": "demo"}, "tools": ["calculator"]})
        body = response.json()
        assert response.status_code == 201
        assert set(body) == {"component_id", "component_type", "name", "description", "current_version", "created_at", "updated_at"}
        assert (body["component_id"], body["component_type"], body["name"], body["description"], body["current_version"]) == ("helper", "agent", "Helper", "Answers briefly", 1)
        assert isinstance(body["created_at"], int)
        version = AgentVersion.objects.get(definition__agent_id="helper", version=1)
        assert (version.stage, version.model, version.tools) == (Stage.PUBLISHED, "offline:demo", ["calculator"])
        listed = client.get("/agents", **auth(token("alice", READER))).json()
        assert "helper" in [agent["id"] for agent in listed]

    def test_a_draft_component_has_no_current_version_and_is_not_listed_to_users(self, client, jwt_server) -> None:
        body = create(client).json()
        assert "current_version" not in body
        assert send(client, "get", "/components/helper", scopes=READER, sub="alice").json() == {"detail": "Component helper not found"}
        assert send(client, "get", "/components", scopes=READER, sub="alice").json()["data"] == []
        assert send(client, "get", "/components/helper").json()["component_id"] == "helper"

    def test_the_id_is_made_from_the_name_when_absent(self, client, jwt_server) -> None:
        response = send(client, "post", "/components", {"name": "Support  Desk!", "component_type": "agent"})
        assert (response.status_code, response.json()["component_id"]) == (201, "support-desk")

    def test_the_admins_validation_refuses_what_the_admin_refuses(self, client, jwt_server) -> None:
        cases = [
            ({"config": {"tools": ["nope"]}}, "tools: Unknown toolkits: nope."),
            ({"config": {"model": "gpt4"}}, "model: Model must look like 'provider:model_id'"),
            ({"config": {"colour": "red"}}, "Unknown agent config field(s): colour."),
            ({"component_type": "team", "component_id": "crew", "config": {"members": ["nobody"]}}, "members: No live agent or team: nobody."),
            ({"component_type": "team", "component_id": "crew", "config": {}}, "members: A team needs at least one member."),
            ({"component_type": "workflow", "component_id": "flow", "config": {"steps": [{"type": "Step", "agent_id": "ghost"}]}}, "steps: "),
            ({"component_id": "has space"}, "agent_id: Letters, digits"),
            ({"config": {"id": "other"}}, "config.id 'other' is not the component's id 'helper'"),
        ]
        for body, start in cases:
            response = create(client, **body)
            assert response.status_code == 400, (body, response.content)
            assert start in response.json()["detail"], (body, response.json())
        assert not AgentDefinition.objects.exists() and not TeamDefinition.objects.exists() and not WorkflowDefinition.objects.exists()

    def test_bad_bodies_are_422_in_fastapis_shape(self, client, jwt_server) -> None:
        missing = send(client, "post", "/components", {"component_type": "agent"})
        assert (missing.status_code, missing.json()["detail"][0]["loc"]) == (422, ["body", "name"])
        wrong_type = send(client, "post", "/components", {"name": "x", "component_type": "robot"})
        assert (wrong_type.status_code, wrong_type.json()["detail"][0]["loc"]) == (422, ["body", "component_type"])
        not_an_object = send(client, "post", "/components", ["x"])
        assert not_an_object.status_code == 422
        assert send(client, "get", "/components", limit=101).status_code == 422
        assert send(client, "get", "/components", component_type="robot").status_code == 422

    def test_an_id_is_one_components_whatever_its_kind(self, client, jwt_server, helper) -> None:
        again = create(client, component_type="workflow", config={"steps": [{"type": "Step", "agent_id": "assistant"}]})
        assert (again.status_code, again.json()) == (409, {"detail": "Component helper already exists"})
        code = create(client, component_id="assistant")
        assert (code.status_code, code.json()) == (409, {"detail": "Component assistant already exists"})

    def test_a_team_takes_agnos_member_objects(self, client, jwt_server, helper) -> None:
        members = [{"type": "agent", "agent_id": "helper"}, {"type": "team", "team_id": "research-team"}]
        response = create(client, component_type="team", component_id="crew", name="Crew", stage="published", config={"members": members, "mode": "route"})
        assert response.status_code == 201, response.content
        current = send(client, "get", "/components/crew/configs/current").json()
        assert (current["config"]["members"], current["config"]["mode"], current["stage"]) == (["helper", "research-team"], "route", "published")


class TestVersions:
    def test_configs_list_the_draft_and_the_published_versions(self, client, jwt_server, helper) -> None:
        configs = send(client, "get", "/components/helper/configs").json()
        assert [(item["version"], item["stage"]) for item in configs] == [(2, "draft"), (1, "published")]
        assert configs[1]["config"]["instructions"] == "Be brief."
        assert set(configs[1]) == {"component_id", "version", "stage", "config", "created_at", "updated_at"}
        bare = send(client, "get", "/components/helper/configs", include_config="false").json()
        assert all("config" not in item for item in bare)

    def test_a_new_config_writes_the_draft_and_publishing_makes_it_live(self, client, jwt_server, helper) -> None:
        drafted = send(client, "post", "/components/helper/configs", {"config": {"instructions": "Be thorough."}, "notes": "longer"})
        assert (drafted.status_code, drafted.json()["version"], drafted.json()["stage"], drafted.json()["notes"]) == (201, 2, "draft", "longer")
        assert send(client, "get", "/components/helper/configs/current").json()["config"]["instructions"] == "Be brief."
        published = send(client, "patch", "/components/helper/configs/2", {"stage": "published", "config": {"name": "Thorough Helper"}})
        assert (published.status_code, published.json()["stage"]) == (200, "published")
        component = send(client, "get", "/components/helper").json()
        assert (component["current_version"], component["name"]) == (2, "Thorough Helper")
        assert send(client, "get", "/components/helper/configs/current").json()["config"]["instructions"] == "Be thorough."

    def test_a_published_config_never_changes_and_only_a_draft_is_deleted(self, client, jwt_server, helper) -> None:
        edit = send(client, "patch", "/components/helper/configs/1", {"config": {"instructions": "Changed"}})
        assert (edit.status_code, edit.json()) == (409, {"detail": "Cannot update published config helper v1"})
        delete = send(client, "delete", "/components/helper/configs/1")
        assert (delete.status_code, delete.json()) == (409, {"detail": "Cannot delete published config helper v1; only drafts are deletable"})
        assert send(client, "delete", "/components/helper/configs/2").status_code == 204
        assert [item["version"] for item in send(client, "get", "/components/helper/configs").json()] == [1]
        assert send(client, "get", "/components/helper/configs/2").json() == {"detail": "Config helper v2 not found"}
        assert send(client, "get", "/components/helper/configs/two").status_code == 422

    def test_set_current_rolls_back_by_publishing_a_copy_and_keeps_the_pending_draft(self, client, jwt_server, helper) -> None:
        send(client, "patch", "/components/helper/configs/2", {"config": {"instructions": "Second."}, "stage": "published"})
        send(client, "patch", "/components/helper/configs/3", {"config": {"instructions": "Unfinished edit"}})
        response = send(client, "post", "/components/helper/configs/1/set-current")
        assert (response.status_code, response.json()["current_version"]) == (200, 3)
        assert send(client, "get", "/components/helper/configs/current").json()["config"]["instructions"] == "Be brief."
        assert send(client, "get", "/components/helper/configs/4").json()["config"]["instructions"] == "Unfinished edit"
        same = send(client, "post", "/components/helper/configs/3/set-current")
        assert (same.status_code, same.json()["current_version"]) == (200, 3)
        draft = send(client, "post", "/components/helper/configs/4/set-current")
        assert (draft.status_code, draft.json()) == (409, {"detail": "Config helper v4 is a draft: publish it to make it current"})

    def test_guards_refuse_a_write_that_expects_another_state(self, client, jwt_server, helper) -> None:
        stale = send(client, "post", "/components/helper/configs", {"config": {}, "guard": {"latest_version": 1}})
        assert (stale.status_code, stale.json()) == (409, {"detail": "Component helper latest version is 2, expected 1"})
        assert send(client, "post", "/components/helper/configs", {"config": {}, "guard": {"latest_version": 2}}).status_code == 201
        refused = send(client, "delete", "/components/helper", expected_current_version=2)
        assert (refused.status_code, refused.json()) == (409, {"detail": "Component helper current version is 1, expected 2"})
        disagree = send(client, "delete", "/components/helper", {"guard": {"current_version": 1}}, expected_current_version=2)
        assert disagree.status_code == 400
        assert send(client, "delete", "/components/helper", expected_current_version=1).status_code == 204

    def test_delete_archives_and_restore_brings_it_back(self, client, jwt_server, helper) -> None:
        assert send(client, "delete", "/components/helper").status_code == 204
        assert send(client, "get", "/components/helper").status_code == 404
        archived = send(client, "get", "/components/helper", include_deleted="true").json()
        assert archived["deleted_at"] >= archived["created_at"]
        assert [item["component_id"] for item in send(client, "get", "/components", include_deleted="true").json()["data"]] == ["helper"]
        assert send(client, "get", "/components").json()["data"] == []
        assert agent_get("helper") is None  # not offered, not runnable
        restored = send(client, "post", "/components/helper/restore")
        assert (restored.status_code, "deleted_at" in restored.json()) == (200, False)
        assert agent_get("helper").version == 1
        again = send(client, "post", "/components/helper/restore")
        assert (again.status_code, again.json()) == (409, {"detail": "Component is not archived"})

    def test_update_renames_and_refuses_what_is_not_stored(self, client, jwt_server, helper) -> None:
        renamed = send(client, "patch", "/components/helper", {"name": "Aide", "description": "Helps"})
        assert (renamed.json()["name"], renamed.json()["description"]) == ("Aide", "Helps")
        assert send(client, "patch", "/components/helper", {"component_type": "team"}).status_code == 400
        assert send(client, "patch", "/components/helper", {"metadata": {"k": "v"}}).status_code == 400

    def test_list_pages_newest_first_by_type(self, client, jwt_server) -> None:
        for number in range(3):
            create(client, component_id=f"a{number}", stage="published")
        page = send(client, "get", "/components", component_type="agent", limit=2, page=2).json()
        assert [item["component_id"] for item in page["data"]] == ["a0"]
        assert page["meta"] == {"page": 2, "limit": 2, "total_pages": 2, "total_count": 3, "search_time_ms": 0.0}
        assert send(client, "get", "/components", component_type="team").json()["data"] == []


class TestAUserBoundToTheirData:
    def test_reads_published_configs_only(self, client, jwt_server, helper) -> None:
        send(client, "post", "/components/helper/configs", {"config": {"instructions": "DRAFT-SECRET"}})
        configs = send(client, "get", "/components/helper/configs", scopes=READER, sub="alice")
        assert [item["version"] for item in configs.json()] == [1]
        draft = send(client, "get", "/components/helper/configs/2", scopes=READER, sub="alice")
        assert (draft.status_code, draft.json()) == (404, {"detail": "Config helper v2 not found"})
        assert "DRAFT-SECRET" not in draft.content.decode() + configs.content.decode()
        assert send(client, "get", "/components/helper", scopes=READER, sub="alice").json()["current_version"] == 1

    def test_changes_nothing_even_with_every_components_scope(self, client, jwt_server, helper) -> None:
        attempts = [
            ("post", "/components", {"name": "Mine", "component_type": "agent"}, "Cannot create shared component"),
            ("patch", "/components/helper", {"name": "Hijacked"}, "Cannot modify shared component"),
            ("delete", "/components/helper", None, "Cannot delete shared component"),
            ("post", "/components/helper/configs", {"config": {"instructions": "x"}}, "Cannot modify shared component"),
            ("patch", "/components/helper/configs/2", {"config": {"instructions": "x"}}, "Cannot modify shared component"),
            ("delete", "/components/helper/configs/2", None, "Cannot delete shared component"),
            ("post", "/components/helper/configs/1/set-current", None, "Cannot modify shared component"),
            ("post", "/components/helper/restore", None, "Cannot modify shared component"),
        ]
        before = list(AgentVersion.objects.values_list("version", "stage", "instructions")), list(AgentDefinition.objects.values_list("name", "is_active"))
        for method, path, body, detail in attempts:
            response = send(client, method, path, body, scopes=USER_ALL, sub="alice")
            assert (response.status_code, response.json()) == (403, {"detail": detail}), (method, path)
        after = list(AgentVersion.objects.values_list("version", "stage", "instructions")), list(AgentDefinition.objects.values_list("name", "is_active"))
        assert after == before

    def test_needs_the_scope_of_the_operation(self, client, jwt_server, helper) -> None:
        response = send(client, "get", "/components", scopes=["agents:read"], sub="alice")
        assert (response.status_code, response.json()) == (403, {"detail": "Insufficient permissions. Required scope(s): components:read"})
        restore = send(client, "post", "/components/helper/restore", scopes=["components:read", "components:write"], sub="alice")
        assert restore.json() == {"detail": "Insufficient permissions. Required scope(s): components:delete"}

    @pytest.mark.django_db(transaction=True)  # the run reads the definitions from its own thread
    def test_a_draft_version_runs_for_an_admin_only(self, client, jwt_server, helper) -> None:
        send(client, "post", "/components/helper/configs", {"config": {"instructions": "Drafted."}})
        form = {"message": "hi", "stream": "false", "version": "2"}
        by_user = client.post("/agents/helper/runs", form, **auth(token("alice", READER)))
        assert (by_user.status_code, by_user.json()) == (404, {"detail": "Agent not found"})
        assert client.post("/agents/helper/runs", form, **auth(token("root", ADMIN))).status_code == 200


def test_an_open_server_writes_as_agentos_without_auth(client) -> None:
    response = client.post("/components", data=json.dumps({"name": "Open", "component_type": "agent", "stage": "published"}), content_type="application/json")
    assert (response.status_code, response.json()["current_version"]) == (201, 1)


def test_an_anonymous_guest_may_read_but_not_write(client, settings) -> None:
    settings.ANONYMOUS_ACCESS = "guests"
    definition_create(agent_id="shared", name="Shared", model="offline:demo")
    assert [item["component_id"] for item in client.get("/components").json()["data"]] == ["shared"]
    response = client.patch("/components/shared", data=json.dumps({"name": "Mine"}), content_type="application/json")
    assert (response.status_code, response.json()) == (403, {"detail": "Cannot modify shared component"})


class TestRegistry:
    def test_lists_what_a_definition_may_reference(self, client, jwt_server) -> None:
        body = send(client, "get", "/registry", scopes=["registry:read"], sub="alice", limit=100).json()
        by_type: dict[str, list[str]] = {}
        for entry in body["data"]:
            assert set(entry) <= {"name", "type", "id", "description", "metadata", "sandboxed"} and entry["sandboxed"] is False
            by_type.setdefault(entry["type"], []).append(entry["id"])
        assert by_type["tool"] == ["calculator", "datetime", "http", "workspace", "demo_actions", "schedules", "mcp:demo"]  # and MCP_SERVERS, the bundled server by default
        assert by_type["function"] == ["shout", "exclaim", "asks_for_facts", "by_length", "long_enough"]
        assert by_type["model"] == ["openai", "anthropic", "offline"]
        assert {"assistant", "hitl-agent"} <= set(by_type["agent"]) and {"research-team", "hitl-team"} <= set(by_type["team"])
        assert body["meta"]["total_count"] == len(body["data"])

    def test_filters_by_type_and_name_and_pages(self, client, jwt_server) -> None:
        tools = send(client, "get", "/registry", scopes=["registry:read"], sub="alice", resource_type="tool", name="DATE").json()
        assert [entry["id"] for entry in tools["data"]] == ["datetime"]
        assert send(client, "get", "/registry", scopes=["registry:read"], sub="alice", resource_type="db").json()["data"] == []
        assert send(client, "get", "/registry", scopes=["registry:read"], sub="alice", resource_type="robot").status_code == 422
        assert send(client, "get", "/registry", scopes=["registry:read"], sub="alice", limit=0).status_code == 422
        refused = send(client, "get", "/registry", scopes=["components:read"], sub="alice")
        assert (refused.status_code, refused.json()) == (403, {"detail": "Insufficient permissions. Required scope(s): registry:read"})

    def test_a_published_definition_joins_the_members(self, client, jwt_server, helper) -> None:
        agents = send(client, "get", "/registry", resource_type="agent", name="helper").json()["data"]
        assert agents == [{"name": "Helper", "type": "agent", "id": "helper", "metadata": {"source": "db", "referenced_as": "members, agent_id"}, "sandboxed": False}]


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_readmes_example_runs_as_written(live_api, settings, tmp_path) -> None:
    """README, "Components, the registry and the queue": pasted into bash against a live server
    (so curl's bodyless POST of set-current is a real client's)."""
    settings.OS_SECURITY_KEY = "s3cret"
    settings.AGENT_OS_AUTH_MODE = "security_key"
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("### Components, the registry and the queue") :]
    script = section[section.index("```bash\n") + len("```bash\n") : section.index("```\n", section.index("```bash\n") + 8)]
    script = script.replace("localhost:7777", live_api.removeprefix("http://")).replace("\ncurl -s ", "\ncurl -sf ")
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, (result.stdout, result.stderr)
    answers = [json.loads(line) for line in result.stdout.replace("}{", "}\n{").splitlines() if line.strip()]
    assert [answers[0]["current_version"], answers[1]["version"], answers[2]["stage"], answers[3]["current_version"]] == [1, 2, "published", 3]
    assert AgentVersion.objects.get(definition__agent_id="helper", version=3).instructions == "Be brief."


def test_a_list_costs_one_query_per_kind_whatever_its_length(client, jwt_server, django_assert_num_queries) -> None:
    for number in range(4):
        definition_create(agent_id=f"agent-{number}", name=f"Agent {number}", model="offline:demo")
    headers = auth(token("root", ADMIN))
    client.get("/components", **headers)  # warm: the token's first use
    with django_assert_num_queries(3):
        body = client.get("/components", **headers).json()
    assert [(item["component_id"], item["current_version"]) for item in body["data"]] == [(f"agent-{number}", 1) for number in reversed(range(4))]


def test_numbers_past_the_columns_range_are_missing_or_refused_never_a_500(client, jwt_server, helper) -> None:
    huge = 10**20
    assert send(client, "get", f"/components/helper/configs/{huge}").status_code == 404
    assert send(client, "post", f"/components/helper/configs/{huge}/set-current").status_code == 404
    assert send(client, "patch", "/components/helper", {"current_version": huge}).status_code in (404, 422)
    assert send(client, "post", "/components/helper/configs", {"config": {"num_history_runs": huge}}).status_code == 400
    assert send(client, "delete", "/components/helper", expected_current_version=huge).status_code == 409


def test_a_workflow_is_composed_with_the_composers_checks(client, jwt_server) -> None:
    steps = [{"type": "Step", "name": "draft", "agent_id": "assistant"}, {"type": "Step", "name": "shout", "executor_ref": "shout"}]
    made = create(client, component_type="workflow", component_id="relay", name="Relay", stage="published", config={"steps": steps})
    assert made.status_code == 201, made.content
    listed = {item["id"]: item for item in client.get("/workflows", **auth(token("root", ADMIN))).json()}
    assert (listed["relay"]["is_component"], listed["relay"]["current_version"]) == (True, 1)
    nested: dict = {"type": "Step", "name": "leaf", "agent_id": "assistant"}
    for _ in range(12):
        nested = {"type": "Steps", "name": "box", "steps": [nested]}
    deep = send(client, "post", "/components/relay/configs", {"config": {"steps": [nested]}})
    assert deep.status_code == 400 and "deep" in deep.json()["detail"], deep.json()


def test_a_name_published_with_a_config_is_checked_as_the_admin_checks_it(client, jwt_server, helper) -> None:
    response = send(client, "post", "/components/helper/configs", {"stage": "published", "config": {"name": "x" * 201}})
    assert (response.status_code, response.json()) == (400, {"detail": "name: Ensure this value has at most 200 characters (it has 201)."})
    assert send(client, "get", "/components/helper").json()["current_version"] == 1  # nothing published


def test_a_token_without_user_isolation_writes_with_the_scope_as_in_agentos(client, jwt_server) -> None:
    jwt_server.USER_ISOLATION = False
    jwt_server.AGENT_OS_USER_ISOLATION = False
    made = send(client, "post", "/components", {"name": "Ops", "component_type": "agent"}, scopes=["components:write", "components:read"], sub="ops")
    assert (made.status_code, made.json()["component_id"]) == (201, "ops")
    archive = send(client, "delete", "/components/ops", scopes=["components:write", "components:read"], sub="ops")
    assert archive.json() == {"detail": "Insufficient permissions. Required scope(s): components:delete"}
