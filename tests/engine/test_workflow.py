"""Workflows: the step types, chaining, session state and early stop (failures and cancellation
are in test_workflow_failures.py).

Function steps are plain Python; agent and team steps use the offline model, whose answer is an
echo of the message it was sent (``/slow`` makes it stream slowly, ``/fail`` makes it fail).
"""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from engine import (
    Agent,
    Condition,
    HumanReview,
    Loop,
    Parallel,
    Router,
    RunContext,
    Step,
    StepInput,
    StepOutput,
    Steps,
    Team,
    Workflow,
    WorkflowRun,
    tool,
)
from tests.engine.helpers import names

ECHO = "(offline demo) You said: {} This is the first message I see from you."


def upper(step_input: StepInput) -> str:
    return str(step_input.input).upper()


async def exclaim(step_input: StepInput) -> str:
    return f"{step_input.previous_step_content}!"


def run_workflow(workflow: Workflow, message: str, ctx: RunContext, **options) -> tuple[WorkflowRun, list[dict]]:
    run = workflow.start_run(message, ctx, **options)
    return run, list(run)


def workflow_events(events: list[dict]) -> list[tuple]:
    """The workflow's own events (not the executors'), with where each happened."""
    return [(e["event"], e.get("step_name"), e.get("step_index")) for e in events if "workflow_name" in e]


# ---- construction ------------------------------------------------------------------------------


def test_the_constructor_is_keyword_only():
    with pytest.raises(TypeError, match="keyword-only"):
        Workflow("my-workflow", steps=[upper])


def test_bare_agents_teams_and_functions_become_steps():
    writer = Agent(id="writer", name="Writer")
    crew = Team([Agent(id="m")], id="crew", name="Crew")
    workflow = Workflow(name="Flow", steps=[upper, writer, crew])
    assert [(type(s).__name__, s.name, s.executor_type) for s in workflow.steps] == [
        ("Step", "upper", "function"),
        ("Step", "Writer", "agent"),
        ("Step", "Crew", "team"),
    ]
    assert workflow.id == "flow"


def test_a_step_has_exactly_one_executor():
    with pytest.raises(ValueError, match="exactly one"):
        Step(name="x")
    with pytest.raises(ValueError, match="exactly one"):
        Step(name="x", agent=Agent(id="a"), executor=upper)


@pytest.mark.parametrize("owner", [Step, Steps, Loop, Condition, Router])
@pytest.mark.parametrize(
    ("flat", "field"),
    [("requires_confirmation", "requires_confirmation"), ("hitl_max_retries", "max_retries"), ("hitl_timeout", "timeout"), ("on_error", "on_error")],
)
def test_flat_review_kwargs_raise_a_type_error_naming_human_review(owner, flat, field):
    with pytest.raises(TypeError, match=rf"human_review=HumanReview\({field}="):
        owner(name="x", **{flat: 1})


# ---- chaining ----------------------------------------------------------------------------------


def test_steps_chain_their_input_and_outputs(make_ctx):
    seen: dict = {}

    def report(step_input: StepInput) -> str:
        seen.update(
            input=step_input.input,
            previous=step_input.previous_step_content,
            names=list(step_input.previous_step_outputs),
            upper=step_input.get_step_content("upper"),
            extra=step_input.additional_data,
        )
        return "done"

    workflow = Workflow(name="Chain", steps=[upper, exclaim, report])
    run, events = run_workflow(workflow, "hi", make_ctx(), additional_data={"lang": "en"})
    assert seen == {"input": "hi", "previous": "HI!", "names": ["upper", "exclaim"], "upper": "HI", "extra": {"lang": "en"}}
    assert run.output["status"] == "COMPLETED"
    assert run.output["content"] == "done"
    assert [r["content"] for r in run.output["step_results"]] == ["HI", "HI!", "done"]
    assert workflow_events(events) == [
        ("WorkflowStarted", None, None),
        ("StepStarted", "upper", 0), ("StepCompleted", "upper", 0),
        ("StepStarted", "exclaim", 1), ("StepCompleted", "exclaim", 1),
        ("StepStarted", "report", 2), ("StepCompleted", "report", 2),
        ("WorkflowCompleted", None, None),
    ]


