"""MCP servers' tools for an agent: ``MCPTools``, one toolkit per Model Context Protocol server.

A server is a command run as a stdio subprocess (``MCPTools("python -m some.server")``) or a
streamable HTTP endpoint (``MCPTools(url="https://mcp.example/mcp")``). Its tools are listed with
their JSON schemas the first time the agent asks for them, and each call goes through the engine's
one tool path (``engine.runner``): ``requires_confirmation_tools`` and ``approval_tools`` pause a
call for a human or an operator exactly as ``@tool`` flags do, the call's events and timings are a
tool call's, and a call that fails (server down, refused address, timeout, the server's own error)
is a failed tool call whose text says why, never a failed run.

Each call opens its own connection (a subprocess, or an HTTP session) and closes it: nothing is
shared between runs or users, and a run on one event loop never uses a connection another loop
opened. A server that keeps state between calls of one session is therefore not supported.

``auth_token_getters`` maps an HTTP header to a function of the run's context (its ``user_id``,
``session_id``) returning the token to send for that call, so each user's calls carry that user's
credential: ``{"Authorization": lambda ctx: vault.token_for(ctx.user_id)}`` sends
``Authorization: Bearer <token>``; any other header gets the token as it is. When tools are
listed there is no run: the getters receive ``None``.

HTTP servers pass the same address guard as the ``http`` tool (``HttpFetchTools``): a URL that
resolves to a loopback, private or otherwise non-public address is refused unless its host or
network is in ``allow_hosts``. The guard checks every connection; the connection itself is made by
the MCP SDK's HTTP client, which is not pinned to the checked address (a DNS answer that changes
between the check and the connect is not caught, as it is for ``http``).

The engine imports no Django: settings (the operator's allow-list) are applied by
``agents.toolkits``, which builds these toolkits for the admin.
"""
from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import inspect
import json
import logging
import shlex
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from engine.tools.function import APPROVAL_TYPES, Function
from engine.tools.http_fetch import HttpFetchTools
from engine.tools.toolkit import Toolkit

logger = logging.getLogger("agno_site.tools.mcp")

TokenGetter = Callable[[Any], "str | None | Awaitable[str | None]"]
TRANSPORTS = ("stdio", "streamable-http")
_LISTINGS: dict[tuple[Any, ...], tuple[float, Any]] = {}  # a listing, or the MCPToolError it ended in
FAILED_LISTING_SECONDS = 30.0
_LISTINGS_LOCK = threading.Lock()


class MCPToolError(RuntimeError):
    """An MCP call that did not give a result: its text is what the model (and the run's tool
    execution) sees as the failed call's result."""


@dataclass(frozen=True)
class MCPFunction(Function):
    """A tool of an MCP server: its JSON schema is the server's, not one built from type hints."""

    input_schema: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def parameters(self) -> dict[str, Any]:
        schema = dict(self.input_schema or {})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        return schema


