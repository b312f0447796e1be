"""Agents, teams and workflows defined in the database: editable in the admin, versioned, draft then published.

Editing changes only the draft; a live agent runs its latest published version, so an edit
never changes what users talk to until an operator publishes it. Teams work the same way;
their members are live agents and teams named by id. So do workflows: their steps name live
agents, teams and registered functions. Definitions are platform
configuration, shared by every user (not owned rows).
"""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone


from .post_hooks import POST_HOOKS_HELP, clean_post_hooks

component_id_validator = RegexValidator(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$", "Letters, digits, '-', '_' and '.'; 128 characters at most.")


TOKEN_BUDGET_HELP = "The most tokens one run may spend: a run that has spent them is stopped before its next model call. Empty for no limit."
GUARDRAILS_HELP = "Checks of each message before the model sees it, in order (engine.guardrails.GUARDRAILS)."


def clean_guardrails(names: object) -> None:
    """A version's ``guardrails``: distinct names of shipped guardrails."""
    from engine.guardrails import GUARDRAILS

    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ValidationError({"guardrails": "A list of guardrail names."})
    if len(set(names)) != len(names):
        raise ValidationError({"guardrails": "A guardrail is listed twice."})
    unknown = [name for name in names if name not in GUARDRAILS]
    if unknown:
        raise ValidationError({"guardrails": f"Unknown guardrails: {', '.join(unknown)}. Known: {', '.join(GUARDRAILS)}."})
LEARNING_HELP = (
    "Learn about each user as they chat (Agno v3's LearningMachine: their memories and profile, in /learnings). "
    "Turning learning on clears the legacy memory pair (update memory on run, add memories to context)."
)
LEARNING_NAME_HELP = "A learning machine from the registry (default, entities, memories); set, it turns learning on."
MODEL_OPTIONS_HELP = (
    'Generation options for the model, as JSON, e.g. {"reasoning_effort": "high", "seed": 7}. OpenAI takes temperature, '
    "max_tokens, top_p, stop, seed, response_format, reasoning_effort, reasoning_summary, service_tier and verbosity; "
    "Anthropic takes temperature, max_tokens, top_p, stop and thinking_budget (extended thinking, at least 1024 tokens)."
)
COMPRESS_HELP = "Summarise long tool results before the model reads them again (their full text stays in the run)."


class Stage(models.TextChoices):
    DRAFT = "draft"
    PUBLISHED = "published"


class AgentDefinition(models.Model):
    agent_id = models.CharField(max_length=128, unique=True, validators=[component_id_validator], help_text="The id API clients use, e.g. demo-agent.")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    is_active = models.BooleanField(default=True, help_text="Inactive agents are hidden and cannot be run.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["agent_id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.agent_id})"

    def clean(self) -> None:
        from .registry import member_kind

        # A team's member ids name agents and teams alike: one id must mean one of them.
        if self.agent_id and member_kind(self.agent_id) == "team":
            raise ValidationError({"agent_id": f"{self.agent_id!r} is the id of a team."})