def test_sync_functions_run_in_the_tool_pool_and_async_ones_on_the_loop(make_ctx):
    threads = {}

    def sync_step(step_input):
        threads["sync"] = threading.current_thread().name
        return "a"

    async def async_step(step_input):
        threads["async"] = threading.current_thread().name
        return "b"

    Workflow(name="T", steps=[sync_step, async_step]).run("x", make_ctx())
    assert threads["sync"].startswith("agno-tool")
    assert threads["async"] == threading.current_thread().name


def test_a_step_output_keeps_its_fields_and_non_text_content_is_typed(make_ctx):
    def structured(step_input):
        return StepOutput(content={"score": 3})

    run, events = run_workflow(Workflow(name="S", steps=[structured]), "x", make_ctx())
    completed = next(e for e in events if e["event"] == "StepCompleted")
    assert completed["content"] == {"score": 3}
    assert completed["content_type"] == "dict"
    assert completed["step_response"] == {
        "content": {"score": 3}, "step_name": "structured", "step_id": workflow_step_id(run, 0), "step_type": "Step",
        "executor_type": "function", "executor_name": "structured", "step_run_id": None, "metrics": None,
        "success": True, "error": None, "stop": False,
    }
    assert run.output["content_type"] == "dict"


def workflow_step_id(run: WorkflowRun, position: int) -> str:
    return run.workflow.steps[position].step_id


def test_the_event_shapes(make_ctx):
    run, events = run_workflow(Workflow(id="wf", name="Flow", steps=[upper]), "hi", make_ctx())
    step_id = workflow_step_id(run, 0)
    base = {"created_at": 1_796_031_773, "workflow_id": "wf", "workflow_name": "Flow", "session_id": "sess-1", "run_id": "run-1", "nested_depth": 0}
    assert events[0] == {**base, "event": "WorkflowStarted"}
    assert events[1] == {**base, "event": "StepStarted", "step_id": step_id, "step_name": "upper", "step_index": 0}
    assert events[-1] == {
        **base, "event": "WorkflowCompleted", "content": "HI", "content_type": "str",
        "step_results": run.output["step_results"], "step_executor_runs": [],
        "metrics": {"steps": {}, "duration": 0.0}, "session_state": {},
    }


# ---- agent and team steps ----------------------------------------------------------------------


def test_an_agent_step_is_a_child_run_whose_events_are_relayed(make_ctx):
    echo = Agent(id="echo", name="Echo")
    workflow = Workflow(id="wf", name="Flow", steps=[upper, echo])
    run, events = run_workflow(workflow, "hello", make_ctx())
    child = run.output["step_executor_runs"]
    assert len(child) == 1
    assert child[0]["agent_id"] == "echo"
    assert child[0]["parent_run_id"] == "run-1"
    assert child[0]["session_id"] == "sess-1"
    assert child[0]["input"] == {"input_content": "HELLO"}
    assert run.output["content"] == ECHO.format("HELLO")
    result = run.output["step_results"][1]
    assert (result["executor_type"], result["executor_name"], result["step_run_id"]) == ("agent", "Echo", child[0]["run_id"])
    assert run.output["metrics"]["steps"]["Echo"]["metrics"] == child[0]["metrics"]

    relayed = [e for e in events if "agent_id" in e]
    assert names(relayed)[0] == "RunStarted" and names(relayed)[-1] == "RunCompleted"
    for event in relayed:
        assert {k: event[k] for k in ("workflow_id", "workflow_run_id", "step_name", "step_index", "nested_depth", "parent_run_id")} == {
            "workflow_id": "wf", "workflow_run_id": "run-1", "step_name": "Echo", "step_index": 1, "nested_depth": 1, "parent_run_id": "run-1",
        }
    order = names(events)
    assert order.index("RunStarted") > order.index("StepStarted", 2)
    assert order.index("RunCompleted") < len(order) - 2


def test_an_agent_after_a_container_is_sent_its_deepest_content(make_ctx):
    loop = Loop(name="twice", steps=[upper, exclaim], max_iterations=1)
    out = Workflow(name="Flow", steps=[loop, Agent(id="echo")]).run("hey", make_ctx())
    assert out["step_executor_runs"][0]["input"] == {"input_content": "HEY!"}


