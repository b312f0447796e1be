"""The offline demo model's documented grammar."""
from __future__ import annotations

import json

import jsonschema
import pytest

from engine import FatalModelError, RetryableModelError, get_model
from engine.models import ReasoningDelta, TextDelta, ToolCall, ToolSpec, Usage
from engine.models import offline

ADD = ToolSpec("add", "Add.", {"type": "object", "properties": {}})


def stream(messages, **kwargs):
    return list(get_model("offline:demo").stream(messages, **kwargs))


def text_of(chunks):
    return "".join(c.text for c in chunks if isinstance(c, TextDelta))


def test_echo_streams_word_by_word_with_word_count_usage():
    chunks = stream([{"role": "user", "content": "Hello offline world"}])

    assert chunks == [
        TextDelta("(offline "), TextDelta("demo) "), TextDelta("You "), TextDelta("said: "), TextDelta("Hello "),
        TextDelta("offline "), TextDelta("world "), TextDelta("This "), TextDelta("is "), TextDelta("the "),
        TextDelta("first "), TextDelta("message "), TextDelta("I "), TextDelta("see "), TextDelta("from "),
        TextDelta("you."),
        Usage(input_tokens=3, output_tokens=16, total_tokens=19),
    ]


def test_echo_reports_earlier_user_messages_and_the_previous_one():
    chunks = stream(
        [
            {"role": "user", "content": "My favourite colour is teal", "from_history": True},
            {"role": "assistant", "content": "Noted.", "from_history": True},
            {"role": "user", "content": "What did I say before?"},
        ]
    )

    assert text_of(chunks) == (
        "(offline demo) You said: What did I say before? "
        'I can see 1 earlier message from you; the previous one was: "My favourite colour is teal".'
    )


def test_echo_mentions_memories_from_the_system_prompt():
    system = "<memories_from_previous_interactions>\n- User's name is Ada\n- User likes tea\n</memories_from_previous_interactions>"
    chunks = stream([{"role": "system", "content": system}, {"role": "user", "content": "hi"}])

    assert text_of(chunks).endswith("I remember 2 things about you: User's name is Ada; User likes tea.")


def test_call_lines_become_several_tool_calls_in_one_turn():
    chunks = stream(
        [{"role": "user", "content": 'please\n/call add {"a": 2, "b": 3}\n/call add {"a": 1, "b": 1}\n/call now'}], tools=[ADD]
    )

    calls = [c for c in chunks if isinstance(c, ToolCall)]
    assert [(c.name, c.arguments) for c in calls] == [("add", '{"a": 2, "b": 3}'), ("add", '{"a": 1, "b": 1}'), ("now", "{}")]
    assert len({c.id for c in calls}) == 3
    assert text_of(chunks) == ""


def test_call_lines_are_ignored_without_tools_or_when_tools_are_off():
    message = [{"role": "user", "content": '/call add {"a": 2}'}]
    assert not [c for c in stream(message) if isinstance(c, ToolCall)]
    assert not [c for c in stream(message, tools=[ADD], tool_choice="none") if isinstance(c, ToolCall)]


def test_after_tool_results_it_reports_each_result_rejection_and_failure():
    chunks = stream(
        [
            {"role": "user", "content": "/call add {}"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "tool_name": "add", "content": "5"},
            {"role": "tool", "tool_call_id": "c2", "tool_name": "delete_file", "content": "Function call was rejected by the user: not today", "tool_call_error": True},
            {"role": "tool", "tool_call_id": "c3", "tool_name": "wipe", "content": "Function call was rejected by the user", "tool_call_error": True},
            {"role": "tool", "tool_call_id": "c4", "tool_name": "divide", "content": "division by zero", "tool_call_error": True},
        ],
        tools=[ADD],
    )

    assert text_of(chunks) == (
        "Tool add returned: 5\n"
        "Tool delete_file was rejected by the user: not today\n"
        "Tool wipe was rejected by the user.\n"
        "Tool divide failed: division by zero"
    )


def test_slow_spreads_the_delay_over_the_deltas_with_the_injected_sleep():
    slept: list[float] = []
    model = get_model("offline:demo", sleep=slept.append)

    chunks = list(model.stream([{"role": "user", "content": "one two\n/slow 2"}]))

    deltas = [c for c in chunks if isinstance(c, TextDelta)]
    assert len(slept) == len(deltas) == 15
    assert sum(slept) == pytest.approx(2.0)


