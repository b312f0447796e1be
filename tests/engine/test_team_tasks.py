"""Teams in tasks mode: the leader's task board, worked one model turn per iteration, against
the tool-calling fake OpenAI server (scripted per agent, as in test_team.py)."""
from __future__ import annotations

import json
import threading

from engine import tool
from tests.fakes.openai_server import Call, Failure, Reply
from tests.engine.helpers import names
from tests.engine.test_team import TEAM_TERMINAL, Scripted, agent, last_tool_results, team
from tests.engine.test_team_members import Flag

TASK_EVENTS = {"TeamTaskIterationStarted", "TeamTaskIterationCompleted", "TeamTaskStateUpdated", "TeamTaskCreated", "TeamTaskUpdated"}


def create(title: str, description: str, assignee: str, **extra) -> Call:
    return Call("create_task", {"title": title, "description": description, "assignee": assignee, **extra})


def execute(task_id: str, member_id: str) -> Call:
    return Call("execute_task", {"task_id": task_id, "member_id": member_id})


def goal_script() -> Scripted:
    return Scripted(
        crew=[
            Reply(tool_calls=[
                create("Research", "Find the capital of France", "researcher"),
                create("Write", "Write one line about Paris", "writer", depends_on=["task-1"]),
            ]),
            Reply(tool_calls=[execute("task-1", "researcher")]),
            Reply(tool_calls=[execute("task-2", "writer")]),
            Reply(tool_calls=[Call("mark_all_complete", {"summary": "Researched and wrote."})]),
            lambda r: Reply(text="Final: " + last_tool_results(r)[-2].split("Result: ")[1]),
        ],
        researcher=[Reply(text="Paris")],
        writer=[Reply(text="Paris is lovely")],
    )


def crew(**options):
    return team([agent("researcher"), agent("writer")], mode="tasks", **options)


def test_a_goal_is_worked_through_two_members_to_completion(make_ctx, openai_server):
    script = goal_script().install(openai_server)
    run = crew().start_run("Tell me about the capital of France", make_ctx())
    events = list(run)

    assert script.seen == ["crew", "crew", "researcher", "crew", "writer", "crew", "crew"]
    output = run.output
    assert (output["status"], output["content"]) == ("COMPLETED", "Final: Paris is lovely")
    assert [m["agent_id"] for m in output["member_responses"]] == ["researcher", "writer"]
    assert [m["messages"][1]["content"] for m in output["member_responses"]] == ["Find the capital of France", "Write one line about Paris"]
    assert output["tasks"] == [
        {"id": "task-1", "title": "Research", "description": "Find the capital of France", "status": "completed",
         "assignee": "researcher", "dependencies": [], "result": "Paris", "created_at": 1_796_031_773},
        {"id": "task-2", "title": "Write", "description": "Write one line about Paris", "status": "completed",
         "assignee": "writer", "dependencies": ["task-1"], "result": "Paris is lovely", "created_at": 1_796_031_773},
    ]
    board = output["session_state"]["_team_tasks"]
    assert (board["tasks"], board["goal_complete"], board["completion_summary"], board["iteration"]) == (
        output["tasks"], True, "Researched and wrote.", 4,
    )
    results = {t["tool_call_id"]: t["result"] for t in output["tools"]}
    assert [t["tool_name"] for t in output["tools"]] == ["create_task", "create_task", "execute_task", "execute_task", "mark_all_complete"]
    assert list(results.values()) == [
        "Task created: [task-1] Research (status: pending)",
        "Task created: [task-2] Write (status: blocked)",
        "Task [task-1] completed. Result: Paris",
        "Task [task-2] completed. Result: Paris is lovely",
        "Goal marked as complete. Summary: Researched and wrote.",
    ]
    executed = [t for t in output["tools"] if t["tool_name"] == "execute_task"]
    assert [t["child_run_id"] for t in executed] == [m["run_id"] for m in output["member_responses"]]
    # The closing answer is asked for with tools off.
    assert openai_server.requests[-1].body["tool_choice"] == "none"
    assert events[-1]["event"] == "TeamRunCompleted" and events[-1]["content"] == "Final: Paris is lovely"
    # Members do not see the leader's board.
    assert all("_team_tasks" not in m["session_state"] for m in output["member_responses"])


