"""``/mcp``: the platform as an MCP server over streamable HTTP (the MCP SDK's transport), beside
Django in the ASGI application (``agno_site.asgi``).

Before a request reaches the SDK it is authenticated as every API request is: the ``Authorization``
header's bearer credential (a JWT or an access token; the security key), refused with AgentOS's
401 when it is missing or wrong, or the open principal on a server without authentication. The
principal goes with the request (the ASGI scope) to the tools (``mcp_server.tools``), which act as
it. The Host and Origin headers pass the checks Django and the WebSockets apply (``ALLOWED_HOSTS``,
the allowed origins), so a web page elsewhere cannot drive it through a browser.

The server is stateless (each POST is answered whole, as JSON): any replica answers any request,
and nothing is kept between calls but what the pipeline stores. The SDK's session manager needs a
task group on the event loop that serves it; it is started on the first request of each loop,
since the lifespan may be off (``manage.py serve`` and the tests run without it).
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host

PATH = "/mcp"


def is_mcp_path(path: str) -> bool:
    return path == PATH or path.startswith(PATH + "/")


async def _reply(send: Any, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *headers]})
    await send({"type": "http.response.body", "body": data})


def _authenticate(authorization: str, address: str | None) -> tuple[Any, tuple[int, dict[str, Any], list[tuple[bytes, bytes]]] | None]:
    """The caller's principal, or the refusal to send (a status, an AgentOS error body, headers)."""
    from core.api.authentication import TooManyFailures, authenticate_bearer, credential_from_header, missing_credentials_detail
    from core.auth import OPEN
    from core.tokens import TokenError

    token = credential_from_header(authorization)
    if token is None:
        if settings.AGENT_OS_AUTH_MODE == "none":
            return OPEN, None
        return None, (401, {"detail": missing_credentials_detail(), "error_code": "not_authenticated"}, [(b"www-authenticate", b"Bearer")])
    try:
        principal = authenticate_bearer(token, address=address)
    except TokenError as exc:
        return None, (401, {"detail": str(exc), "error_code": "authentication_failed"}, [(b"www-authenticate", b"Bearer")])
    except TooManyFailures as exc:
        wait = str(int(exc.wait or 60)).encode()
        return None, (429, {"detail": str(exc), "error_code": "throttled"}, [(b"retry-after", wait)])
    if principal is None:  # an open server ignores a credential it does not know, as AgentOS does
        if settings.AGENT_OS_AUTH_MODE == "none":
            return OPEN, None
        return None, (401, {"detail": "Invalid authentication token", "error_code": "authentication_failed"}, [(b"www-authenticate", b"Bearer")])
    return principal, None


class MCPEndpoint:
    """The ASGI application of ``/mcp`` (see the module's docstring)."""

    def __init__(self) -> None:
        self._loops: dict[asyncio.AbstractEventLoop, Any] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # held: a task only weakly referenced may be collected

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        from core.addresses import scope_client_address
        from core.websocket import origin_allowed
        from mcp_server.tools import ADDRESS_KEY, PRINCIPAL_KEY

        if not settings.MCP_SERVER_ENABLED:
            await _reply(send, 404, {"detail": "Not Found: the MCP server is off (MCP_SERVER_ENABLED=false)", "error_code": "not_found"})
            return
        headers = {key.decode("latin-1").lower(): value for key, value in scope.get("headers", [])}
        host = headers.get("host", b"").decode("latin-1")
        domain, _port = split_domain_port(host)
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            await _reply(send, 400, {"detail": f"Invalid HTTP_HOST header: {host!r}", "error_code": "bad_request"})
            return
        if not origin_allowed(headers.get("origin")):
            await _reply(send, 403, {"detail": "Origin not allowed", "error_code": "forbidden"})
            return
        address = scope_client_address(scope)  # behind a trusted proxy, the client's, not the proxy's
        principal, refusal = await sync_to_async(_authenticate, thread_sensitive=False)(
            headers.get("authorization", b"").decode("latin-1"), address,
        )
        if refusal is not None:
            status, body, extra = refusal
            await _reply(send, status, body, extra)
            return
        app = await self._app()
        await app({**scope, "path": PATH, "raw_path": PATH.encode(), PRINCIPAL_KEY: principal, ADDRESS_KEY: address or ""}, receive, send)

    async def _app(self) -> Any:
        loop = asyncio.get_running_loop()
        entry = self._loops.get(loop)
        if entry is None:
            entry = self._loops[loop] = {"lock": asyncio.Lock(), "app": None}
        async with entry["lock"]:
            if entry["app"] is None:
                entry["app"] = await self._start()
        return entry["app"]

    async def _start(self) -> Any:
        from mcp.server.transport_security import TransportSecuritySettings

        from mcp_server.tools import build_server

        server = build_server()
        # Host and Origin are checked above, against the site's own settings.
        app = server.streamable_http_app(
            streamable_http_path=PATH, stateless_http=True, json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        ready = asyncio.Event()

        async def serve() -> None:
            async with server.session_manager.run():
                ready.set()
                await asyncio.Event().wait()  # for the life of the loop

        task = asyncio.get_running_loop().create_task(serve(), name="mcp-session-manager")
        waiter = asyncio.ensure_future(ready.wait())
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            waiter.cancel()
            task.result()  # raises why it could not start
        self._tasks.add(task)
        return app


endpoint = MCPEndpoint()


def with_mcp(app: Any) -> Any:
    """``app`` with ``/mcp`` served here; every other request (and WebSockets, the lifespan) goes on to ``app``."""

    async def dispatch(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and is_mcp_path(scope.get("path", "")):
            await endpoint(scope, receive, send)
        else:
            await app(scope, receive, send)

    return dispatch
