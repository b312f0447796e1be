"""Factory-built components, a compressing agent and a reasoning one (added to AGENT_MODULES by
test_factories_api.py, test_model_options_api.py and tests/ui/test_chat_reasoning.py)."""
from __future__ import annotations

from engine import Agent, Parallel, Step, Team, Workflow, get_model, tool
from engine.factory import AgentFactory, FactoryContext, FactoryPermissionError, TeamFactory, WorkflowFactory

# Each tenant's credential for the catalogue service its tools call.
KEYS = {"alice": "key-alice", "bob": "key-bob"}
PLAN_SCHEMA = {"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]}
REPORT = "".join(f"line {n}: the quarterly figure was {n * 7} units.\n" for n in range(400))


def tenant_tools(user_id):
    """The run's user's tools: the lookup carries that user's key."""
    key = KEYS.get(user_id, "no-key")

    @tool
    def lookup(item: str) -> str:
        """Look an item up in the tenant's catalogue."""
        return f"{item} looked up with {key}"

    return [lookup]


@tool(requires_confirmation=True)
def approve_order(order: str) -> str:
    """Approve an order (a person confirms it first)."""
    return f"order {order} approved"


def tenant_assistant(ctx: FactoryContext) -> Agent:
    if ctx.user_id == "mallory":
        raise FactoryPermissionError("mallory may not use the tenant assistant")
    plan = (ctx.input or {})["plan"]
    return Agent(name="Tenant assistant", instructions=f"Serve a customer on the {plan} plan.", tools=[*tenant_tools(ctx.user_id), approve_order])


def tenant_team(ctx: FactoryContext) -> Team:
    return Team([Agent(id="tenant-member", name="Tenant member", tools=tenant_tools(ctx.user_id))], name="Tenant team", mode="route")


def tenant_flow(ctx: FactoryContext) -> Workflow:
    def greet(step_input):
        return f"hello {ctx.user_id} from session state {dict(ctx.session_state or {})}"

    return Workflow(name="Tenant flow", steps=[Step(name="greet", executor=greet)])


def tenant_parallel_flow(ctx: FactoryContext) -> Workflow:
    """Two branches, each saying whom and what plan it was built for: on the background path
    each branch is a job of its own that builds the workflow again."""
    plan = (ctx.input or {})["plan"]

    def left(step_input):
        return f"left for {ctx.user_id} on {plan}"

    def right(step_input):
        return f"right for {ctx.user_id} on {plan}"

    def join(step_input):
        return f"{step_input.get_step_content('left')} | {step_input.get_step_content('right')}"

    return Workflow(name="Tenant parallel flow", steps=[Parallel(Step(name="left", executor=left), Step(name="right", executor=right), name="both"), Step(name="join", executor=join)])


@tool
def report() -> str:
    """Fetch the long quarterly report."""
    return REPORT


AGENTS = [
    Agent(id="tenant-tools", name="Tenant tools", description="Its tools are built per run", tools=tenant_tools),
    AgentFactory("tenant-assistant", tenant_assistant, name="Tenant assistant", description="Built per request", input_schema=PLAN_SCHEMA),
    Agent(id="compressing", name="Compressing", tools=[report], compress_tool_results=True),
    # Asked to reason, the offline model thinks aloud first: the chat shows it collapsed.
    Agent(id="thinking-agent", name="Thinking agent", model=get_model("offline:demo", reasoning_effort="high")),
]
TEAMS = [TeamFactory("tenant-team", tenant_team, name="Tenant team")]
WORKFLOWS = [
    WorkflowFactory("tenant-flow", tenant_flow, name="Tenant flow", input_schema=PLAN_SCHEMA),
    WorkflowFactory("tenant-parallel-flow", tenant_parallel_flow, name="Tenant parallel flow", input_schema=PLAN_SCHEMA),
]
