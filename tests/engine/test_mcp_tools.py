"""MCPTools: an agent uses the tools of real MCP servers the tests start, the bundled demo server
(``mcp_server.demo_tools``) as a stdio subprocess and over streamable HTTP on a local port, through
the engine's one tool path (schemas, events, confirmation, approval, failures as tool errors)."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from engine import Agent
from engine.tools.mcp import MCPTools, MCPToolError, python_module_command
from tests.engine.helpers import drain, names

DEMO = python_module_command("mcp_server.demo_tools")
MARS = "Mars: 2 moon(s), a day of 24.7 hours, 1.52 AU from the Sun."


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """The demo server over streamable HTTP, in a process of its own; its URL once it answers."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "mcp_server.demo_tools", "--http", str(port)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the MCP demo server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def stdio_tools() -> MCPTools:
    return MCPTools(DEMO, id="planets", timeout_seconds=60)


def test_a_stdio_servers_tools_are_listed_with_their_schemas(stdio_tools):
    specs = {f.name: f.spec() for f in stdio_tools.functions()}

    assert sorted(specs) == ["count_words", "planet_facts", "whoami"]
    assert specs["planet_facts"].parameters == {
        "type": "object", "title": "planet_factsArguments",
        "properties": {"name": {"title": "Name", "type": "string"}}, "required": ["name"],
    }
    assert specs["planet_facts"].description.startswith("Facts about a planet of the solar system")
    assert stdio_tools.last_error is None


def test_an_agent_calls_a_stdio_servers_tool_as_any_tool(stdio_tools, make_ctx):
    agent = Agent(id="assistant", name="Assistant", tools=[stdio_tools])

    run = agent.start_run('/call planet_facts {"name": "Mars"}', make_ctx())
    events = drain(run)

    assert names(events)[:6] == ["RunStarted", "ModelRequestStarted", "RunContent", "ModelRequestCompleted", "ToolCallStarted", "ToolCallCompleted"]
    (te,) = run.output["tools"]
    assert (te["tool_name"], te["tool_args"], te["result"], te["tool_call_error"]) == ("planet_facts", {"name": "Mars"}, MARS, False)
    assert run.output["status"] == "COMPLETED"
    assert MARS in run.output["content"]


def test_the_servers_own_error_is_a_failed_tool_call_not_a_failed_run(stdio_tools, make_ctx):
    agent = Agent(id="assistant", name="Assistant", tools=[stdio_tools])

    run = agent.start_run('/call planet_facts {"name": "Pluto"}', make_ctx())
    events = drain(run)

    (te,) = run.output["tools"]
    assert te["tool_call_error"] is True
    assert "No planet named 'Pluto'" in te["result"]
    assert "ToolCallError" in names(events)
    assert run.output["status"] == "COMPLETED"


def test_confirmation_and_approval_pause_mcp_tools_like_any_other(make_ctx):
    tools = MCPTools(DEMO, id="planets", timeout_seconds=60, requires_confirmation_tools=["count_words"], approval_tools=["planet_facts"])
    agent = Agent(id="assistant", name="Assistant", tools=[tools])

    counted = agent.start_run('/call count_words {"text": "one two three"}', make_ctx())
    drain(counted)
    refund_like = agent.start_run('/call planet_facts {"name": "Mars"}', make_ctx())
    drain(refund_like)

    assert counted.output["status"] == "PAUSED"
    assert (counted.output["tools"][0]["requires_confirmation"], counted.output["tools"][0]["result"]) == (True, None)
    assert refund_like.output["status"] == "PAUSED"
    assert (refund_like.output["tools"][0]["approval_type"], refund_like.output["tools"][0]["result"]) == ("required", None)

    resumed = agent.continue_run(counted.output, [{**counted.output["tools"][0], "confirmed": True}], ctx=make_ctx())
    drain(resumed)
    assert (resumed.output["status"], resumed.output["tools"][0]["result"]) == ("COMPLETED", "3")


def test_a_server_that_cannot_start_offers_no_tools_and_says_why():
    broken = MCPTools(f"{sys.executable} -m no_such_module_here", id="broken", timeout_seconds=60)

    assert broken.functions() == []
    assert broken.last_error is not None and broken.last_error.startswith("MCP server 'broken' failed on tools/list")