class MCPTools(Toolkit):
    """The tools of one MCP server (see the module's docstring)."""

    def __init__(
        self,
        command: str | None = None,
        *,
        url: str | None = None,
        transport: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        id: str | None = None,
        name: str | None = None,
        timeout_seconds: float = 10.0,
        include_tools: Iterable[str] | None = None,
        exclude_tools: Iterable[str] | None = None,
        requires_confirmation_tools: Iterable[str] = (),
        approval_tools: Mapping[str, str] | Iterable[str] = (),
        tool_name_prefix: str | None = None,
        headers: Mapping[str, str] | None = None,
        auth_token_getters: Mapping[str, TokenGetter] | None = None,
        allow_hosts: Iterable[str] | str = (),
        instructions: str | None = None,
        list_cache_seconds: float = 0.0,
    ) -> None:
        if (command is None) == (url is None):
            raise ValueError("MCPTools needs exactly one of a command (stdio) or a url (streamable HTTP)")
        transport = transport or ("streamable-http" if url else "stdio")
        if transport not in TRANSPORTS:
            raise ValueError(f"MCPTools transport must be one of {TRANSPORTS}, not {transport!r}")
        if (transport == "stdio") != (command is not None):
            raise ValueError(f"transport {transport!r} does not fit {'a command' if command else 'a url'}")
        if timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        self.transport = transport
        self.command = command
        self.url = url
        self.env = dict(env or {})
        self.cwd = cwd
        self.timeout_seconds = float(timeout_seconds)
        self.tool_name_prefix = tool_name_prefix or ""
        self.headers = dict(headers or {})
        self.auth_token_getters = dict(auth_token_getters or {})
        self._include = None if include_tools is None else set(include_tools)
        self._exclude = set(exclude_tools or ())
        self._confirm = set(requires_confirmation_tools)
        if isinstance(approval_tools, Mapping):
            self._approval = dict(approval_tools)
        else:
            self._approval = {tool_name: "required" for tool_name in approval_tools}
        bad = sorted(kind for kind in self._approval.values() if kind not in APPROVAL_TYPES)
        if bad:
            raise ValueError(f"approval_tools types must be one of {APPROVAL_TYPES}, not {bad}")
        unconfirmed = sorted(name for name, kind in self._approval.items() if kind == "audit" and name not in self._confirm)
        if unconfirmed:  # as @approval(type="audit"): it records a human's decision, so one must be asked
            raise ValueError(f"approval_tools of type 'audit' need requires_confirmation_tools too: {unconfirmed}")
        self._guard = HttpFetchTools(allow_hosts=allow_hosts) if url else None
        self.list_cache_seconds = float(list_cache_seconds)
        self._listed: list[Function] | None = None
        self._listing = threading.Lock()
        self.last_error: str | None = None
        target = url or command or ""
        default_id = "mcp-" + hashlib.sha256(target.encode()).hexdigest()[:10]
        super().__init__(id=id or default_id, name=name or id or default_id, instructions=instructions)

    # ---- listing --------------------------------------------------------------------------

    def functions(self) -> list[Function]:
        """The server's tools, listed once (on first use) and kept. A server that cannot be
        listed offers no tools this time, and is asked again next time (``last_error`` says why)."""
        with self._listing:  # runs that start together wait for one listing, not one each
            if self._listed is None:
                try:
                    tools = self._cached_listing()
                except MCPToolError as exc:
                    self.last_error = str(exc)
                    logger.warning("MCP server could not be listed", extra={"toolkit": self.id, "error": str(exc)})
                    return []
                self.last_error = None
                self._listed = self._functions_for(tools)
            return list(self._listed)

    def _cached_listing(self) -> list[Any]:
        """A listing another toolkit of the same server made less than ``list_cache_seconds`` ago
        (toolkits built per run, as the admin's agents are, would otherwise start a server each
        time), or a fresh one. Listings carry no run's credentials, so sharing them is safe."""
        key = (self.transport, self.command or self.url, tuple(sorted(self.env.items())), tuple(sorted(self.headers.items())))
        now = time.monotonic()
        if self.list_cache_seconds > 0:
            with _LISTINGS_LOCK:
                cached = _LISTINGS.get(key)
            # A failure is kept a little while too: an unreachable server would otherwise cost its
            # whole timeout on every build of every agent that names it (GET /agents included).
            keep = self.list_cache_seconds if cached is not None and not isinstance(cached[1], MCPToolError) else min(self.list_cache_seconds, FAILED_LISTING_SECONDS)
            if cached is not None and now - cached[0] < keep:
                if isinstance(cached[1], MCPToolError):
                    raise cached[1]
                return cached[1]
        try:
            tools = _blocking(self.list_tools())
        except MCPToolError as exc:
            if self.list_cache_seconds > 0:
                with _LISTINGS_LOCK:
                    _LISTINGS[key] = (now, exc)
            raise
        if self.list_cache_seconds > 0:
            with _LISTINGS_LOCK:
                _LISTINGS[key] = (now, tools)
        return tools

    async def list_tools(self) -> list[Any]:
        """The server's tools (``mcp.types.Tool``), every page of them."""
        async with self._session(None, "tools/list") as client:
            tools: list[Any] = []
            cursor = None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools

    def _functions_for(self, tools: list[Any]) -> list[Function]:
        names = {tool.name for tool in tools}
        for option, wanted in (("include_tools", self._include or ()), ("exclude_tools", self._exclude),
                               ("requires_confirmation_tools", self._confirm), ("approval_tools", self._approval)):
            unknown = sorted(set(wanted) - names)
            if unknown:  # the server's tools may change under a configuration: say so, go on
                logger.warning("MCP toolkit option names tools the server lacks", extra={"toolkit": self.id, "option": option, "tools": unknown})
        found: list[Function] = []
        for tool in tools:
            if self._include is not None and tool.name not in self._include:
                continue
            if tool.name in self._exclude:
                continue
            approval_type = self._approval.get(tool.name)
            confirm = tool.name in self._confirm or approval_type == "required"
            found.append(
                MCPFunction(
                    name=self.tool_name_prefix + tool.name,
                    description=tool.description or tool.title or tool.name,
                    entrypoint=self._caller(tool.name),
                    injected=frozenset({"run_context"}),
                    requires_confirmation=confirm,
                    approval_type=approval_type,
                    input_schema=dict(tool.input_schema or {}),
                )
            )
        return found

    # ---- calling --------------------------------------------------------------------------

    def _caller(self, tool_name: str) -> Callable[..., Awaitable[str]]:
        async def call(run_context: Any = None, **arguments: Any) -> str:
            return await self.call_tool(tool_name, arguments, run_context=run_context)

        call.__name__ = tool_name
        return call

    async def call_tool(self, tool_name: str, arguments: Mapping[str, Any], *, run_context: Any = None) -> str:
        """Call one tool of the server; its text result, or MCPToolError with the reason."""
        async with self._session(run_context, f"tools/call {tool_name}") as client:
            result = await client.call_tool(tool_name, dict(arguments), read_timeout_seconds=self.timeout_seconds)
        text = _result_text(result)
        if result.is_error:
            raise MCPToolError(text or f"The MCP server's tool {tool_name} failed")
        return text

    @asynccontextmanager
    async def _session(self, run_context: Any, what: str) -> AsyncIterator[Any]:
        """A connected, initialized MCP client for one operation, with every failure to connect
        or answer (in time) turned into MCPToolError naming the server."""
        from mcp import Client

        label = self._label()
        try:
            server = await self._server(run_context)
            async with asyncio.timeout(self.timeout_seconds):
                async with Client(server, mode="legacy", read_timeout_seconds=self.timeout_seconds, cache=None) as client:
                    yield client
        except MCPToolError:
            raise
        except TimeoutError:
            raise MCPToolError(f"MCP server {label} did not answer {what} within {self.timeout_seconds:g}s") from None
        except Exception as exc:  # the SDK's transport and protocol errors, often in groups
            reason = _reason(exc)
            raise MCPToolError(f"MCP server {label} failed on {what}: {reason}") from None

    async def _server(self, run_context: Any) -> Any:
        if self.transport == "stdio":
            from mcp import StdioServerParameters

            parts = shlex.split(self.command or "")
            if not parts:
                raise MCPToolError("The MCP server's command is empty")
            executable = sys.executable if parts[0] in ("python", "python3") else parts[0]
            return StdioServerParameters(command=executable, args=parts[1:], env=self.env or None, cwd=self.cwd)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        assert self.url is not None and self._guard is not None
        try:
            await asyncio.to_thread(self._guard.check_url, self.url)  # DNS: off the loop
        except PermissionError as exc:
            raise MCPToolError(f"MCP server {self._label()} refused: {exc}") from None
        except OSError as exc:
            raise MCPToolError(f"MCP server {self._label()} unreachable: {exc}") from None
        headers = {**self.headers, **await self._tokens(run_context)}
        import httpx2

        client = create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(self.timeout_seconds))
        return _OwnedClientTransport(self.url, client, streamable_http_client)

    async def _tokens(self, run_context: Any) -> dict[str, str]:
        found: dict[str, str] = {}
        for header, getter in self.auth_token_getters.items():
            token = getter(run_context)
            if inspect.isawaitable(token):
                token = await token
            if not token:
                continue
            token = str(token)
            if header.lower() == "authorization" and " " not in token:
                token = f"Bearer {token}"
            found[header] = token
        return found

    def _label(self) -> str:
        return f"{self.name!r}"

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "transport": self.transport}


