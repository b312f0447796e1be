"""The docs agent, team and workflow `make run` serves beside the seeded demo agent (AGENT_MODULES=agents.demo).

Teams and workflows are defined in code, so the demo's are here rather than seeded into the
database like the demo agent. Like that agent they run on OpenAI when OPENAI_API_KEY is set, else
on the offline model. ``FUNCTIONS`` are the functions a workflow composed in the admin may name
(as a step, a Condition's evaluator, a Router's selector or a Loop's end condition).

The docs agent is the chat's first (default) agent: it searches the user's own documents (*My
documents*, the deployment's default base, with the shared ones) and a small handbook held in
memory, so sources can be seen before anything is uploaded, and an uploaded file is answered from
at once. The team's writer has the demo actions (``send_email`` asks the user to confirm;
``issue_refund`` waits for an operator); the workflow runs two agents in parallel, asks which fact
to double-check when the message says "double-check" (a review nested in a Condition), then waits
for a person to confirm before it "publishes". The planets agent uses the tools of an MCP server, the
small one bundled in ``mcp_server.demo_tools``, started as a stdio subprocess on its first run;
its ``count_words`` asks the user to confirm first.
"""
from __future__ import annotations

import os

from django.conf import settings

from engine import Agent, CalculatorTools, Condition, HumanReview, Parallel, StaticKnowledge, Step, StepInput, StepOutput, Team, Workflow, tool
from engine.factory import AgentFactory, FactoryContext
from agents.knowledge import NamedKnowledge
from agents.toolkits import DemoActionTools
from engine.tools.mcp import MCPTools, python_module_command
from learnings.machines import LEARNING_MACHINES

MODEL = "openai:gpt-4o-mini" if os.environ.get("OPENAI_API_KEY") else "offline:demo"

# One toolkit for the process: its server's tools are listed on the planets agent's first run (a
# tool factory, so importing this module starts no subprocess), then kept.
# Counting words waits for the user's confirmation, as an operator's MCP tool policy makes a tool
# of an allow-listed server wait for admin agents.
PLANETS_MCP = MCPTools(
    python_module_command("mcp_server.demo_tools"), id="mcp:demo", name="mcp:demo", timeout_seconds=30, cwd=str(settings.BASE_DIR),
    requires_confirmation_tools=["count_words"],
)


def planets_tools() -> list[MCPTools]:
    return [PLANETS_MCP]


HANDBOOK = StaticKnowledge(
    "Agno Site handbook",
    [
        {"name": "Runs", "content": "A run is created the same way whatever the transport: it is committed RUNNING with its input before the model is called, and ends completed, error, cancelled or paused."},
        {"name": "Background jobs", "content": "Background jobs are committed rows first, then handed to Celery. A worker claims a job and holds a lease with heartbeats; a periodic reaper re-queues or fails expired leases, so a killed worker loses nothing."},
        {"name": "Tenancy", "content": "Every row that belongs to someone carries user_id, and the default manager refuses to be evaluated until it is scoped with for_user. A forgotten filter is an exception in tests, never a leak."},
        {"name": "Schedules", "content": "Schedules fire once: a fire first claims its (schedule, scheduled_for) row, and only the claimer submits, so replicas or a second beat never double-fire."},
        {"name": "Knowledge", "content": "Contents are ingested by background jobs that read, chunk and embed them. Chunks carry user_id; the tenant filter runs in the same query as the vector scan, so a user's top results are complete."},
        {"name": "Offline model", "content": "Without a provider key the built-in offline model answers: deterministic, no network, and clearly labelled as a demo. It searches the knowledge base when asked a question."},
    ],
    id="agno-site-handbook",
    description="A few facts about how Agno Site works (in memory)",
)

def trip_planner(ctx: FactoryContext) -> Agent:
    """The demo factory: an agent built for each run from its ``factory_input`` (the chat's setup
    fields above the message box), here the traveller's home city, which its tool answers."""
    home = str((ctx.input or {}).get("home_city") or "")

    @tool
    def home_city() -> str:
        """The city the traveller starts from."""
        return f"{ctx.user_id or 'You'} start(s) from {home}"

    return Agent(name="Trip Planner", model=MODEL, instructions=f"The traveller starts from {home}; plan trips from there.", tools=[home_city])


AGENTS: list[Agent | AgentFactory] = [  # the team's members answer through the team only
    Agent(
        id="demo-docs",
        name="Docs Agent",
        description="Answers from your documents (My documents) and the Agno Site handbook, and shows the sources it used",
        model=MODEL,
        # The user's own documents first (equal scores keep this order), then the handbook. The base
        # is named, as an admin agent names one: the knowledge app's provider searches it.
        knowledge=[NamedKnowledge(settings.KNOWLEDGE_DEFAULT_BASE), HANDBOOK],
        instructions="Answer from the knowledge base (the user's documents and the handbook), citing the document each fact comes from; say so when it has nothing on the question.",
        markdown=True,
    ),
    Agent(
        id="demo-planets",
        name="Planets Agent (MCP)",
        description="Answers with the tools of a small MCP server (planet_facts; count_words, which asks you first), started as a stdio subprocess",
        model=MODEL,
        tools=planets_tools,
        instructions="Use planet_facts for any question about a planet, and count_words to count words.",
    ),
    # Learning on (Agno v3's LearningMachine, the registry's "full" machine): tell it "my name is
    # Ada" or "I like green tea", then ask "what do you know about me?" in a new chat; "Acme is a
    # company that uses PostgreSQL. We decided to use it because it is reliable." records an entity
    # and a decision through its learning tools. What it learned is under My learnings.
    Agent(
        id="demo-learner",
        name="Learning Agent",
        description="Learns about you as you chat (Agno v3 learning) and remembers it in every new chat",
        model=MODEL,
        learning=LEARNING_MACHINES["full"][0],
        instructions="Use what you have learned about the user to personalise your answers.",
    ),
    AgentFactory(
        "demo-planner", trip_planner, name="Trip Planner", description="A factory: built for each run from its setup (your home city)",
        input_schema={"type": "object", "properties": {"home_city": {"type": "string", "description": "Where you start from"}}, "required": ["home_city"]},
    ),
]

