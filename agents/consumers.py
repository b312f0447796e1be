"""``/ws/runs``: follow and cancel runs over one WebSocket.

The protocol is AgentOS's ``/workflows/ws`` (agentos-api.md §4.9) applied to any run: the client
sends JSON objects with an ``action``; control messages come back as JSON objects with an
``event``, and run events as the SSE-framed strings AgentOS puts in text frames, so one parser
serves both transports.

    → {"action": "ping"}                                        ← {"event": "pong"}
    → {"action": "authenticate", "token": "…"}                  ← {"event": "authenticated", …} | auth_error
    → {"action": "reconnect", "run_id": "…", "session_id": "…", "last_event_index": 4}
                                        ← replay | catch_up + subscribed (JSON), then "event: …\\ndata: …"
    → {"action": "cancel", "run_id": "…", "session_id": "…"}    ← {"event": "cancel_requested", …}

A guest (or an admin) may add ``"user_id"`` to ``reconnect`` and ``cancel``, naming the user it
acts for, as it does on the REST routes.

Who may do what is decided by the functions REST uses: the bearer credential of the handshake or
of ``authenticate`` (``authenticate_bearer``), else the browser's login, else the open server;
then ``run_for_caller`` / ``cancel_for_caller`` and the same scopes (``<family>:<id>:run``).
Another user's run is "not found", exactly like one that does not exist; a refusal is told with
the HTTP API's words and its domain error code (``run_not_found``, ``run_forbidden``).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from rest_framework.exceptions import PermissionDenied

from core.addresses import scope_client_address
from core.api.authentication import TooManyFailures, authenticate_bearer, credential_from_header
from core.api.errors import APIError, Unprocessable
from core.api.parsers import load_json
from core.auth import OPEN, Principal, principal_for_django_user
from core.errors import refusal_of
from core.tokens import TokenError

from .pipeline.authority import RunForbidden, run_permitted
from .pipeline.runs import RunNotFound, RunRequest, cancel_for_caller, run_for_caller
from .pipeline.tail import resume

log = logging.getLogger(__name__)

MAX_FOLLOWS = 16


def _handshake_credential(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            return credential_from_header(value.decode("latin-1")) or None
    return None


def _auth_error(exc: TokenError | TooManyFailures) -> dict[str, Any]:
    if isinstance(exc, TooManyFailures):
        # The REST answer's 429 and Retry-After, as a message.
        return {"event": "auth_error", "error": str(exc), "error_type": "rate_limited", "retry_after": int(exc.wait or 0) + 1}
    return {"event": "auth_error", "error": str(exc), "error_type": "invalid_token"}


def _event_text(event: dict[str, Any]) -> str:
    """A run event as AgentOS sends it on its WebSocket: an SSE frame, JSON with default spacing."""
    return f"event: {event.get('event', 'message')}\ndata: {json.dumps(event, default=str)}\n\n"


class RunSocket(AsyncJsonWebsocketConsumer):
    principal: Principal | None = None

    async def connect(self) -> None:
        self.follows: dict[str, asyncio.Task] = {}
        await self.accept()
        refused = None
        credential = _handshake_credential(self.scope)
        if credential is not None:
            try:
                self.principal = await self._principal_for(credential) or self._anonymous()
            except (TokenError, TooManyFailures) as exc:
                refused = _auth_error(exc)
        else:
            user = self.scope.get("user")
            if user is not None and user.is_authenticated and user.is_active:
                self.principal = principal_for_django_user(user)
            else:
                self.principal = self._anonymous()
        needs_auth = self.principal is None
        await self.send_json({
            "event": "connected",
            "message": "Connected to Agno Site. Please authenticate to continue." if needs_auth else "Connected to Agno Site.",
            "requires_auth": needs_auth,
        })
        if refused:
            await self.send_json(refused)

    async def _principal_for(self, credential: str) -> Principal | None:
        address = scope_client_address(self.scope)
        return await database_sync_to_async(authenticate_bearer)(credential, address=address)

    @staticmethod
    def _anonymous() -> Principal | None:
        return OPEN if settings.AGENT_OS_AUTH_MODE == "none" else None

    async def disconnect(self, code: int) -> None:
        # Leaving stops following; the runs themselves go on (they are durable, and can be resumed).
        for task in self.follows.values():
            task.cancel()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        # Channels' own receive raises on a binary or empty frame, and json.loads on a deeply
        # nested one; either would drop the connection. Every bad frame gets an error frame.
        try:
            content = load_json(text_data, ["message"]) if text_data else None
        except ValueError:
            content = None
        except Unprocessable as exc:
            await self._error(exc.detail[0]["msg"], "invalid_message")
            return
        await self.receive_json(content, **kwargs)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict) or not isinstance(content.get("action"), str):
            await self._error('Messages are JSON objects with an "action"', "invalid_message")
            return
        action = content["action"]
        if action == "ping":
            await self.send_json({"event": "pong"})
            return
        if action == "authenticate":
            await self._authenticate(content.get("token"))
            return
        handler = {"reconnect": self._reconnect, "cancel": self._cancel}.get(action)
        if handler is None:
            await self._error(f"Unknown action: {action}", "unknown_action")
            return
        if self.principal is None:
            await self.send_json({
                "event": "auth_required",
                "error": "Authentication required. Send authenticate action with valid token.",
            })
            return
        run_id, session_id = content.get("run_id"), content.get("session_id")
        if not isinstance(run_id, str) or not run_id:
            await self._error("run_id is required", "invalid_message")
            return
        if session_id is not None and not isinstance(session_id, str):
            await self._error("session_id must be a string", "invalid_message")
            return
        if content.get("user_id") is not None and not isinstance(content["user_id"], str):
            await self._error("user_id must be a string", "invalid_message")
            return
        if self.principal.isolated and not session_id:
            await self._error("session_id is required for this action", "invalid_message")
            return
        await handler(content, run_id, session_id or None)

    async def _authenticate(self, token: Any) -> None:
        if not isinstance(token, str) or not token.strip():
            await self.send_json({"event": "auth_error", "error": "token is required", "error_type": "invalid_token"})
            return
        try:
            principal = await self._principal_for(token.strip())
        except (TokenError, TooManyFailures) as exc:
            await self.send_json(_auth_error(exc))
            return
        self.principal = principal or OPEN
        await self.send_json({"event": "authenticated", "message": "Authentication successful. You can now send commands."})

    async def _visible_run(self, run_id: str, session_id: str | None, requested: str | None):
        """The run, if this caller may see it and holds ``run`` on its component; else None (reported).
        A guest (or an admin) names the user it acts for (``user_id``), as the REST routes read it."""
        try:
            run = await database_sync_to_async(run_for_caller)(principal=self.principal, run_id=run_id, session_id=session_id, requested_user_id=requested)
        except RunNotFound as exc:
            await self._refuse(exc, run_id=run_id)
            return None
        except PermissionDenied as exc:  # a guest naming a user who signs in (REST's 403)
            await self._error(str(exc.detail), "forbidden", run_id=run_id)
            return None
        if not run_permitted(self.principal, run.run_type, run.component_id):
            await self._refuse(RunForbidden(run.run_type), run_id=run_id)
            return None
        return run

    async def _reconnect(self, content: dict[str, Any], run_id: str, session_id: str | None) -> None:
        last = content.get("last_event_index")
        if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < -1):
            await self._error("last_event_index must be an integer ≥ -1", "invalid_message")
            return
        if run_id not in self.follows and len(self.follows) >= MAX_FOLLOWS:
            await self._error(f"At most {MAX_FOLLOWS} runs can be followed on one connection", "too_many")
            return
        run = await self._visible_run(run_id, session_id, _text(content, "user_id"))
        if run is None:
            return
        previous = self.follows.pop(run_id, None)
        if previous is not None:
            previous.cancel()
        self.follows[run_id] = asyncio.create_task(self._follow(run, -1 if last is None else last))

    async def _follow(self, run, after: int) -> None:
        try:
            async for kind, data in resume(run, after):
                if kind == "event":
                    await self.send(text_data=_event_text(data))
                else:
                    await self.send_json({"event": kind, **data})
        except asyncio.CancelledError:
            raise
        except Exception:  # a broken follow must not take the connection down
            log.exception("following run %s failed", run.pk)
            await self._error("Following the run failed; reconnect to resume", "server_error", run_id=run.pk)
        finally:
            if self.follows.get(run.pk) is asyncio.current_task():
                del self.follows[run.pk]

    async def _cancel(self, content: dict[str, Any], run_id: str, session_id: str | None) -> None:
        run = await self._visible_run(run_id, session_id, _text(content, "user_id"))
        if run is None:
            return
        try:
            await database_sync_to_async(cancel_for_caller)(principal=self.principal, run_id=run_id, session_id=session_id)
        except RunNotFound as exc:
            await self._refuse(exc, run_id=run_id)
            return
        except ValueError as exc:  # an isolated caller named no session (the API's 400)
            await self._error(str(exc), "invalid_message", run_id=run_id)
            return
        await self.send_json({"event": "cancel_requested", "run_id": run_id})

    async def _error(self, error: str, error_type: str, **extra: Any) -> None:
        await self.send_json({"event": "error", "error": error, "error_type": error_type, **extra})

    async def _refuse(self, exc: BaseException, **extra: Any) -> None:
        """A service's refusal, with the words the HTTP API answers it with and its code
        (core.errors: the same attributes the HTTP answer is made of)."""
        refusal = refusal_of(exc)
        if refusal is None:  # not a refusal: a bug, raised as one
            raise exc
        await self._error(refusal.detail, refusal.code, **extra)


class WorkflowSocket(RunSocket):
    """``/workflows/ws``: AgentOS's workflow WebSocket (agentos-api.md §4.9), the run socket's
    protocol plus starting and continuing workflows:

        → {"action": "start-workflow", "workflow_id": "…", "message": "…", "session_id"?, "user_id"?}
        → {"action": "continue-workflow", "workflow_id": "…", "run_id": "…", "session_id": "…", "step_requirements": [...]}

    Both go through the submit service as durable background runs (a closed socket does not stop
    them; ``reconnect`` follows them again), and the socket then follows the run's events.
    """

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        action = content.get("action") if isinstance(content, dict) else None
        handler = {"start-workflow": self._start, "continue-workflow": self._continue}.get(action)  # type: ignore[arg-type]
        if handler is None:
            await super().receive_json(content, **kwargs)
            return
        if self.principal is None:
            await self.send_json({"event": "auth_required", "error": "Authentication required. Send authenticate action with valid token."})
            return
        workflow_id = content.get("workflow_id")
        if not isinstance(workflow_id, str) or not workflow_id:
            await self._error("workflow_id is required", "invalid_message")
            return
        if not run_permitted(self.principal, "workflow", workflow_id):  # the submission asks again; refused before any wait
            await self._refuse(RunForbidden("workflow"))
            return
        await handler(content, workflow_id)

    async def _start(self, content: dict[str, Any], workflow_id: str) -> None:
        message = content.get("message")
        if not isinstance(message, str) or not message:
            await self._error("message is required", "invalid_message")
            return
        request = RunRequest(message=message, session_id=_text(content, "session_id"), user_id=_text(content, "user_id"), stream=True)
        await self._submitted(submit_run_for_socket, acting_for=request.user_id, principal=self.principal, component_id=workflow_id, request=request)

    async def _continue(self, content: dict[str, Any], workflow_id: str) -> None:
        run_id, session_id = _text(content, "run_id"), _text(content, "session_id")
        requirements = content.get("step_requirements")
        if not run_id or not session_id:
            await self._error("run_id and session_id are required", "invalid_message")
            return
        if not isinstance(requirements, list) or not all(isinstance(item, dict) for item in requirements):
            await self._error("step_requirements must be a JSON array of step requirement objects", "invalid_message")
            return
        following = self.follows.get(run_id)
        if following is not None:
            # Its WorkflowPaused went out live; the follow ends once the pause is recorded, and
            # only a recorded pause can be continued.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(following), timeout=10)
        await self._submitted(
            continue_for_socket, acting_for=_text(content, "user_id"), principal=self.principal, component_id=workflow_id, run_id=run_id, session_id=session_id,
            requested_user_id=_text(content, "user_id"), tools=requirements,
        )

    async def _submitted(self, submit: Any, *, acting_for: str | None = None, **arguments: Any) -> None:
        """Submit, then follow the accepted run (as the user a guest acts for); a refusal is an error frame with the API's words
        and the refusal's code (core.errors: the same attributes the HTTP answer is made of)."""
        try:
            job, after = await database_sync_to_async(submit)(**arguments)
        except Exception as exc:
            if refusal_of(exc) is not None:
                await self._refuse(exc)
                return
            if isinstance(exc, APIError):  # a form's 4xx (the API's parser refused a field)
                await self._error(str(exc.detail), "refused")
                return
            if isinstance(exc, PermissionDenied):  # a guest naming a user who signs in (REST's 403)
                await self._error(str(exc.detail), "forbidden")
                return
            raise
        run = await self._visible_run(job.pk, job.session_id, acting_for)
        if run is not None:
            self.follows[run.pk] = asyncio.create_task(self._follow(run, after))


def _text(content: dict[str, Any], name: str) -> str | None:
    value = content.get(name)
    return value if isinstance(value, str) and value else None


def submit_run_for_socket(*, principal: Principal, component_id: str, request: RunRequest) -> tuple[Any, int]:
    from .pipeline.submit import submit_run

    accepted = submit_run(principal=principal, component_id=component_id, kind="workflow", request=request, background=True)
    return accepted.job, -1


def continue_for_socket(**arguments: Any) -> tuple[Any, int]:
    from .pipeline.submit import submit_continue

    accepted = submit_continue(kind="workflow", background=True, adopt=True, **arguments)
    return accepted.job, accepted.after
