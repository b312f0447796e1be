"""Documentation serializers for the /agents family (the views build their bodies directly,
as AgentOS-shaped dicts; tests check the bodies against this document)."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers

from core.api.schema import ErrorOut, ValidationErrorOut

ERROR = ErrorOut
VALIDATION_ERROR = ValidationErrorOut


class ModelOut(serializers.Serializer):
    name = serializers.CharField()
    model = serializers.CharField()
    provider = serializers.CharField()


class ToolOut(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    parameters = serializers.DictField()


class ToolsOut(serializers.Serializer):
    tools = ToolOut(many=True, required=False)
    tool_call_limit = serializers.IntegerField(required=False)


class AgentResponse(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    db_id = serializers.CharField()
    description = serializers.CharField(required=False)
    filesystem = serializers.BooleanField()
    is_factory = serializers.BooleanField()
    model = ModelOut()
    tools = ToolsOut(required=False)
    sessions = serializers.DictField(required=False)
    memory = serializers.DictField(required=False)
    reasoning = serializers.DictField(required=False)
    system_message = serializers.DictField(required=False, help_text="description, instructions, markdown: what is set")
    metadata = serializers.DictField(required=False)
    is_component = serializers.BooleanField()
    current_version = serializers.IntegerField(required=False)
    stage = serializers.CharField(required=False)
    sandboxed = serializers.BooleanField()


class TeamResponse(serializers.Serializer):
    """``TeamResponse``: the leader's settings as an agent's, plus the team's own."""

    id = serializers.CharField()
    name = serializers.CharField()
    db_id = serializers.CharField()
    description = serializers.CharField(required=False)
    role = serializers.CharField(required=False)
    mode = serializers.ChoiceField(choices=["route", "coordinate", "broadcast", "tasks"])
    is_factory = serializers.BooleanField()
    model = ModelOut()
    tools = ToolsOut(required=False, help_text="The leader's tools, its delegation tools included")
    sessions = serializers.DictField(required=False)
    memory = serializers.DictField(required=False)
    reasoning = serializers.DictField(required=False)
    system_message = serializers.DictField(required=False)
    members = serializers.ListField(child=serializers.DictField(), help_text="AgentResponse or TeamResponse, recursively")
    streaming = serializers.DictField(help_text='{"stream_member_events": true}')
    metadata = serializers.DictField(required=False)
    is_component = serializers.BooleanField()
    current_version = serializers.IntegerField(required=False)
    stage = serializers.CharField(required=False)
    sandboxed = serializers.BooleanField()


class WorkflowSummary(serializers.Serializer):
    """``WorkflowSummaryResponse``."""

    id = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(required=False)
    db_id = serializers.CharField()
    is_factory = serializers.BooleanField()
    is_component = serializers.BooleanField()
    current_version = serializers.IntegerField(required=False)
    stage = serializers.CharField(required=False)
    sandboxed = serializers.BooleanField()


class WorkflowResponse(WorkflowSummary):
    """``WorkflowResponse``: the summary plus the input schema and the steps."""

    input_schema = serializers.DictField(required=False)
    steps = serializers.ListField(child=serializers.DictField(), help_text="{name, type, description?, agent?|team?|executor?, steps?|choices?}, recursively")
    metadata = serializers.DictField(required=False)


class RunForm(serializers.Serializer):
    message = serializers.CharField(help_text="The user's input")
    stream = serializers.BooleanField(required=False, default=True, help_text="Server-sent events (default) or one JSON RunOutput")
    session_id = serializers.CharField(required=False, help_text="Continue this session; omitted: a new one")
    user_id = serializers.CharField(required=False, help_text="Ignored when the caller is authenticated as a user")
    background = serializers.BooleanField(required=False, default=False)
    stream_events = serializers.BooleanField(required=False, default=True)
    version = serializers.IntegerField(required=False, help_text="Run this stored version of a database agent")
    session_state = serializers.CharField(required=False, help_text="JSON object merged into the session state")
    metadata = serializers.CharField(required=False, help_text="JSON object")
    dependencies = serializers.CharField(required=False, help_text="JSON object")
    factory_input = serializers.CharField(required=False, help_text="JSON object a factory-built component is built from (ignored by the others)")
    output_schema = serializers.CharField(required=False, help_text='JSON schema with "type": "object"')
    add_history_to_context = serializers.BooleanField(required=False)
    images = serializers.CharField(required=False, help_text="JSON array of image objects")
    input_files = serializers.CharField(required=False, help_text="JSON array of file objects")
    files = serializers.ListField(child=serializers.FileField(), required=False)
    files_metadata = serializers.CharField(required=False, help_text="JSON array, at most 8000 bytes")


class ContinueForm(serializers.Serializer):
    tools = serializers.CharField(required=False, help_text="JSON array of the paused ToolExecution objects with decisions filled in")
    session_id = serializers.CharField()
    user_id = serializers.CharField(required=False)
    stream = serializers.BooleanField(required=False, default=True)
    stream_events = serializers.BooleanField(required=False, default=True)
    input = serializers.CharField(required=False, help_text="A new user message to answer: a follow-up on a finished run, or context for a retry")
    continue_from = serializers.CharField(required=False, default="end", help_text='"end", "last_user" or a message index: how much of the transcript to keep')
    fork = serializers.BooleanField(required=False, default=False, help_text="Continue in a new run beside this one (a finished run always is)")
    regenerate = serializers.BooleanField(required=False, default=False, help_text="Answer the last question again, in a new run")
    factory_input = serializers.CharField(required=False, help_text="JSON object a factory-built component is built from again (ignored by the others)")
    replace_original = serializers.BooleanField(required=False, allow_null=True, default=None, help_text="With regenerate: mark the original REGENERATED (default true)")
    additional_instructions = serializers.CharField(required=False, help_text="With regenerate: what to do differently (an alias of input)")
    background = serializers.BooleanField(required=False, default=False, help_text="Put a paused background run back on the queue (202)")