TEAMS = [
    Team(
        id="demo-team",
        name="Demo Team",
        description="A researcher and a writer: the leader hands each part of the question to the member it fits.",
        members=[
            Agent(id="demo-researcher", name="Researcher", description="Finds facts and works out numbers", model=MODEL, tools=[CalculatorTools()]),
            Agent(
                id="demo-writer",
                name="Writer",
                description="Writes clear, short prose and sends it by email (after the user confirms)",
                model=MODEL,
                tools=[DemoActionTools()],
            ),
        ],
        mode="coordinate",
        model=MODEL,
        instructions="Delegate research and arithmetic to the Researcher, and the final wording and any email to the Writer, then answer.",
        add_history_to_context=True,
    ),
]


def combine(step_input: StepInput) -> StepOutput:
    """A step: every earlier step's output, one section each (after a Parallel, say)."""
    return StepOutput(content=step_input.get_all_previous_content() or step_input.get_input_as_string() or "")


def is_question(step_input: StepInput) -> bool:
    """A Condition's evaluator: the workflow's input ends with a question mark."""
    return str(step_input.input or "").rstrip().endswith("?")


def long_enough(outputs: list[StepOutput]) -> bool:
    """A Loop's end condition: some output of the iteration has 50 words or more."""
    return any(len(str(output.content or "").split()) >= 50 for output in outputs)


def asks_to_double_check(step_input: StepInput) -> bool:
    """A Condition's evaluator: the workflow's input asks for a double-check."""
    return "double-check" in str(step_input.input or "").lower()


def fact_check(step_input: StepInput) -> StepOutput:
    """The demo workflow's nested review: notes the fact a person asked to double-check."""
    fact = ((step_input.additional_data or {}).get("user_input") or {}).get("fact") or ""
    return StepOutput(content=f"Double-checked (demo: noted for the editor): {fact}")


def publish(step_input: StepInput) -> StepOutput:
    """The demo workflow's last step, run once a person confirmed it: "publishes" the brief."""
    combined = step_input.get_step_output("combine")
    checked = step_input.get_step_output("fact check")
    brief = str(combined.content if combined is not None else step_input.get_last_step_content() or "")
    if checked is not None:
        brief = f"{brief}\n\n{checked.content}"
    return StepOutput(content=f"Published (demo: nothing left the server):\n\n{brief}")


FUNCTIONS = [combine, is_question, long_enough]

def sign_off(run_output: dict) -> None:
    """Adds a sign-off line under each answer (a demo post-hook)."""
    run_output["content"] = f"{run_output.get('content') or ''}\n\n— signed off by the demo post-hook"


# The post-hooks an agent or team composed in the admin may pick (its draft's Post-hooks).
POST_HOOKS = [sign_off]

# What the chat offers on an empty conversation with each demo component (/config's
# chat.quick_prompts); an operator adds more in the admin (Quick prompts).
QUICK_PROMPTS = {
    "demo-docs": ["How does a killed worker lose nothing?", "What does the offline model do?"],
    "demo": ['/call add {"a": 2, "b": 40}', "My name is Ada"],
    "demo-team": ["Ask the Researcher what 6 times 7 is."],
    "demo-planner": ["/call home_city {}"],
    "demo-workflow": ["Brief me on background jobs", "Brief me on background jobs, and double-check it"],
}

WORKFLOWS = [
    Workflow(
        id="demo-workflow",
        name="Demo Workflow",
        description=(
            "A brief: a researcher and the docs agent work in parallel, their notes are combined, a person names a fact to "
            "double-check when asked to (say \"double-check\"), and a person confirms before it is published."
        ),
        steps=[
            Parallel(
                Step(name="research", agent=Agent(id="demo-flow-researcher", name="Researcher", model=MODEL, tools=[CalculatorTools()])),
                Step(name="handbook", agent=Agent(id="demo-flow-docs", name="Docs", model=MODEL, knowledge=HANDBOOK, markdown=True)),
                name="gather",
            ),
            Step(name="combine", executor=combine),
            Condition(
                name="double-check",
                evaluator=asks_to_double_check,
                steps=[Step(
                    name="fact check",
                    executor=fact_check,
                    # A review nested in a Condition: the run pauses inside it and goes on from there.
                    human_review=HumanReview(
                        requires_user_input=True,
                        user_input_message="Which fact should be double-checked?",
                        user_input_schema=[{"name": "fact", "field_type": "str", "description": "The fact, and where to check it"}],
                    ),
                )],
            ),
            Step(
                name="publish",
                executor=publish,
                human_review=HumanReview(requires_confirmation=True, confirmation_message="Publish this brief?", on_reject="cancel"),
            ),
        ],
    ),
]
