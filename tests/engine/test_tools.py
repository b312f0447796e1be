from __future__ import annotations

import json
from typing import Literal, Optional

import pytest

from engine import CalculatorTools, DateTimeTools, Function, HttpFetchTools, Toolkit, Workspace, tool


def test_bare_decorator_builds_schema_from_hints_and_google_docstring():
    @tool
    def search(
        query: str,
        limit: int = 5,
        ratio: float = 0.5,
        exact: bool = False,
        tags: list[str] | None = None,
        filters: dict[str, int] | None = None,
        sort: Literal["asc", "desc"] = "asc",
        owner: Optional[str] = None,
        session_state: dict | None = None,
    ) -> str:
        """Search the catalogue.

        Longer explanation that is not part of the description.

        Args:
            query: What to look for,
                spanning two lines.
            limit (int): How many results.
            tags: Tags to filter on.

        Returns:
            The results.
        """
        return query

    assert isinstance(search, Function)
    assert search.spec().name == "search"
    assert search.spec().description == "Search the catalogue."
    assert search.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for, spanning two lines."},
            "limit": {"type": "integer", "description": "How many results."},
            "ratio": {"type": "number"},
            "exact": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags to filter on."},
            "filters": {"type": "object", "additionalProperties": {"type": "integer"}},
            "sort": {"enum": ["asc", "desc"], "type": "string"},
            "owner": {"type": "string"},
        },
        "required": ["query"],
    }
    assert search("still callable") == "still callable"


def test_decorator_with_options():
    @tool(name="send", description="Send an email.", requires_user_input=True, user_input_fields=["to"], stop_after_tool_call=True)
    def send_email(subject: str, to: str) -> str:
        return f"sent {subject} to {to}"

    assert (send_email.name, send_email.description) == ("send", "Send an email.")
    assert send_email.requires_user_input and send_email.stop_after_tool_call and send_email.pauses
    assert send_email.parameters == {"type": "object", "properties": {"subject": {"type": "string"}}, "required": ["subject"]}
    assert send_email.user_input_schema({"subject": "Hi"}) == [
        {"name": "subject", "field_type": "str", "description": None, "value": "Hi"},
        {"name": "to", "field_type": "str", "description": None, "value": None},
    ]


def test_user_input_fields_must_be_parameters():
    with pytest.raises(ValueError, match=r"user_input_fields \['nope'\]"):
        tool(user_input_fields=["nope"])(lambda a: a)


def test_execute_injects_session_state_and_coerces_scalars():
    @tool
    def remember(count: int, flag: bool, session_state: dict) -> str:
        session_state["count"] = count
        return f"{count + 1} {flag}"

    state: dict = {}
    assert remember.execute({"count": "41", "flag": "true"}, session_state=state) == "42 True"
    assert state == {"count": 41}
    assert "session_state" not in remember.parameters["properties"]


class Greeter(Toolkit):
    id = "greeter"
    name = "greeter_tools"

    def __init__(self, greeting: str, **kwargs):
        self.greeting = greeting
        super().__init__(**kwargs)

    @tool
    def greet(self, name: str) -> str:
        """Greet someone."""
        return f"{self.greeting}, {name}"

    @tool(requires_confirmation=True)
    def shout(self, name: str) -> str:
        return f"{self.greeting.upper()}, {name.upper()}!"


def test_toolkit_binds_methods_and_exposes_a_stable_id():
    kit = Greeter("Hello")

    assert kit.to_dict() == {"id": "greeter", "name": "greeter_tools", "tools": ["greet", "shout"]}
    greet, shout = kit.functions()
    assert greet.execute({"name": "Ada"}) == "Hello, Ada"
    assert shout.requires_confirmation
    assert "self" not in greet.parameters["properties"]
    assert Greeter("Hi", id="greeter-2", include_tools=["greet"]).to_dict() == {"id": "greeter-2", "name": "greeter_tools", "tools": ["greet"]}
    assert Greeter("Hi", requires_confirmation_tools=["greet"]).functions()[0].requires_confirmation
    with pytest.raises(ValueError, match="unknown tools"):
        Greeter("Hi", exclude_tools=["wave"])


@pytest.mark.parametrize(("kit", "toolkit_id"), [(CalculatorTools(), "calculator"), (DateTimeTools(), "datetime"), (HttpFetchTools(), "http")])
def test_builtin_toolkits_have_v3_ids(kit, toolkit_id):
    assert kit.id == toolkit_id


def test_workspace_toolkit_id(tmp_path):
    assert Workspace(tmp_path).to_dict() == {"id": "workspace", "name": "workspace", "tools": ["read_file", "list_files", "search_content", "write_file"]}


def calculator(name: str, **args):
    function = next(f for f in CalculatorTools().functions() if f.name == name)
    return json.loads(function.execute(args))


def test_calculator_operations():
    assert calculator("add", a=2, b=3) == {"operation": "addition", "result": 5.0}
    assert calculator("subtract", a=2, b=3) == {"operation": "subtraction", "result": -1.0}
    assert calculator("multiply", a=2, b=3.5) == {"operation": "multiplication", "result": 7.0}
    assert calculator("divide", a=3, b=2) == {"operation": "division", "result": 1.5}
    assert calculator("exponentiate", a=2, b=10) == {"operation": "exponentiation", "result": 1024.0}
    assert calculator("factorial", n=5) == {"operation": "factorial", "result": 120}
    assert calculator("is_prime", n=97) == {"operation": "prime_check", "result": True}
    assert calculator("square_root", n=16) == {"operation": "square_root", "result": 4.0}


def test_calculator_impossible_operations_are_error_results_not_exceptions():
    assert calculator("divide", a=1, b=0) == {"operation": "division", "error": "Division by zero is undefined"}
    assert calculator("square_root", n=-1) == {"operation": "square_root", "error": "Square root of a negative number is undefined"}
    assert calculator("factorial", n=-2) == {"operation": "factorial", "error": "Factorial of a negative number is undefined"}


def test_datetime_tools_use_the_injected_clock_and_timezones():
    kit = DateTimeTools(clock=lambda: 1_796_031_773.0)
    function = kit.functions()[0]

    assert json.loads(function.execute({"timezone": "Asia/Tokyo"})) == {
        "timezone": "Asia/Tokyo", "datetime": "2026-11-30T18:42:53+09:00", "date": "2026-11-30",
        "time": "18:42:53", "weekday": "Monday", "utc_offset": "+0900",
    }
    assert json.loads(function.execute({}))["datetime"] == "2026-11-30T09:42:53+00:00"
    with pytest.raises(ValueError, match="Unknown timezone 'Mars/Olympus'"):
        function.execute({"timezone": "Mars/Olympus"})


def test_async_and_generator_tools_and_optional_coercion():
    @tool
    async def fetch_number(n: Optional[int] = None) -> int:
        return (n or 0) * 2

    @tool
    def count(upto: int):
        yield from (str(i) for i in range(upto))

    assert fetch_number.execute({"n": "21"}) == 42
    assert count.execute({"upto": 4}) == "0123"


def test_async_tools_run_even_when_the_calling_thread_has_an_event_loop():
    import asyncio

    @tool
    async def double(n: int) -> int:
        return n * 2

    async def inside_a_loop():
        return double.execute({"n": 4})

    # In a thread of its own: the test runner's main thread may already run a loop (Playwright's).
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(asyncio.run, inside_a_loop()).result() == 8
