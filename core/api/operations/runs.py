"""What the API docs say about discovery and the run operations of agents, teams and workflows."""
from __future__ import annotations

# operationId -> (summary, description). Descriptions are Markdown.
RUN_OPERATIONS: dict[str, tuple[str, str]] = {
    # --- Discovery ---------------------------------------------------------------------------
    "health_check": (
        "Health Check",
        "Check the health status of the API. Returns a simple status indicator. "
        "Public in every auth mode, and touches no database: load balancers may call it often.",
    ),
    "get_info": (
        "Get OS Info",
        "Return lightweight, unauthenticated metadata about this instance: its id, name and "
        "versions, how many agents, teams and workflows it serves, and its authentication mode.",
    ),
    "get_config": (
        "Get OS Configuration",
        "Retrieve the configuration of this instance, including:\n\n"
        "- Available models and databases\n"
        "- The agents, teams and workflows the caller may see\n"
        "- Chat, session, memory, knowledge and evaluation configurations",
    ),
    "migrate_all_databases": (
        "Migrate All Databases",
        "Apply every database migration of this release that is not applied yet (this server has "
        "one database). Idempotent: a second call applies nothing. Requires `config:write` (an "
        "admin, the security key, or the open server). `target_version` is not supported: the "
        "schema is always brought to the latest.",
    ),
    "migrate_database": (
        "Migrate Database",
        "Apply every database migration of this release that is not applied yet to the database "
        "`db_id` (this server's one database, `/config`'s `os_database`; any other id is a 404). "
        "Idempotent; requires `config:write`. `target_version` is not supported.",
    ),
    # --- Agents ------------------------------------------------------------------------------
    "get_agents": (
        "List All Agents",
        "Retrieve the agents configured in this instance that the caller may read.\n\n"
        "**Returns:**\n"
        "- Agent metadata (ID, name, description)\n"
        "- Model configuration and capabilities\n"
        "- Available tools and their configurations\n"
        "- Session, knowledge, memory, and reasoning settings\n"
        "- Only meaningful (non-default) configurations are included",
    ),
    "get_agent": (
        "Get Agent Details",
        "Retrieve the detailed configuration and capabilities of one agent.\n\n"
        "**Returns comprehensive agent information including:**\n"
        "- Model configuration and provider details\n"
        "- Complete tool inventory and configurations\n"
        "- Session management settings\n"
        "- Knowledge base and memory configurations\n"
        "- System prompts and response formatting options",
    ),
    "create_agent_run": (
        "Create Agent Run",
        "Execute an agent with a message and optional media files. Supports both streaming and "
        "non-streaming responses, and durable background runs.\n\n"
        "**Features:**\n"
        "- Text message input with optional session management (`session_id`; omitted: a new session)\n"
        "- Multi-media support: images, audio, video and files (`files` uploads, or inline JSON)\n"
        "- Real-time streaming responses with Server-Sent Events (SSE)\n"
        "- `background=true`: the run is queued and survives restarts; the answer is `202` with its ids\n"
        "- User and session context preservation\n\n"
        "**Streaming Response:**\n"
        "When `stream=true` (the default), returns SSE events with `event` and `data` fields. "
        "With `stream=false`, one JSON `RunOutput`.\n\n"
        "A model error is not an HTTP error: the answer is `200` with `\"status\": \"ERROR\"` and the "
        "reason in `content`.",
    ),
    "list_agent_runs": (
        "List Agent Runs",
        "List runs for an agent within a session, optionally filtered by status.\n\n"
        "Useful for monitoring background runs and viewing run history.",
    ),
    "get_agent_run": (
        "Get Agent Run",
        "Retrieve the status and output of an agent run. Use this to poll for background run "
        "completion (`PENDING` → `RUNNING` → …).\n\n"
        "Requires the `session_id` that was returned when the run was created.",
    ),
    "cancel_agent_run": (
        "Cancel Agent Run",
        "Cancel a queued or executing agent run, on whichever worker runs it. A queued run ends "
        "`CANCELLED` at once; a running one stops at its next step.\n\n"
        "**Note:** Cancellation may not be immediate for all operations.",
    ),
    "continue_agent_run": (
        "Continue Agent Run",
        "Advance a stored agent run from its current state.\n\n"
        "**Variants:**\n"
        "- PAUSED + tools provided → apply the human-in-the-loop decisions (`confirmed`, "
        "`user_input_schema[*].value`, external `result`), resume\n"
        "- COMPLETED + `input` → continue the conversation from the run, or from `continue_from` "
        "(a checkpoint's `message_index`)\n\n"
        "**Tools Parameter:**\n"
        "JSON string containing the array of the paused run's tools, with the decisions filled in.",
    ),
    "resume_agent_run_stream": (
        "Resume Agent Run Stream",
        "Resume an SSE stream for an agent run after disconnection.\n\n"
        "Sends missed events since `last_event_index`, then continues streaming live events if "
        "the run is still active. A run that has ended is replayed from its stored events.\n\n"
        "The answer is always `200`: a missing run or a failure is an in-band `event: error` frame.\n\n"
        "**Client usage:**\n"
        "Track `event_index` from each SSE event. On reconnection, pass the last received "
        "`event_index` as `last_event_index`.",
    ),
    "list_agent_run_checkpoints": (
        "List Agent Run Checkpoints",
        "List the boundaries a run can be continued from: the end of its transcript, and where it "
        "was last continued from. Pass an entry's `message_index` as `continue_from` when "
        "continuing the run.",
    ),
    "get_agent_run_checkpoint_snapshot": (
        "Get Agent Run Checkpoint Snapshot",
        "Return the run as it stood after `message_index` messages (never between a tool call and "
        "its result). Use the returned `message_index` as `continue_from` when continuing this run.",
    ),
    "fork_agent_session": (
        "Fork Agent Session",
        "Deep-copy a session into a new independent session. Every finished or paused run is "
        "copied with a fresh `run_id`, with its events, and the session's name, state, metadata "
        "and summary; the new session has a fresh `session_id`. The original is untouched. Use to "
        "explore alternative conversation paths without changing the source.",
    ),
    "compact_agent_session": (
        "Compact Agent Session",
        "Fold a session's older history into a summary, so that less is sent to the model; the "
        "stored transcript is never modified. No agent of this server compacts its history yet, so "
        "the answer is always `compacted: false` with `status: not_enabled`.",
    ),
    # --- Teams -------------------------------------------------------------------------------
    "get_teams": (
        "List All Teams",
        "Retrieve the teams configured in this instance that the caller may read.\n\n"
        "**Returns team information including:**\n"
        "- Team metadata (ID, name, description, execution mode)\n"
        "- Model configuration for team coordination\n"
        "- Team member roster (agents and sub-teams, recursively) with roles and capabilities\n"
        "- Session and memory configurations",
    ),
    "get_team": ("Get Team Details", "Retrieve detailed configuration and member information for a specific team."),
    "create_team_run": (
        "Create Team Run",
        "Execute a team: its leader delegates the task to its members (route, coordinate, broadcast or "
        "tasks mode) and answers. Same form as an agent run.\n\n"
        "**Features:**\n"
        "- Text message input with optional session management (`session_id`; omitted: a new team session)\n"
        "- Real-time streaming with Server-Sent Events: team events (`TeamRunStarted`, `TeamRunContent`, "
        "`TeamToolCallStarted`, ...) and the members' own events (`RunStarted`, `RunContent`, ... with "
        "`parent_run_id` set to the team run)\n"
        "- `background=true`: the run is queued and survives restarts; the answer is `202` with its ids\n"
        "- Each member run is stored as its own run of the session, with `parent_run_id`",
    ),
    "list_team_runs": (
        "List Team Runs",
        "List runs for a team within a session, optionally filtered by status.\n\n"
        "Useful for monitoring background runs and viewing run history.",
    ),
    "get_team_run": (
        "Get Team Run",
        "Retrieve the status and output of a team run (its `member_responses` included). Use this to poll "
        "for background run completion.\n\nRequires the `session_id` that was returned when the run was created.",
    ),
    "cancel_team_run": (
        "Cancel Team Run",
        "Cancel a queued or executing team run, on whichever worker runs it; its members' runs stop with it.",
    ),
    "continue_team_run": (
        "Continue Team Run",
        "Continue a paused team run with the human's decisions, or continue a run from a message boundary.\n\n"
        "**Use Cases:**\n"
        "- Resume execution after tool approval/rejection, in the leader or in a member (the requirement "
        "names the member: `member_agent_id`, `member_run_id`); the member resumes first, then the leader\n"
        "- Provide manual tool execution results or user input\n"
        "- Fork, regenerate or retry from a checkpoint, as for agents",
    ),
    "resume_team_run_stream": (
        "Resume Team Run Stream",
        "Resume an SSE stream for a team run after disconnection.\n\n"
        "Sends missed events since `last_event_index`, then continues streaming live events if the run is still active.",
    ),
    "list_team_run_checkpoints": (
        "List Team Run Checkpoints",
        "The boundaries the team run can be continued from, derived from its leader's stored transcript. "
        "Pass an entry's message_index as continue_from.",
    ),
    "get_team_run_checkpoint_snapshot": (
        "Get Team Run Checkpoint Snapshot",
        "Return a derived team run snapshot truncated at a message boundary. Use the returned message_index "
        "as `continue_from` when continuing this run.",
    ),
    "fork_team_session": (
        "Fork Team Session",
        "Deep-copy a team session into a new independent session. Every run (the members' included) is copied "
        "with a fresh `run_id`; the new session has a fresh `session_id`. The original is untouched.",
    ),
    # --- Workflows ---------------------------------------------------------------------------
    "get_workflows": (
        "List All Workflows",
        "Retrieve the workflows configured in this instance that the caller may read (their summaries: "
        "id, name, description).",
    ),
    "get_workflow": ("Get Workflow Details", "Retrieve the configuration of a workflow: its input schema and its steps, recursively, with each step's agent or team."),
    "create_workflow_run": (
        "Execute Workflow",
        "Execute a workflow with the provided input. Workflows run streamed or in one piece.\n\n"
        "**Execution Modes:**\n"
        "- **Streaming (`stream=true`)**: step-by-step updates over SSE: workflow events (`WorkflowStarted`, "
        "`StepStarted`, `ParallelExecutionStarted`, …, `WorkflowCompleted`) and the agent and team steps' own events\n"
        "- **Non-Streaming (`stream=false`)**: the WorkflowRunOutput once it ends\n"
        "- `background=true`: the run is queued and survives restarts; the answer is `202` with its ids\n\n"
        "Each agent or team step is stored as its own run of the session, with `parent_run_id`; a step under "
        "human review pauses the run (`WorkflowPaused`, `step_requirements`).",
    ),
    "list_workflow_runs": (
        "List Workflow Runs",
        "List runs for a workflow within a session, optionally filtered by status.\n\n"
        "Useful for monitoring background runs and viewing run history.",
    ),
    "get_workflow_run": (
        "Get Workflow Run",
        "Retrieve the status and output of a workflow run. Use this to poll for run completion.\n\n"
        "Requires the `session_id` that was returned when the run was created.",
    ),
    "cancel_workflow_run": (
        "Cancel Workflow Run",
        "Cancel a queued or executing workflow run, on whichever worker runs it; its running steps stop with it.",
    ),
    "continue_workflow_run": (
        "Continue Workflow Run",
        "Continue a paused workflow run with the answers to its review, from exactly the step that paused "
        "(after a server restart too: the pause is in the database).\n\n"
        "**Use Cases:**\n"
        "- Resume after a step's review (confirmation, user input, router selection, output or iteration review)\n"
        "- Resume after an agent or team step's tool confirmation\n\n"
        "**`step_requirements`:** a JSON array of the run's StepRequirement objects with their answers "
        "(`confirmed`, `user_input`, `selected_choices`, …). A run that is not paused is a `409`.",
    ),
    "resume_workflow_run_stream": (
        "Resume Workflow Run Stream",
        "Resume an SSE stream for a workflow run after disconnection.\n\n"
        "Sends missed events since `last_event_index`, then continues streaming live events if the run is still active.",
    ),
}