class _OwnedClientTransport:
    """The SDK's streamable HTTP transport with our own httpx2 client (headers, timeout), closed
    with the transport."""

    def __init__(self, url: str, client: Any, transport: Callable[..., Any]) -> None:
        self._url = url
        self._client = client
        self._transport = transport
        self._context: Any = None

    async def __aenter__(self) -> Any:
        await self._client.__aenter__()
        try:
            self._context = self._transport(self._url, http_client=self._client)
            return await self._context.__aenter__()
        except BaseException:
            await self._client.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self._context.__aexit__(*exc)
        finally:
            await self._client.__aexit__(None, None, None)


def _result_text(result: Any) -> str:
    parts: list[str] = []
    for item in result.content or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "resource" and getattr(item.resource, "text", None) is not None:
            parts.append(item.resource.text)
        else:
            parts.append(f"<{kind or 'unknown'} content not shown>")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _reason(exc: BaseException) -> str:
    """The innermost cause of an SDK failure: anyio wraps them in exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _blocking(coroutine: Any) -> Any:
    """Await on a thread of its own: listing happens as an agent is built, which may be on a
    thread that already runs an event loop (the web server's)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-list") as pool:
        return pool.submit(asyncio.run, coroutine).result()


def python_module_command(module: str) -> str:
    """The command that runs ``module`` as a stdio server with this interpreter."""
    return shlex.join([sys.executable, "-m", module])


__all__ = ["MCPFunction", "MCPToolError", "MCPTools", "python_module_command"]