def test_a_team_step_runs_the_team(make_ctx):
    crew = Team([Agent(id="scout", name="Scout")], id="crew", name="Crew", mode="route")
    run, events = run_workflow(Workflow(name="Flow", steps=[crew]), "find it", make_ctx())
    executor_runs = run.output["step_executor_runs"]
    assert [r.get("team_id") for r in executor_runs] == ["crew"]
    assert executor_runs[0]["parent_run_id"] == "run-1"
    assert run.output["step_results"][0]["executor_type"] == "team"
    assert "TeamRunStarted" in names(events) and "RunStarted" in names(events)
    member_started = next(e for e in events if e["event"] == "RunStarted")
    assert member_started["nested_depth"] == 2
    assert run.output["content"] == ECHO.format("find it")


# ---- Parallel ----------------------------------------------------------------------------------


def test_parallel_branches_run_concurrently_and_collect_in_order(make_ctx):
    first_waits = asyncio.Event()

    async def slow_first(step_input):
        # Only finishes once the second branch has run: sequential execution would hang here.
        await asyncio.wait_for(first_waits.wait(), timeout=5)
        return "first"

    async def quick_second(step_input):
        first_waits.set()
        return "second"

    workflow = Workflow(name="P", steps=[Parallel(slow_first, quick_second, name="both"), exclaim])
    run, events = run_workflow(workflow, "x", make_ctx())
    parallel = run.output["step_results"][0]
    assert [s["content"] for s in parallel["steps"]] == ["first", "second"]
    assert parallel["step_type"] == "Parallel"
    assert parallel["content"] == "## Parallel Execution Results\n\n### ✅ SUCCESS: slow_first\nfirst\n\n### ✅ SUCCESS: quick_second\nsecond"
    assert run.output["content"] == parallel["content"] + "!"
    assert workflow_events(events)[1:-1] == [
        ("ParallelExecutionStarted", "both", 0),
        ("StepStarted", "slow_first", [0, 0]),
        ("StepStarted", "quick_second", [0, 1]),
        ("StepCompleted", "quick_second", [0, 1]),
        ("StepCompleted", "slow_first", [0, 0]),
        ("ParallelExecutionCompleted", "both", 0),
        ("StepStarted", "exclaim", 1),
        ("StepCompleted", "exclaim", 1),
    ]
    started = next(e for e in events if e["event"] == "ParallelExecutionStarted")
    assert started["parallel_step_count"] == 2
    inner = next(e for e in events if e["event"] == "StepStarted")
    assert inner["parent_step_id"] == started["step_id"]
    completed = next(e for e in events if e["event"] == "ParallelExecutionCompleted")
    assert [r["content"] for r in completed["step_results"]] == ["first", "second"]


def test_parallel_agents_on_the_slow_model_take_the_time_of_the_slowest(make_ctx):
    def prompt(step_input):
        return "/slow 0.4\nreport"

    branches = [Agent(id=f"a{i}", name=f"A{i}") for i in range(4)]
    workflow = Workflow(name="P", steps=[prompt, Parallel(*branches, name="fan")])
    ctx = make_ctx(clock=time.time)
    started = time.monotonic()
    run, events = run_workflow(workflow, "x", ctx)
    elapsed = time.monotonic() - started
    assert run.output["status"] == "COMPLETED"
    assert len(run.output["step_executor_runs"]) == 4
    assert all(r["parent_run_id"] == "run-1" for r in run.output["step_executor_runs"])
    assert 0.4 <= elapsed < 1.0, elapsed  # one branch takes 0.4 s; one after another, 1.6 s
    # Events of different branches interleave: they were relayed while all four ran.
    contents = [e["step_name"] for e in events if e["event"] == "RunContent" and e.get("content")]
    assert contents[:4] != [contents[0]] * 4


# ---- Loop, Condition, Router, Steps -----------------------------------------------------------


def test_a_loop_runs_until_its_end_condition(make_ctx):
    def count(step_input, session_state):
        session_state["n"] = session_state.get("n", 0) + 1
        return session_state["n"]

    loop = Loop(name="count", steps=[count], end_condition=lambda outputs: outputs[-1].content >= 3, max_iterations=10)
    run, events = run_workflow(Workflow(name="L", steps=[loop]), "x", make_ctx())
    assert run.output["session_state"] == {"n": 3}
    assert run.output["content"] == 3
    assert run.output["step_results"][0]["content"] == "Loop count completed 3 iterations with 3 total steps"
    iterations = [(e["event"], e["iteration"], e.get("should_continue")) for e in events if e["event"].startswith("LoopIteration")]
    assert iterations == [
        ("LoopIterationStarted", 1, None), ("LoopIterationCompleted", 1, True),
        ("LoopIterationStarted", 2, None), ("LoopIterationCompleted", 2, True),
        ("LoopIterationStarted", 3, None), ("LoopIterationCompleted", 3, False),
    ]
    done = events[-2]
    assert (done["event"], done["total_iterations"], done["max_iterations"]) == ("LoopExecutionCompleted", 3, 10)


