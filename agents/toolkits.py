"""The toolkits an operator can give a database-defined agent, by stable id.

Each entry builds the toolkit for one run's user: the Workspace is a folder per user under
``WORKSPACE_ROOT``, so one user's agent never reads another user's files.
"""
from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from engine.tools import tool
from engine.tools.calculator import CalculatorTools
from engine.tools.clock import DateTimeTools
from engine.tools.http_fetch import HttpFetchTools
from engine.tools.mcp import MCPTools
from engine.tools.toolkit import Toolkit
from engine.tools.workspace import Workspace


class DemoActionTools(Toolkit):
    """Tools with side effects a human must approve, to show human-in-the-loop without any setup:
    the user confirms ``send_email`` and fills in ``book_meeting``'s date; an operator approves
    ``issue_refund`` (``@approval``: the admin's Approvals queue, the chat's *My approvals*).

    Nothing leaves the server: the "email" is only reported back.
    """

    id = "demo_actions"
    name = "demo_actions"

    @tool(requires_confirmation=True)
    def send_email(self, to: str, subject: str, body: str = "") -> str:
        """Send an email (demo: nothing is sent). Needs the user's confirmation.

        Args:
            to: The recipient's address.
            subject: The subject line.
            body: The message text.
        """
        return f"Email to {to} with subject {subject!r} was queued (demo: nothing was sent)."

    @tool(requires_user_input=True, user_input_fields=["date"])
    def book_meeting(self, topic: str, date: dt.date) -> str:
        """Book a meeting (demo). Asks the user which date to use.

        Args:
            topic: What the meeting is about.
            date: The day of the meeting, filled in by the user.
        """
        # Typed as a date so its user-input field says "date" (the chat offers a date picker); the
        # person's answer arrives as ISO text, and anything else is refused as the tool's error.
        day = date if isinstance(date, dt.date) else dt.date.fromisoformat(str(date))
        return f"Meeting about {topic!r} booked for {day.isoformat()} (demo: no calendar was touched)."

    @tool(requires_approval=True)
    def issue_refund(self, order_id: str, amount: float) -> str:
        """Refund an order (demo: no money moves). An operator approves it first, not the user.

        Args:
            order_id: The order to refund.
            amount: How much to refund.
        """
        return f"Refund of {amount} on order {order_id} issued (demo: no money moved)."


def workspace_root_for(user_id: str | None) -> Path:
    owner = user_id or "_shared"
    folder = hashlib.sha256(owner.encode()).hexdigest()[:24]
    path = Path(settings.WORKSPACE_ROOT) / folder
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class ToolkitEntry:
    id: str
    name: str
    description: str
    build: Callable[[str | None], Toolkit]


MCP_PREFIX = "mcp:"
# An admin agent's toolkits are built for every run: its MCP servers' tool lists are kept this long.
MCP_LIST_CACHE_SECONDS = 300.0


def mcp_toolkit(name: str, target: str) -> MCPTools:
    """The toolkit of an allow-listed MCP server (``MCP_SERVERS``): a URL is streamable HTTP behind
    the "http" toolkit's address guard, anything else a command run as a stdio subprocess. The
    operator's policy for the server (``MCPToolPolicy``, read now: a toolkit is built per run) says
    which of its tools pause for the user's confirmation or an operator's approval."""
    confirm, approve = mcp_tool_policy(name)
    common = {
        "id": MCP_PREFIX + name, "name": MCP_PREFIX + name, "timeout_seconds": settings.MCP_TIMEOUT_SECONDS,
        "list_cache_seconds": MCP_LIST_CACHE_SECONDS, "requires_confirmation_tools": confirm, "approval_tools": approve,
    }
    if target.startswith(("http://", "https://")):
        return MCPTools(url=target, allow_hosts=settings.HTTP_FETCH_ALLOW_HOSTS, **common)
    return MCPTools(target, cwd=str(settings.BASE_DIR), **common)  # `python -m` finds the repo's modules