class AgentVersion(models.Model):
    definition = models.ForeignKey(AgentDefinition, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.DRAFT)
    model = models.CharField(max_length=200, default="offline:demo", help_text="provider:model_id, e.g. openai:gpt-4o-mini or offline:demo.")
    fallback_models = models.JSONField(default=list, blank=True, help_text='Tried in order on retryable errors, e.g. ["openai:gpt-4o"].')
    reasoning_model = models.CharField(max_length=200, blank=True, default="")
    model_options = models.JSONField(default=dict, blank=True, help_text=MODEL_OPTIONS_HELP)
    instructions = models.TextField(blank=True, default="")
    tools = models.JSONField(default=list, blank=True, help_text="Toolkit ids from the registry, e.g. calculator, datetime.")
    compress_tool_results = models.BooleanField(default=False, help_text=COMPRESS_HELP)
    add_history_to_context = models.BooleanField(default=True)
    num_history_runs = models.PositiveIntegerField(default=3)
    update_memory_on_run = models.BooleanField(default=False)
    add_memories_to_context = models.BooleanField(default=True)
    # Agno v3's learning (the learnings app): on, it clears the legacy memory pair above.
    enable_learning = models.BooleanField(default=False, help_text=LEARNING_HELP)
    learning_name = models.CharField(max_length=100, blank=True, default="", help_text=LEARNING_NAME_HELP)
    enable_session_summaries = models.BooleanField(default=False)
    search_past_sessions = models.BooleanField(default=False)
    num_past_sessions_to_search = models.PositiveIntegerField(default=2)
    tool_call_limit = models.PositiveIntegerField(null=True, blank=True)
    token_budget = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(1)], help_text=TOKEN_BUDGET_HELP)
    guardrails = models.JSONField(default=list, blank=True, help_text=GUARDRAILS_HELP)
    post_hooks = models.JSONField(default=list, blank=True, help_text=POST_HOOKS_HELP)
    markdown = models.BooleanField(default=True)
    knowledge = models.JSONField(default=list, blank=True, help_text='Names of knowledge bases the agent searches, e.g. ["Docs"].')
    search_knowledge = models.BooleanField(default=True, help_text="Give the model a search_knowledge_base tool over its knowledge bases.")
    add_knowledge_to_context = models.BooleanField(default=False, help_text="Add the best passages for each message to it before the model answers.")
    notes = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["definition", "-version"]
        constraints = [models.UniqueConstraint(fields=["definition", "version"], name="agent_version_unique")]

    def __str__(self) -> str:
        return f"{self.definition.agent_id} v{self.version} ({self.stage})"

    def clean(self) -> None:
        from engine.models import get_model
        from .toolkits import TOOLKITS

        for field in ("model", "reasoning_model"):
            value = getattr(self, field)
            if value:
                try:
                    get_model(value)  # parses the string; provider SDKs load only on first call
                except ValueError as exc:
                    raise ValidationError({field: str(exc)}) from None
        clean_model_options(self.model, self.model_options)
        if not isinstance(self.fallback_models, list) or not all(isinstance(item, str) for item in self.fallback_models):
            raise ValidationError({"fallback_models": "A list of provider:model_id strings."})
        for item in self.fallback_models:
            try:
                get_model(item)
            except ValueError as exc:
                raise ValidationError({"fallback_models": str(exc)}) from None
        unknown = [tool for tool in self.tools if tool not in TOOLKITS] if isinstance(self.tools, list) else ["(not a list)"]
        if unknown:
            raise ValidationError({"tools": f"Unknown toolkits: {', '.join(map(str, unknown))}. Known: {', '.join(sorted(TOOLKITS))}."})
        clean_knowledge(self.knowledge, frozen=self.stage == Stage.PUBLISHED)
        clean_guardrails(self.guardrails)
        clean_post_hooks(self.post_hooks)
        clean_learning(self)


def clean_learning(version: AgentVersion | TeamVersion) -> None:
    """A named machine must exist; learning on clears the legacy memory pair (v3: both offer the
    model the user's memory, and the legacy one shadowed the store's). A team has no
    ``add_memories_to_context`` of its own."""
    from learnings.machines import LEARNING_MACHINES

    if version.learning_name and version.learning_name not in LEARNING_MACHINES:
        known = ", ".join(LEARNING_MACHINES)
        raise ValidationError({"learning_name": f"Unknown learning machine {version.learning_name!r}. Known: {known}."})
    if version.enable_learning or version.learning_name:
        version.update_memory_on_run = False
        if hasattr(version, "add_memories_to_context"):
            version.add_memories_to_context = False


def clean_model_options(model: str, options: object) -> None:
    """A version's ``model_options``: only options its model's provider takes, each valid."""
    from engine.models import model_from_definition

    try:
        model_from_definition(model, options if options is not None else {})
    except ValueError as exc:
        raise ValidationError({"model_options": str(exc)}) from None


def clean_knowledge(names: object, *, frozen: bool) -> None:
    """A version's ``knowledge``: a list of distinct names of existing bases. A published
    version is frozen: a base removed since makes its searches fail (a tool error the model
    reads), and must not block saving the page where the draft that fixes it is edited."""
    from .knowledge import unknown_knowledge_bases

    if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
        raise ValidationError({"knowledge": "A list of knowledge base names."})
    if len(set(names)) != len(names):
        raise ValidationError({"knowledge": "A knowledge base is listed twice."})
    missing = [] if frozen else unknown_knowledge_bases(names)
    if missing:
        raise ValidationError({"knowledge": f"No knowledge base named {', '.join(missing)}."})


class TeamMode(models.TextChoices):
    ROUTE = "route", "route (the member answers)"
    COORDINATE = "coordinate", "coordinate (the leader composes the answer)"
    BROADCAST = "broadcast", "broadcast (every member gets the task)"
    TASKS = "tasks", "tasks (the leader works a task list)"


