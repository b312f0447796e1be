"""``WorkflowState``: a workflow run's state, and the WorkflowRunOutput dict it reads and writes.

A paused run is continued from its stored output alone, so everything a continue needs (the
reviews so far, where the run paused, the way back into nested steps) is in the state and
round-trips through ``to_dict`` / ``from_dict``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.output import RUNNING, drop_nulls, json_copy
from engine.workflow_types import StepOutput


@dataclass
class WorkflowState:
    """A workflow run's state; ``to_dict`` is the WorkflowRunOutput dict and ``from_dict`` reads it back."""

    run_id: str
    workflow_id: str
    workflow_name: str | None
    session_id: str
    user_id: str | None
    input: Any
    created_at: int
    session_state: dict[str, Any]
    additional_data: dict[str, Any] | None = None
    content: Any = None
    content_type: str = "str"
    status: str = RUNNING
    step_results: list[StepOutput] = field(default_factory=list)
    step_executor_runs: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    duration: float | None = None
    cancellation_stage: str | None = None
    # Every review so far, the last one the open one while PAUSED (Agno keeps the history).
    step_requirements: list[dict[str, Any]] = field(default_factory=list)
    error_requirements: list[dict[str, Any]] = field(default_factory=list)
    paused_step_index: int | None = None
    paused_step_name: str | None = None
    pause_kind: str | None = None
    # The way back to a paused step nested in containers (``WorkflowPause.frames``), in the
    # stored run so that any process can continue it.
    paused_frames: list[dict[str, Any]] = field(default_factory=list)
    workflow_version: int | None = None

    def metrics(self) -> dict[str, Any]:
        """Agno's WorkflowMetrics: each agent or team step's run metrics by step name, and the duration."""
        steps: dict[str, Any] = {}

        def walk(outputs: Sequence[StepOutput]) -> None:
            for output in outputs:
                if output.executor_type in ("agent", "team") and output.step_name:
                    steps[output.step_name] = {
                        "step_name": output.step_name,
                        "executor_type": output.executor_type,
                        "executor_name": output.executor_name,
                        "metrics": json_copy(output.metrics),
                    }
                walk(output.steps or [])

        walk(self.step_results)
        return {"steps": steps, "duration": self.duration}

    def to_dict(self) -> dict[str, Any]:
        return drop_nulls({
            "run_id": self.run_id,
            "workflow_id": self.workflow_id,
            "workflow_name": self.workflow_name,
            "workflow_version": self.workflow_version,
            "session_id": self.session_id,
            "user_id": self.user_id,
            "input": json_copy(self.input),
            "additional_data": json_copy(self.additional_data),
            "content": json_copy(self.content),
            "content_type": self.content_type,
            "status": self.status,
            "cancellation_stage": self.cancellation_stage,
            "created_at": self.created_at,
            "metadata": json_copy(self.metadata),
            "metrics": self.metrics(),
            "step_results": [o.to_dict() for o in self.step_results],
            "step_executor_runs": json_copy(self.step_executor_runs),
            "session_state": json_copy(self.session_state),
            "step_requirements": json_copy(self.step_requirements) or None,
            "error_requirements": json_copy(self.error_requirements) or None,
            "pause_kind": self.pause_kind,
            "paused_step_name": self.paused_step_name,
            "paused_step_index": self.paused_step_index,
            "paused_frames": json_copy(self.paused_frames) or None,
        })

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkflowState:
        data = json_copy(dict(data))
        return cls(
            run_id=data["run_id"],
            workflow_id=data.get("workflow_id", ""),
            workflow_name=data.get("workflow_name"),
            session_id=data.get("session_id", ""),
            user_id=data.get("user_id"),
            input=data.get("input"),
            created_at=int(data.get("created_at") or 0),
            session_state=data.get("session_state") or {},
            additional_data=data.get("additional_data"),
            content=data.get("content"),
            content_type=data.get("content_type", "str"),
            status=data.get("status", RUNNING),
            step_results=[StepOutput.from_dict(o) for o in data.get("step_results") or []],
            step_executor_runs=list(data.get("step_executor_runs") or []),
            metadata=data.get("metadata"),
            duration=(data.get("metrics") or {}).get("duration"),
            cancellation_stage=data.get("cancellation_stage"),
            step_requirements=list(data.get("step_requirements") or []),
            error_requirements=list(data.get("error_requirements") or []),
            paused_step_index=data.get("paused_step_index"),
            paused_step_name=data.get("paused_step_name"),
            pause_kind=data.get("pause_kind"),
            paused_frames=list(data.get("paused_frames") or []),
            workflow_version=data.get("workflow_version"),
        )
