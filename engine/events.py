"""Agent run events as dicts in AgentOS's shape (agentos-api.md §4.4-4.5).

Nulls are dropped at the top level, empty strings kept; ToolExecution dicts inside events keep
all their keys.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.output import RunState, drop_nulls, json_copy

TERMINAL_EVENTS = frozenset({"RunCompleted", "RunPaused", "RunError", "RunCancelled"})
# What a caller with stream_events=False still gets.
ESSENTIAL_EVENTS = TERMINAL_EVENTS | {"RunContent"}
# The per-token deltas of an agent's and a team leader's answer: what a non-streamed run's stored
# events leave out (its completion event carries the whole answer), as Agno's events_to_skip.
CONTENT_DELTAS = frozenset({"RunContent", "TeamRunContent"})


class EventFactory:
    def __init__(self, state: RunState, clock: Callable[[], float]) -> None:
        self.state = state
        self.clock = clock

    def make(self, event: str, **fields: Any) -> dict[str, Any]:
        data: dict[str, Any] = {
            "created_at": int(self.clock()),
            "event": event,
            "agent_id": self.state.agent_id,
            "agent_name": self.state.agent_name,
            "run_id": self.state.run_id,
            "parent_run_id": self.state.parent_run_id,
            "session_id": self.state.session_id,
            "nested_depth": 0,
        }
        data.update(fields)
        return drop_nulls(data)

    def run_started(self) -> dict[str, Any]:
        return self.make("RunStarted", model=self.state.model, model_provider=self.state.model_provider)

    def run_content(
        self,
        content: Any = None,
        *,
        content_type: str = "str",
        reasoning_content: str | None = None,
        model_provider_data: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return self.make(
            "RunContent",
            content=content,
            workflow_agent=False,
            content_type=content_type,
            reasoning_content=reasoning_content,
            model_provider_data=json_copy(model_provider_data),
            # As Agno: every content event carries the run's references so far (the same list
            # object until a search adds one: RunState replaces it, never changes it).
            references=self.state.references,
        )

    def model_request_started(self, model: str, provider: str) -> dict[str, Any]:
        return self.make("ModelRequestStarted", model=model, model_provider=provider)

    def model_request_completed(self, model: str, provider: str, usage: Any, time_to_first_token: float | None) -> dict[str, Any]:
        return self.make(
            "ModelRequestCompleted",
            model=model,
            model_provider=provider,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            total_tokens=usage.total_tokens,
            time_to_first_token=time_to_first_token,
            reasoning_tokens=usage.reasoning_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        )

    def tool_call(self, event: str, tool: dict[str, Any], **fields: Any) -> dict[str, Any]:
        return self.make(event, tool=json_copy(tool), **fields)

    def run_completed(self) -> dict[str, Any]:
        state = self.state
        return self.make(
            "RunCompleted",
            content=json_copy(state.content),
            content_type=state.content_type,
            reasoning_content=state.reasoning_content,
            model_provider_data=json_copy(state.model_provider_data),
            references=json_copy(state.references),
            metadata=json_copy(state.metadata),
            metrics=state.metrics.to_dict(),
            session_state=json_copy(state.session_state),
        )

    def run_paused(self, paused: list[dict[str, Any]], requirements: list[dict[str, Any]]) -> dict[str, Any]:
        return self.make(
            "RunPaused",
            tools=json_copy(paused),
            content=self.state.content,
            requirements=json_copy(requirements),
        )

    def run_error(
        self, message: str, error_type: str, *, error_id: str | None = None, additional_data: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """As Agno's: ``error_id`` and ``additional_data`` say why a check refused. Every terminal
        event carries the run's usage so far (``metrics``), so a failed run's cost is seen too."""
        return self.make(
            "RunError", content=message, error_type=error_type, error_id=error_id, additional_data=json_copy(additional_data),
            metrics=self.state.metrics.to_dict() or None,
        )

    def run_cancelled(self, partial: str) -> dict[str, Any]:
        return self.make("RunCancelled", content=partial, reason=f"Run {self.state.run_id} was cancelled")