def test_a_server_that_dies_between_listing_and_calling_fails_the_call_with_its_reason(stdio_tools, make_ctx):
    tools = MCPTools(DEMO, id="planets", timeout_seconds=60)
    tools.functions()
    tools.command = f"{sys.executable} -m no_such_module_here"  # the next call's process fails to start
    agent = Agent(id="assistant", name="Assistant", tools=[tools])

    run = agent.start_run('/call planet_facts {"name": "Mars"}', make_ctx())
    drain(run)

    (te,) = run.output["tools"]
    assert te["tool_call_error"] is True
    assert te["result"].startswith("MCP server 'planets' failed on tools/call planet_facts")
    assert run.output["status"] == "COMPLETED"


def test_a_call_past_its_timeout_fails_with_the_time_it_was_given(make_ctx):
    # A "server" that never answers the handshake: its process reads stdin and says nothing.
    silent = MCPTools(f"{sys.executable} -c \"import sys; sys.stdin.read()\"", id="silent", timeout_seconds=1)

    with pytest.raises(MCPToolError, match=r"MCP server 'silent' did not answer tools/list within 1s"):
        import asyncio

        asyncio.run(silent.list_tools())


def test_an_http_server_on_a_private_address_is_refused_by_the_address_guard(http_server):
    guarded = MCPTools(url=http_server, id="local", timeout_seconds=30)

    assert guarded.functions() == []
    assert guarded.last_error == (
        "MCP server 'local' refused: Refusing to fetch 127.0.0.1: it resolves to 127.0.0.1 (loopback address) "
        "(allow it explicitly with allow_hosts)"
    )


def test_an_allowed_http_server_is_used_with_each_users_own_token(http_server, make_ctx):
    tokens = {"alice": "alice-secret", "bob": "bob-secret"}
    tools = MCPTools(
        url=http_server, id="local", timeout_seconds=30, allow_hosts=["127.0.0.1"],
        auth_token_getters={"Authorization": lambda ctx: tokens.get(ctx.user_id) if ctx is not None else None},
    )
    agent = Agent(id="assistant", name="Assistant", tools=[tools])

    answers = {}
    for user in ("alice", "bob"):
        run = agent.start_run("/call whoami {}", make_ctx(user_id=user))
        drain(run)
        answers[user] = run.output["tools"][0]["result"]
    facts = agent.start_run('/call planet_facts {"name": "mars"}', make_ctx())
    drain(facts)

    assert answers == {"alice": "Bearer alice-secret", "bob": "Bearer bob-secret"}
    assert facts.output["tools"][0]["result"] == MARS


def test_one_of_a_command_or_a_url_is_required():
    with pytest.raises(ValueError, match="exactly one of"):
        MCPTools()
    with pytest.raises(ValueError, match="exactly one of"):
        MCPTools("python -m x", url="http://example.com/mcp")
    with pytest.raises(ValueError, match=r"approval_tools of type 'audit' need requires_confirmation_tools too: \['planet_facts'\]"):
        MCPTools("python -m x", approval_tools={"planet_facts": "audit"})
    assert json.loads(json.dumps(MCPTools(url="https://mcp.example.com/mcp", id="x").to_dict())) == {"id": "x", "name": "x", "tools": [], "transport": "streamable-http"}


def test_importing_the_toolkit_imports_neither_the_sdk_nor_django():
    from tests.engine.test_imports import run_python

    result = run_python(
        "import json, sys\n"
        "from engine.tools.mcp import MCPTools\n"
        "MCPTools('python -m x', id='x')\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'django', 'httpx2'})))\n"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_shared_listings_are_kept_and_a_failed_one_is_not_retried_at_once(monkeypatch):
    from engine.tools import mcp

    monkeypatch.setattr(mcp, "_LISTINGS", {})
    first = MCPTools(DEMO, id="a", timeout_seconds=60, list_cache_seconds=300)
    second = MCPTools(DEMO, id="b", timeout_seconds=60, list_cache_seconds=300)
    broken = [MCPTools(f"{sys.executable} -m no_such_module_here", id=f"broken-{n}", timeout_seconds=60, list_cache_seconds=300) for n in (1, 2)]
    started = []
    listing = MCPTools.list_tools

    async def counted(self):
        started.append(self.id)
        return await listing(self)

    monkeypatch.setattr(MCPTools, "list_tools", counted)

    assert [f.name for f in first.functions()] == [f.name for f in second.functions()] == ["planet_facts", "count_words", "whoami"]
    assert (broken[0].functions(), broken[1].functions()) == ([], [])
    assert broken[1].last_error == broken[0].last_error
    assert started == ["a", "broken-1"]  # the second of each was served from the first's result