class TeamDefinition(models.Model):
    """A team defined in the admin: as ``AgentDefinition``, edited as a draft, run once published."""

    team_id = models.CharField(max_length=128, unique=True, validators=[component_id_validator], help_text="The id API clients use, e.g. support-team.")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    is_active = models.BooleanField(default=True, help_text="Inactive teams are hidden and cannot be run.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team_id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.team_id})"

    def clean(self) -> None:
        from .registry import member_kind

        # One id names one component: a member id must say which agent or team it means.
        if self.team_id and member_kind(self.team_id) == "agent":
            raise ValidationError({"team_id": f"{self.team_id!r} is the id of an agent."})


class TeamVersion(models.Model):
    definition = models.ForeignKey(TeamDefinition, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.DRAFT)
    mode = models.CharField(max_length=16, choices=TeamMode.choices, default=TeamMode.COORDINATE)
    model = models.CharField(max_length=200, default="offline:demo", help_text="The leader's model: provider:model_id, e.g. openai:gpt-4o-mini or offline:demo.")
    model_options = models.JSONField(default=dict, blank=True, help_text=MODEL_OPTIONS_HELP)
    role = models.CharField(max_length=500, blank=True, default="", help_text="What the team is for, when it is itself a member of another team.")
    instructions = models.TextField(blank=True, default="")
    members = models.JSONField(default=list, blank=True, help_text="Ids of live agents and teams (code or database), in order.")
    tools = models.JSONField(default=list, blank=True, help_text="The leader's own toolkit ids from the registry, e.g. calculator.")
    compress_tool_results = models.BooleanField(default=False, help_text=COMPRESS_HELP)
    max_iterations = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1)], help_text="Tasks mode: the most leader turns one run takes.")
    member_timeout = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(1)], help_text="Seconds a member may take before the leader is told it timed out; empty for no limit.")
    add_history_to_context = models.BooleanField(default=False)
    num_history_runs = models.PositiveIntegerField(default=3)
    update_memory_on_run = models.BooleanField(default=False)
    enable_learning = models.BooleanField(default=False, help_text=LEARNING_HELP)
    learning_name = models.CharField(max_length=100, blank=True, default="", help_text=LEARNING_NAME_HELP)
    enable_session_summaries = models.BooleanField(default=False)
    markdown = models.BooleanField(default=False)
    token_budget = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(1)], help_text=TOKEN_BUDGET_HELP)
    guardrails = models.JSONField(default=list, blank=True, help_text=GUARDRAILS_HELP)
    post_hooks = models.JSONField(default=list, blank=True, help_text=POST_HOOKS_HELP)
    knowledge = models.JSONField(default=list, blank=True, help_text='Names of knowledge bases the leader searches, e.g. ["Docs"].')
    search_knowledge = models.BooleanField(default=True, help_text="Give the leader a search_knowledge_base tool over its knowledge bases.")
    add_knowledge_to_context = models.BooleanField(default=False, help_text="Add the best passages for each message to it before the leader answers.")
    notes = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["definition", "-version"]
        constraints = [models.UniqueConstraint(fields=["definition", "version"], name="team_version_unique")]

    def __str__(self) -> str:
        return f"{self.definition.team_id} v{self.version} ({self.stage})"

    def clean(self) -> None:
        from .registry import member_kind, team_cycle
        from engine.models import get_model
        from .toolkits import TOOLKITS

        try:
            get_model(self.model)
        except ValueError as exc:
            raise ValidationError({"model": str(exc)}) from None
        clean_model_options(self.model, self.model_options)
        unknown = [tool for tool in self.tools if tool not in TOOLKITS] if isinstance(self.tools, list) else ["(not a list)"]
        if unknown:
            raise ValidationError({"tools": f"Unknown toolkits: {', '.join(map(str, unknown))}. Known: {', '.join(sorted(TOOLKITS))}."})
        if not isinstance(self.members, list) or not all(isinstance(member, str) for member in self.members):
            raise ValidationError({"members": "A list of agent and team ids."})
        if not self.members:
            raise ValidationError({"members": "A team needs at least one member."})
        if len(set(self.members)) != len(self.members):
            raise ValidationError({"members": "A member is listed twice."})
        clean_knowledge(self.knowledge, frozen=self.stage == Stage.PUBLISHED)
        clean_guardrails(self.guardrails)
        clean_post_hooks(self.post_hooks)
        clean_learning(self)
        if self.stage == Stage.PUBLISHED:
            # Frozen: checked when it was published (publish_draft cleans it as a draft). What it
            # names may have gone since (the team is then unavailable); that must not block
            # saving the page where the draft that fixes it is edited.
            return
        missing = [member for member in self.members if member_kind(member) is None]
        if missing:
            raise ValidationError({"members": f"No live agent or team: {', '.join(missing)}."})
        cycle = team_cycle(self.definition.team_id, self.members)
        if cycle:
            raise ValidationError({"members": f"A team cannot contain itself: {' → '.join(cycle)}."})