def test_task_events_come_in_order_with_their_fields(make_ctx, openai_server):
    goal_script().install(openai_server)
    events = list(crew().start_run("Tell me about the capital of France", make_ctx()))

    flow = [
        (e["event"], e.get("tool", {}).get("tool_name")) if e["event"].startswith("TeamToolCall") else e["event"]
        for e in events
        if e["event"] in TASK_EVENTS or e["event"].startswith("TeamToolCall") or e["event"] in {"RunStarted", "RunCompleted", "TeamRunCompleted"}
    ]
    assert flow == [
        "TeamTaskIterationStarted",
        ("TeamToolCallStarted", "create_task"), "TeamTaskCreated", ("TeamToolCallCompleted", "create_task"),
        ("TeamToolCallStarted", "create_task"), "TeamTaskCreated", ("TeamToolCallCompleted", "create_task"),
        "TeamTaskStateUpdated", "TeamTaskIterationCompleted",
        "TeamTaskIterationStarted",
        ("TeamToolCallStarted", "execute_task"), "TeamTaskUpdated", "RunStarted", "RunCompleted", "TeamTaskUpdated",
        ("TeamToolCallCompleted", "execute_task"),
        "TeamTaskStateUpdated", "TeamTaskIterationCompleted",
        "TeamTaskIterationStarted",
        ("TeamToolCallStarted", "execute_task"), "TeamTaskUpdated", "RunStarted", "RunCompleted", "TeamTaskUpdated",
        ("TeamToolCallCompleted", "execute_task"),
        "TeamTaskStateUpdated", "TeamTaskIterationCompleted",
        "TeamTaskIterationStarted",
        ("TeamToolCallStarted", "mark_all_complete"), ("TeamToolCallCompleted", "mark_all_complete"),
        "TeamTaskStateUpdated", "TeamTaskIterationCompleted",
        "TeamRunCompleted",
    ]
    task_events = [e for e in events if e["event"] in TASK_EVENTS]
    base = {"created_at": 1_796_031_773, "team_id": "crew", "team_name": "Crew", "run_id": "run-1", "session_id": "sess-1", "nested_depth": 0}
    assert task_events[0] == {
        **base, "event": "TeamTaskIterationStarted", "iteration": 1, "max_iterations": 10, "task_summary": "No tasks created yet.",
    }
    assert task_events[1] == {
        **base, "event": "TeamTaskCreated", "task_id": "task-1", "title": "Research", "description": "Find the capital of France",
        "assignee": "researcher", "status": "pending", "dependencies": [],
    }
    assert task_events[2]["dependencies"] == ["task-1"] and task_events[2]["status"] == "blocked"
    state = task_events[3]
    assert state["event"] == "TeamTaskStateUpdated"
    assert state["task_summary"] == (
        "Tasks (2 total: 1 pending, 1 blocked):\n"
        "  [task-1] Research - PENDING (assigned: researcher)\n"
        "  [task-2] Write - BLOCKED (assigned: writer)\n"
        "      Depends on: task-1"
    )
    assert (state["goal_complete"], [t["status"] for t in state["tasks"]]) == (False, ["pending", "blocked"])
    assert "completion_summary" not in state  # null, dropped as every event's nulls
    started, done = [e for e in task_events if e["event"] == "TeamTaskUpdated"][:2]
    assert {k: started[k] for k in ("task_id", "title", "status", "previous_status", "assignee")} == {
        "task_id": "task-1", "title": "Research", "status": "in_progress", "previous_status": "pending", "assignee": "researcher",
    }
    assert "result" not in started
    assert (done["status"], done["previous_status"], done["result"]) == ("completed", "in_progress", "Paris")
    assert task_events[-2]["goal_complete"] is True and task_events[-2]["completion_summary"] == "Researched and wrote."
    assert task_events[-1] == {**base, "event": "TeamTaskIterationCompleted", "iteration": 4, "max_iterations": 10, "task_summary": task_events[-1]["task_summary"]}
    assert "Goal marked complete: Researched and wrote." in task_events[-1]["task_summary"]


def test_max_iterations_ends_the_run_with_what_it_has_and_says_so(make_ctx, openai_server):
    script = Scripted(
        crew=[
            Reply(tool_calls=[create("Research", "Find it", "researcher")]),
            Reply(text="Working on it.", tool_calls=[execute("task-1", "researcher")]),
        ],
        researcher=[Reply(text="Found")],
    ).install(openai_server)
    run = crew(max_iterations=2).start_run("go", make_ctx())
    events = list(run)

    assert script.seen == ["crew", "crew", "researcher"]  # no third leader turn
    output = run.output
    assert output["status"] == "COMPLETED"
    assert output["content"] == (
        "Working on it.\n\nThe team stopped after 2 iterations (max_iterations) before the goal was marked complete.\n\n"
        "Tasks (1 total: 1 completed):\n  [task-1] Research - COMPLETED (assigned: researcher)\n      Result: Found"
    )
    assert [e["iteration"] for e in events if e["event"] == "TeamTaskIterationCompleted"] == [1, 2]
    assert [e["event"] for e in events if e["event"] in TEAM_TERMINAL] == ["TeamRunCompleted"]
    assert output["session_state"]["_team_tasks"]["goal_complete"] is False


