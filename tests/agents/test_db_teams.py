"""Teams defined in the database: published versions run through /teams as code teams do, with
members that are live agents or teams; drafts are for admins; bad member lists are refused."""
from __future__ import annotations

import json
import time

import httpx

import pytest
from django.core.exceptions import ValidationError

from agents.models import AgentDefinition, TeamDefinition
from agents.registry import team_get, team_list, team_version_get
from agents.services.definitions import definition_create, draft_for, publish_draft, team_definition_create
from sessions.models import Run
from tests.security.conftest import auth, token

ADMIN = ["agent_os:admin"]
RUNNER = ["teams:read", "teams:run", "sessions:read"]
DRAFT_MARK = "DRAFT-TEAM-RULES-93be"


@pytest.fixture
def desk(db) -> TeamDefinition:
    """Team ``desk`` (coordinate) of a database agent ``researcher`` and the code agent ``assistant``."""
    definition_create(agent_id="researcher", name="Researcher", description="Finds facts", model="offline:demo")
    return team_definition_create(team_id="desk", name="Desk", description="Research desk", members=["researcher", "assistant"], instructions="Published rules.")


def run_team(client, team_id: str, message: str, *, headers: dict[str, str] | None = None, **form):
    return client.post(f"/teams/{team_id}/runs", {"message": message, "stream": "false", **form}, **(headers or {}))


@pytest.mark.django_db
class TestRegistry:
    def test_a_published_team_is_listed_after_the_code_teams_with_its_members_built(self, desk) -> None:
        entries = team_list()
        assert [entry.team_id for entry in entries] == ["research-team", "hitl-team", "desk"]
        entry = entries[-1]
        assert (entry.source, entry.version, entry.stage, entry.is_component) == ("db", 1, "published", True)
        team = entry.build("alice")
        assert (team.mode, team.instructions, [member.id for member in team.members]) == ("coordinate", "Published rules.", ["researcher", "assistant"])
        assert "add" in team.members[1].functions  # the code agent, with its calculator

    def test_a_team_may_be_a_member_and_code_teams_keep_their_ids(self, desk) -> None:
        team_definition_create(team_id="floor", name="Floor", members=["desk", "research-team"], mode="route")
        floor = team_get("floor").build(None)
        assert [member.id for member in floor.members] == ["desk", "research-team"]
        assert [member.id for member in floor.members[0].members] == ["researcher", "assistant"]
        TeamDefinition.objects.create(team_id="research-team", name="Shadow")  # the code team wins
        assert team_get("research-team").source == "code"

    def test_a_team_whose_member_has_gone_is_not_offered_and_the_log_says_why(self, desk, caplog) -> None:
        AgentDefinition.objects.filter(agent_id="researcher").update(is_active=False)
        assert team_get("desk") is None
        assert [entry.team_id for entry in team_list()] == ["research-team", "hitl-team"]
        assert "member 'researcher' is not a live agent or team" in caplog.text

    def test_editing_the_draft_changes_nothing_live_until_published(self, desk) -> None:
        draft = draft_for(desk)
        draft.instructions = DRAFT_MARK
        draft.save(update_fields=["instructions"])
        assert team_get("desk").build(None).instructions == "Published rules."
        assert team_get("desk", version=2) is None  # a draft answers as a missing version
        assert team_version_get("desk", version=2).build(None).instructions == DRAFT_MARK
        publish_draft(desk)
        assert (team_get("desk").version, team_get("desk").build(None).instructions) == (2, DRAFT_MARK)