def mcp_tool_policy(name: str) -> tuple[list[str], list[str]]:
    """The tools of MCP server ``name`` an operator set to need confirmation, and approval."""
    from .models import MCPToolPolicy  # the models validate toolkit ids against this module

    policy = MCPToolPolicy.objects.filter(server=name).first()
    if policy is None:
        return [], []
    return list(policy.requires_confirmation_tools or []), list(policy.approval_tools or [])


def mcp_server_tools(name: str) -> tuple[list[tuple[str, str]], str | None]:
    """The tools allow-listed server ``name`` offers now, as (name, description) choices, and why
    it could not be listed (None when it could): what the admin's policy form offers."""
    target = settings.MCP_SERVERS.get(name)
    if target is None:
        return [], f"{name!r} is not in MCP_SERVERS"
    toolkit = mcp_toolkit(name, target)
    functions = toolkit.functions()
    return [(function.name, function.description) for function in functions], toolkit.last_error


def _mcp_entries() -> dict[str, ToolkitEntry]:
    return {
        MCP_PREFIX + name: ToolkitEntry(
            MCP_PREFIX + name, f"MCP: {name}", f"The tools of the MCP server {target} (allow-listed in MCP_SERVERS).",
            lambda user_id, name=name, target=target: mcp_toolkit(name, target),
        )
        for name, target in settings.MCP_SERVERS.items()
    }


class _Toolkits(Mapping[str, ToolkitEntry]):
    """The built-in toolkits, those other apps registered (``register_toolkit``) and, read from
    the settings when asked (they change in tests and never at import time), the allow-listed MCP
    servers."""

    def __init__(self, builtin: dict[str, ToolkitEntry], registered: dict[str, ToolkitEntry]) -> None:
        self._builtin = builtin
        self._registered = registered

    def _all(self) -> dict[str, ToolkitEntry]:
        return {**self._builtin, **self._registered, **_mcp_entries()}

    def __getitem__(self, key: str) -> ToolkitEntry:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


BUILTIN_TOOLKITS: dict[str, ToolkitEntry] = {
    entry.id: entry
    for entry in (
        ToolkitEntry("calculator", "Calculator", "Arithmetic: add, subtract, multiply, divide, powers, roots.", lambda user_id: CalculatorTools()),
        ToolkitEntry("datetime", "Date and time", "The current date and time in any time zone.", lambda user_id: DateTimeTools()),
        ToolkitEntry(
            "http",
            "HTTP fetch",
            "GET a public web page (private and loopback addresses refused).",
            lambda user_id: HttpFetchTools(allow_hosts=settings.HTTP_FETCH_ALLOW_HOSTS),
        ),
        ToolkitEntry(
            "workspace",
            "Workspace files",
            "Read, search and (with confirmation) write files in the user's own folder; credential files refused.",
            lambda user_id: Workspace(workspace_root_for(user_id)),
        ),
        ToolkitEntry("demo_actions", "Demo actions", "send_email (needs confirmation), book_meeting (asks for input) and issue_refund (an operator approves it).", lambda user_id: DemoActionTools()),
    )
}
# The toolkits of apps above this one (the scheduler's "schedules"), registered in their ready():
# the agents app imports none of them.
_registered_toolkits: dict[str, ToolkitEntry] = {}
TOOLKITS: Mapping[str, ToolkitEntry] = _Toolkits(BUILTIN_TOOLKITS, _registered_toolkits)


def register_toolkit(entry: ToolkitEntry) -> None:
    """Offer ``entry`` to database-defined agents under its id (an app's ``AppConfig.ready``)."""
    if entry.id in BUILTIN_TOOLKITS or entry.id.startswith(MCP_PREFIX):
        raise ValueError(f"toolkit id {entry.id!r} is taken by a built-in or an MCP server")
    _registered_toolkits[entry.id] = entry


def toolkit_choices() -> list[tuple[str, str]]:
    return [(entry.id, f"{entry.name}: {entry.description}") for entry in TOOLKITS.values()]