def test_execute_task_on_an_unknown_member_or_task_is_an_error_result_for_the_leader(make_ctx, openai_server):
    script = Scripted(
        crew=[
            Reply(tool_calls=[create("Research", "Find it", "researcher")]),
            Reply(tool_calls=[execute("task-1", "ghost"), execute("task-9", "researcher")]),
            lambda r: Reply(text=" | ".join(result.splitlines()[0] for result in last_tool_results(r)[-2:])),
        ],
    ).install(openai_server)
    run = crew().start_run("go", make_ctx())
    list(run)

    assert script.seen == ["crew", "crew", "crew"]  # no member ran
    assert run.output["content"] == (
        "Error: member with ID ghost not found in the team. Choose a member from the list: | Error: task with ID 'task-9' not found."
    )
    assert "member_responses" not in run.output
    assert run.output["tasks"][0]["status"] == "pending"  # untouched by the failed call
    assert "- member_id: researcher | name: Researcher" in run.output["tools"][1]["result"]


def test_a_direct_answer_needs_no_tasks(make_ctx, openai_server):
    Scripted(crew=[Reply(text="Hello!")]).install(openai_server)
    run = crew().start_run("hi", make_ctx())
    events = list(run)

    assert run.output["content"] == "Hello!"
    assert "tasks" not in run.output
    assert [e["event"] for e in events if e["event"] in TASK_EVENTS] == ["TeamTaskIterationStarted", "TeamTaskIterationCompleted"]


def test_update_task_and_a_failing_member_mark_tasks(make_ctx, openai_server):
    Scripted(
        crew=[
            Reply(tool_calls=[create("Mine", "I do this", ""), create("Theirs", "Member does this", "researcher"),
                              create("After", "Depends on theirs", "writer", depends_on=["task-2"])]),
            Reply(tool_calls=[Call("update_task", {"task_id": "task-1", "status": "completed", "result": "done myself"}),
                              Call("update_task", {"task_id": "task-1", "status": "blocked"}),
                              execute("task-2", "researcher")]),
            Reply(tool_calls=[Call("list_tasks")]),
            lambda r: Reply(text=last_tool_results(r)[-1]),
        ],
        researcher=[Failure(401, "bad key")],
    ).install(openai_server)
    run = crew().start_run("go", make_ctx())
    list(run)

    output = run.output
    assert [(t["status"], t["result"]) for t in output["tasks"]] == [
        ("completed", "done myself"),
        ("failed", "Member Researcher failed: bad key"),
        ("failed", "Automatically failed: a dependency failed."),
    ]
    results = [t["result"] for t in output["tools"]]
    assert results[3:5] == [
        "Task [task-1] 'Mine' updated to completed.",
        "Invalid status 'blocked'. Must be one of: pending, in_progress, completed, failed.",
    ]
    assert results[5] == "Task [task-2] failed: Member Researcher failed: bad key"
    assert output["tools"][5]["tool_call_error"] is True
    assert output["content"].startswith("Tasks (3 total: 1 completed, 2 failed):")


@tool(requires_confirmation=True)
def publish(text: str) -> str:
    """Publish a text.

    Args:
        text: What to publish.
    """
    return f"published {text}"