def test_a_loop_stops_at_max_iterations_and_chains_across_iterations(make_ctx):
    def grow(step_input):
        return (step_input.previous_step_content or "") + "a"

    run = Workflow(name="L", steps=[Loop(steps=[grow], max_iterations=4)]).run("x", make_ctx())
    assert run["content"] == "aaaa"
    assert len(run["step_results"][0]["steps"]) == 4


@pytest.mark.parametrize(("evaluator", "ran"), [(True, ["upper"]), (False, ["exclaim"]), (lambda si: si.input == "go", ["upper"])])
def test_a_condition_chooses_its_branch(make_ctx, evaluator, ran):
    condition = Condition(name="gate", evaluator=evaluator, steps=[upper], else_steps=[exclaim])
    run, events = run_workflow(Workflow(name="C", steps=[condition]), "go", make_ctx())
    assert [s["step_name"] for s in run.output["step_results"][0]["steps"]] == ran
    started = next(e for e in events if e["event"] == "ConditionExecutionStarted")
    completed = next(e for e in events if e["event"] == "ConditionExecutionCompleted")
    assert started["condition_result"] is (ran == ["upper"])
    assert (completed["branch"], completed["executed_steps"]) == ("if" if ran == ["upper"] else "else", 1)


def test_a_false_condition_without_else_skips(make_ctx):
    run = Workflow(name="C", steps=[upper, Condition(name="gate", evaluator=False, steps=[exclaim])]).run("go", make_ctx())
    assert run["step_results"][1]["content"] == "Condition gate not met - skipped 1 steps"
    assert run["content"] == "Condition gate not met - skipped 1 steps"


def test_a_router_runs_what_its_selector_picks(make_ctx):
    shout = Step(name="shout", executor=upper)
    polite = Step(name="polite", executor=lambda si: f"please {si.input}")
    router = Router(name="route", selector=lambda si: [shout, "polite"] if si.input == "both" else "polite", choices=[shout, polite])
    run, events = run_workflow(Workflow(name="R", steps=[router]), "both", make_ctx())
    assert [s["content"] for s in run.output["step_results"][0]["steps"]] == ["BOTH", "please both"]
    started = next(e for e in events if e["event"] == "RouterExecutionStarted")
    assert started["selected_steps"] == ["shout", "polite"]
    assert Workflow(name="R", steps=[router]).run("one", make_ctx())["content"] == "please one"


def test_a_router_selection_outside_its_choices_fails_the_workflow(make_ctx):
    router = Router(name="route", selector=lambda si: "nope", choices=[upper])
    run, events = run_workflow(Workflow(name="R", steps=[router]), "x", make_ctx())
    assert run.output["status"] == "ERROR"
    assert events[-1]["event"] == "WorkflowError"
    assert "'nope'" in events[-1]["error"]


def test_step_types_nest(make_ctx):
    def tag(label):
        def step(step_input):
            return f"{label}({step_input.previous_step_content})"

        step.__name__ = label
        return step

    workflow = Workflow(name="N", steps=[
        upper,
        Condition(name="gate", evaluator=True, steps=[
            Loop(name="twice", max_iterations=2, steps=[
                Parallel(tag("left"), Steps(name="right", steps=[tag("r1"), tag("r2")]), name="fork"),
            ]),
            Router(name="pick", selector=lambda si: "final", choices=[Step(name="final", executor=tag("final"))]),
        ]),
    ])
    run, events = run_workflow(workflow, "x", make_ctx())
    gate = run.output["step_results"][1]
    loop, router = gate["steps"]
    assert [s["step_type"] for s in loop["steps"]] == ["Parallel", "Parallel"]
    second_fork = loop["steps"][1]
    assert [s["step_name"] for s in second_fork["steps"]] == ["left", "right"]
    assert [s["content"] for s in second_fork["steps"][1]["steps"]] == [f"r1({loop['steps'][0]['content']})", f"r2(r1({loop['steps'][0]['content']}))"]
    # A function step sees the container's own content; an agent step would get the deepest one.
    assert router["steps"][0]["content"] == "final(Loop twice completed 2 iterations with 2 total steps)"
    assert run.output["content"] == router["steps"][0]["content"]
    kinds = [e["event"] for e in events if e["event"].endswith("ExecutionStarted")]
    assert kinds == ["ConditionExecutionStarted", "LoopExecutionStarted", "ParallelExecutionStarted", "StepsExecutionStarted",
                     "ParallelExecutionStarted", "StepsExecutionStarted", "RouterExecutionStarted"]