@pytest.mark.django_db
class TestValidation:
    def test_members_must_be_live_agents_or_teams(self, desk) -> None:
        with pytest.raises(ValidationError, match="No live agent or team: ghost"):
            team_definition_create(team_id="t1", name="T1", members=["researcher", "ghost"])
        with pytest.raises(ValidationError, match="at least one member"):
            team_definition_create(team_id="t2", name="T2", members=[])
        with pytest.raises(ValidationError, match="listed twice"):
            team_definition_create(team_id="t3", name="T3", members=["assistant", "assistant"])
        with pytest.raises(ValidationError, match="Unknown toolkits: teleport"):
            team_definition_create(team_id="t4", name="T4", members=["assistant"], tools=["teleport"])
        with pytest.raises(ValidationError, match="model"):
            team_definition_create(team_id="t5", name="T5", members=["assistant"], model="nonsense")
        with pytest.raises(ValidationError, match="is the id of an agent"):
            team_definition_create(team_id="assistant", name="Clash", members=["researcher"])
        with pytest.raises(ValidationError, match="is the id of a team"):
            definition_create(agent_id="desk", name="Clash")
        assert not TeamDefinition.objects.filter(team_id__startswith="t").exists()

    def test_a_team_cannot_contain_itself_directly_or_through_sub_teams(self, desk) -> None:
        team_definition_create(team_id="floor", name="Floor", members=["desk"])
        draft = draft_for(desk)
        draft.members = ["researcher", "desk"]
        with pytest.raises(ValidationError, match="A team cannot contain itself: desk → desk"):
            draft.full_clean()
        draft.members = ["researcher", "floor"]
        with pytest.raises(ValidationError, match="A team cannot contain itself: desk → floor → desk"):
            draft.full_clean()
        draft.save(update_fields=["members"])  # stored past validation: publishing refuses it
        with pytest.raises(ValidationError):
            publish_draft(desk)

    def test_a_cycle_stored_past_validation_makes_the_teams_unavailable_not_a_crash(self, desk) -> None:
        floor = team_definition_create(team_id="floor", name="Floor", members=["desk"])
        desk.versions.filter(version=1).update(members=["floor"])
        assert team_get("desk") is None and team_get("floor") is None
        assert floor.versions.filter(stage="published").exists()


@pytest.mark.django_db(transaction=True)
class TestOverTheApi:
    def test_the_leader_delegates_to_the_member_it_names_and_the_member_run_is_a_child_row(self, client, desk) -> None:
        response = run_team(client, "desk", "researcher, find the boiling point of water", session_id="d-1", user_id="alice")
        assert response.status_code == 200, response.content
        body = response.json()
        assert (body["status"], body["team_id"], body["team_name"]) == ("COMPLETED", "desk", "Desk")
        [member] = body["member_responses"]
        assert (member["agent_id"], member["status"]) == ("researcher", "COMPLETED")
        assert body["content"].startswith("(offline demo) The team answered: (offline demo) You said: researcher, find the boiling point")
        child = Run.objects.for_user("alice").get(parent_run_id=body["run_id"])
        assert (child.component_id, child.run_type) == ("researcher", "agent")

    def test_get_teams_lists_it_with_its_members(self, client, desk) -> None:
        teams = {team["id"]: team for team in client.get("/teams").json()}
        assert list(teams) == ["research-team", "hitl-team", "desk"]
        assert [member["id"] for member in teams["desk"]["members"]] == ["researcher", "assistant"]
        assert (teams["desk"]["mode"], teams["desk"]["is_component"]) == ("coordinate", True)
        assert client.get("/teams/desk").json() == teams["desk"]

    def test_a_draft_is_not_found_except_pinned_by_an_admin(self, client, jwt_server, desk) -> None:
        draft = draft_for(desk)
        draft.instructions = DRAFT_MARK
        draft.save(update_fields=["instructions"])
        as_user, missing = (run_team(client, "desk", "hello", version=str(version), headers=auth(token("alice", RUNNER))) for version in (2, 99))
        assert (as_user.status_code, as_user.json()) == (missing.status_code, missing.json()) == (404, {"detail": "Team not found"})
        assert DRAFT_MARK not in as_user.content.decode()
        assert run_team(client, "desk", "hello", version="1", headers=auth(token("alice", RUNNER))).status_code == 200
        by_admin = run_team(client, "desk", "hello", version="2", headers=auth(token("root", ADMIN)))
        assert by_admin.status_code == 200, by_admin.content
        assert DRAFT_MARK in json.dumps(by_admin.json()["messages"])

    def test_a_team_whose_member_has_gone_answers_team_not_found(self, client, desk) -> None:
        AgentDefinition.objects.filter(agent_id="researcher").delete()
        response = run_team(client, "desk", "researcher, anyone there?")
        assert (response.status_code, response.json()) == (404, {"detail": "Team not found"})

    def test_a_background_run_is_polled_to_its_end(self, live_api, desk, worker) -> None:
        accepted = httpx.post(f"{live_api}/teams/desk/runs", data={"message": "researcher, in the background", "background": "true", "stream": "false",
                                                                   "user_id": "alice", "session_id": "d-bg"}, timeout=30)
        assert accepted.status_code == 202, accepted.text
        run_id = accepted.json()["run_id"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            polled = httpx.get(f"{live_api}/teams/desk/runs/{run_id}", params={"session_id": "d-bg"}).json()
            if polled["status"] not in ("PENDING", "RUNNING"):
                break
            time.sleep(0.2)
        assert (polled["status"], polled["member_responses"][0]["agent_id"]) == ("COMPLETED", "researcher"), polled
