"""The /eval-runs bodies, in AgentOS 3.1.10's shapes (``agno.os.routers.evals.schemas``):
``EvalRunInput`` in, ``EvalSchema`` out (ISO-8601 ``Z`` timestamps, explicit nulls). Our
extensions: ``workflow_id`` and ``file_path_to_save_results`` in; ``status``, ``error``,
``progress`` and ``score`` out (AgentOS's client ignores keys it does not know)."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from core.api.schema import PaginationInfoOut
from sessions.api.serializers.common import FIELD_REQUIRED, IsoZDateTimeField, JSONObjectIn, ObjectField, Text, output, render

from ..models import EvalRun, EvalType
from ..results import MAX_PATH_BYTES

EVAL_TYPES = tuple(EvalType.values)
COLUMN_CHARS = 255  # the columns of the ids and names an eval run stores (EvalRun)


def _enum_message(options: tuple[str, ...]) -> str:
    return "Input should be " + " or ".join(f"'{option}'" for option in options)


class EvalRunIn(serializers.Serializer):
    """``EvalRunInput``."""

    agent_id = Text(required=False, allow_null=True, max_length=COLUMN_CHARS)
    team_id = Text(required=False, allow_null=True, max_length=COLUMN_CHARS)
    workflow_id = Text(required=False, allow_null=True, max_length=COLUMN_CHARS, help_text="Workflow ID to evaluate (this server's extension)")
    model_id = Text(required=False, allow_null=True, max_length=COLUMN_CHARS)
    model_provider = Text(required=False, allow_null=True, max_length=COLUMN_CHARS)
    eval_type = serializers.ChoiceField(choices=EVAL_TYPES, error_messages={**FIELD_REQUIRED, "invalid_choice": _enum_message(EVAL_TYPES)})
    input = Text(allow_blank=False, error_messages={**FIELD_REQUIRED, "blank": "String should have at least 1 character"})
    additional_guidelines = Text(required=False, allow_null=True)
    additional_context = Text(required=False, allow_null=True)
    num_iterations = serializers.IntegerField(required=False, default=1, min_value=1, max_value=100)
    name = Text(required=False, allow_null=True, max_length=COLUMN_CHARS)
    expected_output = Text(required=False, allow_null=True)
    criteria = Text(required=False, allow_null=True)
    scoring_strategy = serializers.ChoiceField(
        choices=("numeric", "binary"), required=False, allow_null=True, default="binary",
        error_messages={"invalid_choice": _enum_message(("numeric", "binary"))},
    )
    threshold = serializers.IntegerField(required=False, allow_null=True, default=7, min_value=1, max_value=10)
    warmup_runs = serializers.IntegerField(required=False, default=0, min_value=0, max_value=10)
    expected_tool_calls = serializers.ListField(child=Text(), required=False, allow_null=True)
    allow_additional_tool_calls = serializers.BooleanField(required=False, default=False)
    expected_tool_call_arguments = JSONObjectIn(required=False, allow_null=True)
    file_path_to_save_results = Text(
        required=False, allow_null=True, max_length=MAX_PATH_BYTES,
        help_text=(
            "Agno's result-file template, relative to your folder of EVALS_RESULTS_DIR; placeholders {run_id} and {name}, as they are "
            "(no format spec or conversion; {eval_id} is refused); at most 255 bytes per folder or file name and 4096 in all, filled in"
        ),
    )

    def validate_expected_tool_call_arguments(self, value: Any) -> Any:
        if value is None:
            return None
        for name, spec in value.items():
            specs = spec if isinstance(spec, list) else [spec]
            if not all(isinstance(item, dict) for item in specs):
                raise serializers.ValidationError(f"The expected arguments of {name} are an object or a list of objects")
        return value


class UpdateEvalRunIn(serializers.Serializer):
    """``UpdateEvalRunRequest``."""

    name = Text(allow_blank=False, max_length=COLUMN_CHARS, error_messages={**FIELD_REQUIRED, "blank": "String should have at least 1 character"})


class DeleteEvalRunsIn(serializers.Serializer):
    """``DeleteEvalRunsRequest``."""

    eval_run_ids = serializers.ListField(child=Text(), min_length=1, error_messages=FIELD_REQUIRED)


class EvalOut(serializers.Serializer):
    """``EvalSchema``."""

    id = serializers.CharField()
    agent_id = output(serializers.CharField())
    model_id = output(serializers.CharField())
    model_provider = output(serializers.CharField())
    team_id = output(serializers.CharField())
    workflow_id = output(serializers.CharField())
    name = output(serializers.CharField())
    evaluated_component_name = output(serializers.CharField())
    user_id = output(serializers.CharField())
    eval_type = serializers.ChoiceField(choices=EVAL_TYPES)
    eval_data = ObjectField()
    eval_input = output(ObjectField())
    created_at = output(IsoZDateTimeField())
    updated_at = output(IsoZDateTimeField())
    status = serializers.ChoiceField(choices=("queued", "running", "completed", "failed"), help_text="This server's extension: where the eval's background job is")
    error = output(serializers.CharField(help_text="This server's extension: why a failed eval failed"))
    progress = output(ObjectField(help_text="This server's extension: how far a running eval has got"))
    score = output(serializers.FloatField(help_text="This server's extension: the run's score (1-10; reliability 10 or 0)"))


class PaginatedEvalsOut(serializers.Serializer):
    data = EvalOut(many=True)
    meta = PaginationInfoOut()


def result_as_run(row: EvalRun) -> dict[str, Any]:
    """The result as AgentOS answers the run that made it: its ``*Result`` dataclass, ``run_id``
    first (empty until the eval has a result)."""
    return {"run_id": row.run_id, **row.eval_data} if row.eval_data else {}


def result_as_stored(row: EvalRun) -> dict[str, Any]:
    """The result as AgentOS reads it back from its table (get, update, list): the run's answer,
    except a performance eval's, which it stores as its statistics (``result``) and each
    measured run's time and memory (``runs``)."""
    data = row.eval_data or {}
    if row.eval_type != EvalType.PERFORMANCE or not data:
        return result_as_run(row)
    samples = ("run_times", "memory_usages")
    return {
        "result": {key: value for key, value in data.items() if key not in samples},
        "runs": [{"runtime": runtime, "memory": memory} for runtime, memory in zip(data.get("run_times") or [], data.get("memory_usages") or [])],
    }


def eval_fields(row: EvalRun, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row.run_id, "agent_id": row.agent_id, "model_id": row.model_id, "model_provider": row.model_provider,
        "team_id": row.team_id, "workflow_id": row.workflow_id, "name": row.name, "evaluated_component_name": row.evaluated_component_name,
        "user_id": row.user_id, "eval_type": row.eval_type, "eval_data": result, "eval_input": row.eval_input,
        "created_at": row.created_at, "updated_at": row.updated_at, "status": row.status, "error": row.error or None,
        "progress": row.progress or None, "score": row.score,
    }


def render_eval(row: EvalRun) -> dict[str, Any]:
    """An eval run as read back (get, update, list)."""
    return render(EvalOut, eval_fields(row, result_as_stored(row)))


def render_eval_run(row: EvalRun) -> dict[str, Any]:
    """An eval run as the answer of the request that ran it (``POST /eval-runs``)."""
    return render(EvalOut, eval_fields(row, result_as_run(row)))
