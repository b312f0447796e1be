"""Message boundaries for continued runs (engine.checkpoints)."""
from __future__ import annotations

import pytest

from engine.checkpoints import boundary, parse_continue_from, regenerate_boundary, safe_boundary, truncate
from engine.errors import InvalidContinuation
from engine.output import RunState

CALL = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
MESSAGES = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "add"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "content": "3", "tool_call_id": "c1"},
    {"role": "assistant", "content": "It is 3."},
]


def state() -> RunState:
    return RunState.from_dict({
        "run_id": "r", "messages": [dict(m) for m in MESSAGES], "status": "COMPLETED",
        "tools": [{"tool_call_id": "c1", "tool_name": "add", "result": "3"}],
        "requirements": [{"tool_execution": {"tool_call_id": "c1"}}],
    })


@pytest.mark.parametrize(("value", "parsed"), [(None, "end"), ("", "end"), ("end", "end"), ("last_user", "last_user"), ("3", 3), (" 0 ", 0)])
def test_continue_from_values(value, parsed) -> None:
    assert parse_continue_from(value) == parsed


@pytest.mark.parametrize("value", ["-1", "start", "1.5", "3x"])
def test_bad_continue_from_values(value) -> None:
    with pytest.raises(InvalidContinuation, match="Invalid continue_from"):
        parse_continue_from(value)


def test_boundaries() -> None:
    assert boundary(MESSAGES, "end") == 5
    assert boundary(MESSAGES, "last_user") == 2
    assert boundary(MESSAGES, 3) == 3
    # Regenerating drops the final answer only: the tool exchange is kept, not called again.
    assert boundary(MESSAGES, "end", regenerate=True) == regenerate_boundary(MESSAGES) == 4
    with pytest.raises(InvalidContinuation, match="derives the continuation boundary"):
        boundary(MESSAGES, 2, regenerate=True)
    with pytest.raises(InvalidContinuation, match="no user messages"):
        boundary([{"role": "system", "content": "x"}], "last_user")
    with pytest.raises(InvalidContinuation, match="no non-assistant messages"):
        regenerate_boundary([{"role": "assistant", "content": "x"}])


def test_a_boundary_never_separates_a_call_from_its_result() -> None:
    assert safe_boundary(MESSAGES, 3) == 2  # cutting between the call and its result drops the call
    assert [safe_boundary(MESSAGES, index) for index in (0, 1, 2, 4, 5, 9)] == [0, 1, 2, 4, 5, 9]


def test_truncate_keeps_only_what_the_kept_messages_mention() -> None:
    cut = state()
    truncate(cut, 2)
    assert [m["role"] for m in cut.messages] == ["system", "user"]
    assert cut.tools == [] and cut.requirements == [] and cut.last_checkpoint_at_message_index == 2
    kept = state()
    truncate(kept, 4)
    assert len(kept.tools) == 1 and len(kept.requirements) == 1
    whole = state()
    truncate(whole, 5)  # at or past the end: nothing to cut
    assert len(whole.messages) == 5 and whole.last_checkpoint_at_message_index is None