def test_slow_uses_the_patchable_module_sleep(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(offline, "sleep", slept.append)

    stream([{"role": "user", "content": "/slow 1"}])

    assert sum(slept) == pytest.approx(1.0)


def test_fail_commands_raise_classified_errors():
    with pytest.raises(FatalModelError, match="/fail requested"):
        stream([{"role": "user", "content": "x\n/fail"}])
    with pytest.raises(RetryableModelError, match="/fail-retryable requested"):
        stream([{"role": "user", "content": "/fail-retryable"}])


def test_structured_output_validates_against_the_schema():
    schema = {
        "title": "Recipe",
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "servings": {"type": "integer", "minimum": 2},
            "rating": {"type": "number"},
            "vegan": {"type": "boolean"},
            "steps": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "course": {"enum": ["starter", "main"]},
            "author": {"$ref": "#/$defs/Person"},
            "note": {"anyOf": [{"type": "null"}, {"type": "string"}]},
        },
        "required": ["name", "servings", "rating", "vegan", "steps", "course", "author"],
        "$defs": {"Person": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
    }

    value = json.loads(text_of(stream([{"role": "user", "content": "a recipe"}], output_schema=schema)))

    jsonschema.validate(value, schema)
    assert value == {
        "name": "example name", "servings": 2, "rating": 1.0, "vegan": True, "steps": ["example steps", "example steps"],
        "course": "starter", "author": {"name": "example name"}, "note": "example note",
    }


def test_reasoning_task_streams_reasoning_deltas():
    chunks = stream([{"role": "user", "content": "Why is the sky blue?"}], task="reasoning")

    assert "".join(c.text for c in chunks if isinstance(c, ReasoningDelta)) == (
        'The user asks: "Why is the sky blue?". I will answer directly and call tools when the message asks for them.'
    )
    assert not [c for c in chunks if isinstance(c, TextDelta)]


MEMORY_TOOLS = [ToolSpec(n, "", {"type": "object"}) for n in ("add_memory", "update_memory", "delete_memory")]


def memory_calls(user_text, existing=""):
    system = f"You are a Memory Manager.\n<existing_memories>\n{existing}\n</existing_memories>"
    chunks = stream([{"role": "system", "content": system}, {"role": "user", "content": user_text}], tools=MEMORY_TOOLS, task="memory")
    return [(c.name, json.loads(c.arguments)) for c in chunks if isinstance(c, ToolCall)], text_of(chunks)


def test_memory_task_extracts_name_likes_and_remember_requests():
    calls, text = memory_calls("Hi, my name is Ada. I like green tea! Remember that I live in Lyon.")

    assert calls == [
        ("add_memory", {"memory": "User's name is Ada", "topics": ["name"]}),
        ("add_memory", {"memory": "User likes green tea", "topics": ["preferences"]}),
        ("add_memory", {"memory": "I live in Lyon", "topics": ["general"]}),
    ]
    assert text == ""


def test_memory_task_updates_the_existing_name_and_forgets_on_request():
    existing = "- memory_id: m1 | memory: User's name is Ada\n- memory_id: m2 | memory: User likes green tea"

    assert memory_calls("Actually my name is Grace", existing)[0] == [
        ("update_memory", {"memory_id": "m1", "memory": "User's name is Grace", "topics": ["name"]})
    ]
    assert memory_calls("Please forget that I like green tea", existing)[0] == [("delete_memory", {"memory_id": "m2"})]
    assert memory_calls("forget everything", existing)[0] == [("delete_memory", {"memory_id": "m1"}), ("delete_memory", {"memory_id": "m2"})]
    assert memory_calls("What is the weather?", existing) == ([], "No memory changes.")


def test_summary_task_returns_summary_json():
    transcript = "User: Plan a trip to Lisbon\nAssistant: Sure.\nUser: Add museums please"

    value = json.loads(text_of(stream([{"role": "system", "content": "Summarize"}, {"role": "user", "content": transcript}], task="summary")))

    assert value == {"summary": 'The user sent 2 messages. Most recently: "Add museums please".', "topics": ["lisbon", "museums", "please"]}


def test_markdown_answers_rich_markdown_line_by_line_and_names_its_parts():
    everything = text_of(stream([{"role": "user", "content": "/markdown"}]))
    assert everything.startswith("(offline demo) Some Markdown, to see how replies are rendered:\n\n### A code block\n\n```python\n")
    assert "\n| model | needs a key | calls the network |\n|---|---|---|\n" in everything
    assert "\n1. **Upload** a file in *My documents*.\n2. Ask the Docs Agent about it:\n   - the answer" in everything
    assert "Inline, $e^{i\\pi} + 1 = 0$; displayed:\n\n$$\n\\int_0^1 x^2 \\, dx = \\frac{1}{3}\n$$" in everything
    only = text_of(stream([{"role": "user", "content": "show me\n/markdown table math"}]))
    assert "### A table" in only and "### Math" in only and "```" not in only and "### A list" not in only
    # With tools offered and a question, /call lines and searches still come first; /markdown is the answer.
    calls = stream([{"role": "user", "content": '/markdown\n/call add {"a": 1, "b": 2}'}], tools=[ADD])
    assert [c.name for c in calls if isinstance(c, ToolCall)] == ["add"]


def test_slow_reads_the_message_typed_after_it_on_the_same_line():
    slept: list[float] = []
    model = get_model("offline:demo", sleep=slept.append)

    text = "".join(c.text for c in model.stream([{"role": "user", "content": "/slow 2 tell me a story"}]) if isinstance(c, TextDelta))

    assert sum(slept) == pytest.approx(2.0)
    assert "tell me a story" in text and "/slow" not in text and "(only commands)" not in text