# ---- session state and early stop ------------------------------------------------------------


@tool
def remember(color: str, session_state: dict) -> str:
    """Store a colour.

    Args:
        color: The colour.
    """
    session_state["color"] = color
    return f"stored {color}"


def test_session_state_is_shared_by_function_and_agent_steps_and_returned(make_ctx):
    def first(step_input):
        step_input.session_state["visits"] = step_input.session_state.get("visits", 0) + 1
        return '/call remember {"color": "blue"}'

    def last(step_input, session_state):
        return f"{session_state['color']} after {session_state['visits']} visits, {session_state['owner']}"

    keeper = Agent(id="keeper", name="Keeper", tools=[remember])
    workflow = Workflow(name="S", steps=[first, keeper, last], session_state={"visits": 0, "owner": "default"})
    out = workflow.run("x", make_ctx(session_state={"visits": 4, "owner": "alice"}))
    assert out["content"] == "blue after 5 visits, alice"
    assert out["session_state"] == {"visits": 5, "owner": "alice", "color": "blue"}


def test_a_parallel_agent_does_not_undo_a_sibling_branchs_state_change(make_ctx):
    def start(step_input, session_state):
        session_state["notes"] = ["start"]
        return "/slow 0.2\nthink"

    async def note(step_input, session_state):
        session_state["notes"] = [*session_state["notes"], "sibling"]
        return "noted"

    # The agent gets its copy of the state first and hands it back last, unchanged.
    workflow = Workflow(name="S", steps=[start, Parallel(Agent(id="thinker"), note)])
    out = workflow.run("x", make_ctx(clock=time.time))
    assert out["step_executor_runs"][0]["session_state"] == {"notes": ["start"]}
    assert out["session_state"] == {"notes": ["start", "sibling"]}


@pytest.mark.parametrize("where", ["top", "parallel", "loop"])
def test_a_stop_ends_the_workflow_completed(make_ctx, where):
    calls = []

    def halt(step_input):
        calls.append("halt")
        return StepOutput(content="enough", stop=True)

    def after(step_input):
        calls.append("after")
        return "never"

    body = {"top": halt, "parallel": Parallel(halt, upper), "loop": Loop(steps=[halt, after], max_iterations=3)}[where]
    out = Workflow(name="E", steps=[body, after]).run("x", make_ctx())
    assert out["status"] == "COMPLETED"
    assert calls == ["halt"]
    assert len(out["step_results"]) == 1


# ---- the run protocol --------------------------------------------------------------------------


def test_stream_events_false_keeps_the_terminal_event_and_the_text(make_ctx):
    run, events = run_workflow(Workflow(name="Q", steps=[upper, Agent(id="echo")]), "hi", make_ctx(), stream_events=False)
    assert set(names(events)) == {"RunContent", "WorkflowCompleted"}
    assert run.output["status"] == "COMPLETED"


def test_a_workflow_run_iterates_asynchronously(make_ctx):
    async def main():
        run = Workflow(name="A", steps=[upper, exclaim]).start_run("hi", make_ctx())
        return [e async for e in run], run.output

    events, output = asyncio.run(main())
    assert names(events)[-1] == "WorkflowCompleted"
    assert output["content"] == "HI!"


def test_an_input_schema_validates_the_input(make_ctx):
    schema = {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}

    def topic(step_input):
        return step_input.input["topic"]

    workflow = Workflow(name="I", steps=[topic], input_schema=schema)
    assert workflow.run({"topic": "owls"}, make_ctx())["content"] == "owls"
    assert workflow.run('{"topic": "bats"}', make_ctx())["content"] == "bats"
    with pytest.raises(ValueError, match="input schema"):
        workflow.start_run({"subject": "owls"}, make_ctx())