class WorkflowDefinition(models.Model):
    """A workflow composed in the admin: as ``TeamDefinition``, edited as a draft, run once published."""

    workflow_id = models.CharField(max_length=128, unique=True, validators=[component_id_validator], help_text="The id API clients use, e.g. release-flow.")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    is_active = models.BooleanField(default=True, help_text="Inactive workflows are hidden and cannot be run.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["workflow_id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.workflow_id})"

    def clean(self) -> None:
        from .registry import code_workflows

        if self.workflow_id and self.workflow_id in code_workflows():
            raise ValidationError({"workflow_id": f"{self.workflow_id!r} is the id of a workflow defined in code."})


class WorkflowVersion(models.Model):
    """One version of a workflow's step graph (``engine.workflow_config``'s JSON: Agno's
    ``Step.to_dict()`` shape), its executors named by id: live agents, teams, registered functions."""

    definition = models.ForeignKey(WorkflowDefinition, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.DRAFT)
    steps = models.JSONField(default=list, blank=True, help_text="The step graph: a JSON list of Step, Steps, Parallel, Loop, Condition and Router objects.")
    notes = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["definition", "-version"]
        constraints = [models.UniqueConstraint(fields=["definition", "version"], name="workflow_version_unique")]

    def __str__(self) -> str:
        return f"{self.definition.workflow_id} v{self.version} ({self.stage})"

    def clean(self) -> None:
        from .registry import workflow_steps_check

        if self.stage == Stage.PUBLISHED:
            # Frozen, as a team's: checked when published; an executor gone since makes the
            # workflow unavailable, and must not block saving the page where its fix is drafted.
            return
        problems = workflow_steps_check(self.steps)
        if problems:
            raise ValidationError({"steps": problems})


class ComponentType(models.TextChoices):
    AGENT = "agent"
    TEAM = "team"
    WORKFLOW = "workflow"


class QuickPrompt(models.Model):
    """A prompt the chat offers on an empty conversation with one agent, team or workflow
    (AgentOS's ``chat.quick_prompts`` in ``/config``), after those its code module declares in
    ``QUICK_PROMPTS``. Platform configuration, shared by every user (not an owned row)."""

    component_type = models.CharField(max_length=16, choices=ComponentType.choices, default=ComponentType.AGENT)
    component_id = models.CharField(max_length=128, validators=[component_id_validator], help_text="The agent's, team's or workflow's id, e.g. demo.")
    prompt = models.CharField(max_length=500, help_text="The message a click sends, as the user would type it.")
    position = models.PositiveIntegerField(default=0, help_text="Lower comes first.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["component_type", "component_id", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["component_type", "component_id", "prompt"], name="quick_prompt_unique")]

    def __str__(self) -> str:
        return f"{self.component_type} {self.component_id}: {self.prompt}"

    def clean(self) -> None:
        from .quick_prompts import component_known

        if not self.prompt.strip():
            raise ValidationError({"prompt": "A prompt has some text."})
        if self.component_id and not component_known(self.component_type, self.component_id):
            raise ValidationError({"component_id": f"No {self.component_type} {self.component_id!r}, in code or in the admin."})


def _tool_names(value: object, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(name, str) and name.strip() for name in value):
        raise ValidationError({field: "A JSON list of tool names."})
    return value


class MCPToolPolicy(models.Model):
    """Which tools of an allow-listed MCP server (``MCP_SERVERS``) pause a run before they are
    called: for the user's confirmation, or for an operator's approval. Applied when the server's
    toolkit (``mcp:<server>``) of an admin-defined agent or team lists its tools, so every one given
    the server pauses on them (a code agent's ``MCPTools`` says so itself). Platform
    configuration, not an owned row."""

    server = models.CharField(max_length=100, unique=True, help_text="A name of the MCP_SERVERS allow-list, e.g. demo.")
    requires_confirmation_tools = models.JSONField(default=list, blank=True, help_text="Tools whose calls wait for the user's confirmation (the chat's approval card).")
    approval_tools = models.JSONField(default=list, blank=True, help_text="Tools whose calls wait for an operator's approval (the admin's Approvals).")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["server"]
        verbose_name = "MCP server tool policy"
        verbose_name_plural = "MCP server tool policies"

    def __str__(self) -> str:
        return f"MCP server {self.server}"

    def clean(self) -> None:
        _tool_names(self.requires_confirmation_tools, "requires_confirmation_tools")
        _tool_names(self.approval_tools, "approval_tools")