class WorkflowContinueForm(serializers.Serializer):
    step_requirements = serializers.CharField(help_text="JSON array of StepRequirement objects answering the paused step's review")
    session_id = serializers.CharField()
    user_id = serializers.CharField(required=False)
    stream = serializers.BooleanField(required=False, default=True)
    stream_events = serializers.BooleanField(required=False, default=True)
    background = serializers.BooleanField(required=False, default=False)


class ResumeForm(serializers.Serializer):
    session_id = serializers.CharField(required=False)
    last_event_index = serializers.IntegerField(required=False, help_text="The last event_index the client saw")


class RunMetricsOut(serializers.Serializer):
    input_tokens = serializers.IntegerField(required=False)
    output_tokens = serializers.IntegerField(required=False)
    total_tokens = serializers.IntegerField(required=False)
    time_to_first_token = serializers.FloatField(required=False)
    duration = serializers.FloatField(required=False)
    details = serializers.DictField(required=False)


class RunOutput(serializers.Serializer):
    run_id = serializers.CharField()
    agent_id = serializers.CharField(required=False)
    agent_name = serializers.CharField(required=False)
    session_id = serializers.CharField()
    user_id = serializers.CharField(required=False)
    input = serializers.DictField(required=False)
    content = serializers.JSONField(required=False)
    content_type = serializers.CharField(required=False)
    reasoning_content = serializers.CharField(required=False)
    model = serializers.CharField(required=False)
    model_provider = serializers.CharField(required=False)
    model_provider_data = serializers.DictField(required=False)
    messages = serializers.ListField(child=serializers.DictField(), required=False)
    metrics = RunMetricsOut(required=False)
    tools = serializers.ListField(child=serializers.DictField(), required=False)
    requirements = serializers.ListField(child=serializers.DictField(), required=False)
    session_state = serializers.DictField(required=False)
    metadata = serializers.DictField(required=False)
    events = serializers.ListField(child=serializers.DictField(), required=False)
    created_at = serializers.IntegerField(required=False)
    status = serializers.ChoiceField(["PENDING", "RUNNING", "COMPLETED", "PAUSED", "CANCELLED", "ERROR", "REGENERATED"])
    cancellation_stage = serializers.CharField(required=False)


class BackgroundAccepted(serializers.Serializer):
    run_id = serializers.CharField()
    session_id = serializers.CharField()
    status = serializers.CharField()


class ForkedSession(serializers.Serializer):
    session_id = serializers.CharField(help_text="The new session")
    forked_from_session_id = serializers.CharField(help_text="The session it was copied from")


class CheckpointOut(serializers.Serializer):
    checkpoint_id = serializers.CharField(allow_null=True, help_text="Display number (1, 2, 3...), not an index")
    run_id = serializers.CharField()
    session_id = serializers.CharField()
    message_index = serializers.IntegerField(help_text="Messages kept: pass it as continue_from")
    continue_from = serializers.IntegerField()
    status = serializers.CharField(allow_null=True)
    reason = serializers.ChoiceField(["checkpoint", "end", "snapshot"])
    created_at = serializers.IntegerField(allow_null=True)
    message_id = serializers.CharField(allow_null=True)
    message_role = serializers.CharField(allow_null=True)
    message_preview = serializers.CharField(allow_null=True)
    is_latest = serializers.BooleanField()


class RunCheckpoints(serializers.Serializer):
    run_id = serializers.CharField()
    session_id = serializers.CharField()
    checkpoints = CheckpointOut(many=True)


class RunCheckpointSnapshot(serializers.Serializer):
    checkpoint = CheckpointOut()
    snapshot = RunOutput(help_text="The run's RunOutput, cut at the checkpoint")


class CompactionResult(serializers.Serializer):
    status = serializers.ChoiceField(["compacted", "not_worth_it", "nothing_to_fold", "already_compacted", "no_history", "not_enabled", "summary_failed"])
    message = serializers.CharField()
    compacted = serializers.BooleanField()
    record = serializers.DictField(allow_null=True)
    metrics = serializers.DictField(allow_null=True)


# ---- shared by the team and workflow views -----------------------------------------------------

TEAM_RUN_RESPONSES = {
    200: OpenApiResponse(RunOutput, description="stream=false: the TeamRunOutput (member_responses included); stream=true (the default): text/event-stream of team and member events"),
    202: BackgroundAccepted,
    400: ERROR,
    404: ERROR,
    409: ERROR,
    413: ERROR,
    422: VALIDATION_ERROR,
    429: ERROR,
}
RUN_FORMS = {"application/x-www-form-urlencoded": RunForm, "multipart/form-data": RunForm}
CONTINUE_FORMS = {"application/x-www-form-urlencoded": ContinueForm, "multipart/form-data": ContinueForm}
IN_SESSION = [OpenApiParameter("session_id", str, required=True)]