def test_two_users_running_one_workflow_at_once_share_nothing(make_ctx):
    async def note(step_input, session_state):
        session_state.setdefault("notes", []).append(step_input.input)
        await asyncio.sleep(0)
        return f"{step_input.input}: {session_state['notes']}"

    workflow = Workflow(name="Shared", steps=[note, Parallel(Agent(id="a"), note, name="fan")], session_state={"notes": []})

    async def main():
        runs = [
            workflow.start_run("alice's", make_ctx(run_id="run-a", session_id="sess-a", user_id="alice")),
            workflow.start_run("bob's", make_ctx(run_id="run-b", session_id="sess-b", user_id="bob", session_state={"notes": ["old"]})),
        ]

        async def drain(run):
            return [e async for e in run]

        events = await asyncio.gather(*(drain(r) for r in runs))
        return runs, events

    (alice, bob), (alice_events, bob_events) = asyncio.run(main())
    assert alice.output["session_state"] == {"notes": ["alice's", "alice's"]}
    assert bob.output["session_state"] == {"notes": ["old", "bob's", "bob's"]}
    assert workflow.session_state == {"notes": []}
    assert {e["run_id"] for e in alice_events if "workflow_name" in e} == {"run-a"}
    assert {e.get("workflow_run_id") for e in bob_events if "agent_id" in e} == {"run-b"}
    assert {r["user_id"] for r in bob.output["step_executor_runs"]} == {"bob"}


def test_a_definition_describes_itself_for_the_api():
    def done(outputs):
        return True

    def pick(step_input):
        return "upper"

    writer = Agent(id="writer", name="Writer")
    workflow = Workflow(
        id="wf", name="Flow", description="Demo", metadata={"team": "docs"},
        input_schema={"type": "object", "properties": {"topic": {"type": "string"}}},
        steps=[
            Step(name="write", agent=writer, step_id="s1", max_retries=1),
            Parallel(upper, Steps(name="seq", steps=[exclaim]), name="fan", step_id="p"),
            Loop(name="again", steps=[upper], end_condition=done, step_id="l"),
            Condition(name="gate", evaluator=False, steps=[upper], step_id="c"),
            Router(name="route", selector=pick, choices=[upper], step_id="r"),
        ],
    )
    described = workflow.to_dict()
    assert (described["id"], described["name"], described["description"], described["metadata"]) == ("wf", "Flow", "Demo", {"team": "docs"})
    assert described["input_schema"] == {"type": "object", "properties": {"topic": {"type": "string"}}}
    write, fan, again, gate, route = described["steps"]
    assert write == {
        "type": "Step", "name": "write", "step_id": "s1", "description": None, "max_retries": 1, "skip_on_failure": False,
        "human_review": HumanReview().to_dict(), "agent_id": "writer",
    }
    assert [(s["type"], s["name"]) for s in fan["steps"]] == [("Step", "upper"), ("Steps", "seq")]
    assert fan["steps"][0]["executor_ref"] == "upper"
    assert (again["type"], again["end_condition"], again["max_iterations"]) == ("Loop", "done", 3)
    assert (gate["type"], gate["evaluator"], gate["else_steps"]) == ("Condition", False, [])
    assert (route["type"], route["selector"], [c["name"] for c in route["choices"]]) == ("Router", "pick", ["upper"])


@pytest.mark.parametrize("inside", ["agent step", "team step's member"])
def test_a_run_inside_runs_as_its_parents_caller_in_its_own_context(make_ctx, inside):
    seen: list = []

    @tool
    def whoami(run_context) -> str:
        """Say who this run is for."""
        seen.append(run_context)
        return "noted"

    worker = Agent(id="worker", name="Worker", tools=[whoami])
    step = worker if inside == "agent step" else Team([worker], id="crew", name="Crew", mode="coordinate")
    parent = make_ctx(
        principal="alice's principal", dependencies={"region": "eu"}, metadata={"tag": "t"},
        knowledge_filters={"lang": "en"}, memories=[{"memory_id": "m1", "memory": "likes owls", "topics": []}],
        session_summary={"summary": "earlier"}, learned_profile={"name": "Alice"},
    )
    out = Workflow(name="W", steps=[step]).run('/call whoami {}', parent)

    assert out["status"] == "COMPLETED"
    [child] = seen
    carried = ("session_id", "user_id", "principal", "dependencies", "metadata", "knowledge_filters", "memories", "is_cancelled", "clock", "sleep")
    assert {name: getattr(child, name) for name in carried} == {name: getattr(parent, name) for name in carried}
    assert child.run_id != parent.run_id
    assert (child.session_summary, child.learned_profile, child.parallel_branches) == (None, None, None)
