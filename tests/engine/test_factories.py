"""Factories: tools built per run from its context (``Agent(tools=fn)``), and whole components
built per request (``AgentFactory`` / ``TeamFactory`` / ``WorkflowFactory``)."""
from __future__ import annotations

import pytest

from engine import Agent, Team, Workflow, tool
from engine.factory import AgentFactory, FactoryContext, FactoryError, FactoryValidationError, TeamFactory, WorkflowFactory

# Each tenant's credential for a service its tools call.
KEYS = {"alice": "key-alice", "bob": "key-bob"}


def tenant_tools(user_id, session_state):
    """Built for each run: the lookup carries the run's user's key, and nobody else's."""
    key = KEYS[user_id]

    @tool
    def lookup(item: str) -> str:
        """Look an item up in the tenant's catalogue."""
        return f"{item} looked up with {key} in region {session_state.get('region', 'eu')}"

    return [lookup]


def test_a_tool_factory_gives_each_run_its_users_tools(make_ctx):
    agent = Agent(tools=tenant_tools)
    assert agent.is_factory and agent.functions == {}

    alice = agent.run('/call lookup {"item": "pen"}', make_ctx(user_id="alice", session_state={"region": "us"}))
    bob = agent.run('/call lookup {"item": "pen"}', make_ctx(user_id="bob"))

    assert alice["tools"][0]["result"] == "pen looked up with key-alice in region us"
    assert bob["tools"][0]["result"] == "pen looked up with key-bob in region eu"


def test_a_tool_factory_is_given_only_what_it_names(make_ctx):
    seen = {}

    def tools(run_context, dependencies, agent):
        seen.update(run_id=run_context.run_id, dependencies=dependencies, agent=agent.id)
        return []

    Agent(id="a1", tools=tools).run("hi", make_ctx(run_id="r-9", dependencies={"db": "tenant-7"}))
    assert seen == {"run_id": "r-9", "dependencies": {"db": "tenant-7"}, "agent": "a1"}


def test_a_team_leaders_tools_may_come_from_a_factory(make_ctx):
    team = Team([Agent(id="helper")], tools=tenant_tools)
    assert team.is_factory
    out = team.run('/call lookup {"item": "ink"}', make_ctx(user_id="bob"))
    assert out["tools"][0]["result"] == "ink looked up with key-bob in region eu"
    assert "delegate_task_to_member" in team.run_functions(make_ctx(user_id="bob"))


def test_a_tool_factory_must_return_a_list_and_cannot_shadow_the_agents_tools(make_ctx):
    with pytest.raises(FactoryError, match="returns a list of tools"):
        Agent(tools=lambda: "lookup").run_functions(make_ctx())
    team = Team([Agent(id="helper")], tools=lambda: [tenant_tools("bob", {})[0], *Team([Agent(id="x")]).tools])
    team.run_functions(make_ctx())  # its own tools and the team's do not collide

    @tool
    def delegate_task_to_member(member_id: str, task: str) -> str:
        """A tool named as the team's own."""
        return ""

    with pytest.raises(ValueError, match="named as the agent's own: delegate_task_to_member"):
        Team([Agent(id="helper")], tools=lambda: [delegate_task_to_member]).run_functions(make_ctx())


def test_an_agent_factory_builds_per_request_under_its_own_id(make_ctx):
    calls = []

    def build(ctx: FactoryContext) -> Agent:
        calls.append(ctx)
        return Agent(name=f"Assistant for {ctx.user_id}", instructions=f"Plan: {(ctx.input or {}).get('plan', 'free')}")

    factory = AgentFactory("tenant-assistant", build, name="Tenant assistant", input_schema={"type": "object", "required": ["plan"]})
    agent = factory.build(FactoryContext(user_id="alice", session_id="s1", input={"plan": "pro"}))

    assert agent.id == "tenant-assistant" and agent.name == "Assistant for alice" and agent.instructions == "Plan: pro"
    assert calls[0].session_id == "s1"
    with pytest.raises(FactoryValidationError, match="factory_input is missing plan"):
        factory.build(FactoryContext(user_id="alice"))


def test_a_factory_that_returns_the_wrong_kind_fails_clearly():
    with pytest.raises(FactoryError, match="returned Agent, not Team"):
        TeamFactory("t", lambda ctx: Agent()).build(FactoryContext())


def test_team_and_workflow_factories_take_their_id(make_ctx):
    team = TeamFactory("per-user-team", lambda ctx: Team([Agent(id="m")], id="other")).build(FactoryContext(user_id="bob"))
    assert team.id == "per-user-team" and team.run("hi", make_ctx())["team_id"] == "per-user-team"

    def step(step_input):
        return "done"

    workflow = WorkflowFactory("per-user-flow", lambda ctx: Workflow(steps=[step])).build(FactoryContext())
    assert workflow.id == "per-user-flow"