def test_a_paused_member_pauses_the_team_and_continue_keeps_the_board(make_ctx, openai_server):
    script = Scripted(
        crew=[
            Reply(tool_calls=[create("Publish", "Publish hello", "writer")]),
            Reply(tool_calls=[execute("task-1", "writer")]),
            Reply(tool_calls=[Call("mark_all_complete", {"summary": "Published."})]),
            Reply(text=""),
        ],
        writer=[Reply(tool_calls=[Call("publish", {"text": "hello"}, id="call_pub")]), lambda r: Reply(text="Done: " + last_tool_results(r)[-1])],
    ).install(openai_server)

    def make():
        return team([agent("writer", tools=[publish])], mode="tasks")

    first = make().start_run("publish hello", make_ctx())
    list(first)
    paused = json.loads(json.dumps(first.output))
    assert paused["status"] == "PAUSED"
    assert paused["tasks"][0]["status"] == "pending"
    assert paused["session_state"]["_team_tasks"]["iteration"] == 2

    decision = {**paused["requirements"][0]["tool_execution"], "confirmed": True}
    run = make().continue_run(paused, [decision], ctx=make_ctx())
    events = list(run)

    assert script.seen == ["crew", "crew", "writer", "writer", "crew", "crew"]
    output = run.output
    assert (output["status"], output["content"]) == ("COMPLETED", "Published.")  # the silent answer turn
    assert output["tasks"][0] | {"created_at": 0} == {
        "id": "task-1", "title": "Publish", "description": "Publish hello", "status": "completed", "assignee": "writer",
        "dependencies": [], "result": "Done: published hello", "created_at": 0,
    }
    assert [t["result"] for t in output["tools"] if t["tool_name"] == "execute_task"] == ["Task [task-1] completed. Result: Done: published hello"]
    assert [e["iteration"] for e in events if e["event"] == "TeamTaskIterationStarted"] == [3]  # counting goes on


def test_a_later_run_of_the_session_sees_the_tasks_but_starts_a_new_goal(make_ctx, openai_server):
    script = goal_script()
    script.replies["crew"].extend([Reply(tool_calls=[Call("list_tasks")]), lambda r: Reply(text=last_tool_results(r)[-1].splitlines()[0])])
    script.install(openai_server)
    first = crew().start_run("Tell me about the capital of France", make_ctx())
    list(first)

    second = crew().start_run("what did we do?", make_ctx(run_id="run-2", session_state=first.output["session_state"]))
    events = list(second)

    assert second.output["content"] == "Tasks (2 total: 2 completed):"
    assert [e["iteration"] for e in events if e["event"] == "TeamTaskIterationStarted"] == [1, 2]
    board = second.output["session_state"]["_team_tasks"]
    assert (board["run_id"], board["goal_complete"], board["completion_summary"]) == ("run-2", False, None)
    assert names(events)[-1] == "TeamRunCompleted"


def test_several_executions_in_one_turn_run_concurrently(make_ctx, openai_server):
    writer_asked = threading.Event()

    def writer_answers(recorded):
        writer_asked.set()
        return Reply(text="W done")

    Scripted(
        crew=[
            Reply(tool_calls=[create("R", "research", "researcher"), create("W", "write", "writer")]),
            Reply(tool_calls=[execute("task-1", "researcher"), execute("task-2", "writer")]),
            Reply(tool_calls=[Call("mark_all_complete", {"summary": "both"})]),
            lambda r: Reply(text=" + ".join(t.split("Result: ")[1] for t in last_tool_results(r)[2:4])),
        ],
        # The researcher holds its answer until the writer was asked: one after the other, it
        # would wait for its gate's timeout and the writer's run would start after it ended.
        researcher=[Reply(text="R is done now", gate=writer_asked, gate_after=1, gate_timeout=10)],
        writer=[writer_answers],
    ).install(openai_server)
    run = crew().start_run("both", make_ctx())
    events = list(run)

    started = {e["agent_id"]: i for i, e in enumerate(events) if e["event"] == "RunStarted"}
    completed = {e["agent_id"]: i for i, e in enumerate(events) if e["event"] == "RunCompleted"}
    assert started["writer"] < completed["researcher"]
    assert run.output["content"] == "R is done now + W done"
    assert [t["status"] for t in run.output["tasks"]] == ["completed", "completed"]


def test_cancelling_between_iterations_keeps_the_board(make_ctx, openai_server):
    script = Scripted(crew=[Reply(tool_calls=[create("R", "research", "researcher")])]).install(openai_server)
    flag = Flag()
    run = crew().start_run("go", make_ctx(is_cancelled=flag))
    events = []
    for event in run:
        events.append(event)
        if event["event"] == "TeamTaskIterationCompleted":
            flag.value = True

    assert names(events)[-2:] == ["TeamRunCancelled", "TeamRunCompleted"]
    assert script.seen == ["crew"]
    assert run.output["status"] == "CANCELLED"
    assert run.output["tasks"][0]["title"] == "R"
    assert run.output["session_state"]["_team_tasks"]["iteration"] == 1


def test_stream_events_false_leaves_out_task_events_but_not_the_answer(make_ctx, openai_server):
    goal_script().install(openai_server)
    run = crew().start_run("Tell me about the capital of France", make_ctx(), stream_events=False)
    events = list(run)

    assert not TASK_EVENTS & set(names(events))
    assert names(events)[-1] == "TeamRunCompleted"
    assert run.output["content"] == "Final: Paris is lovely"
