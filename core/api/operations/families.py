"""What the API docs say about the operations of sessions, memories and every other family."""
from __future__ import annotations

# operationId -> (summary, description). Descriptions are Markdown.
FAMILY_OPERATIONS: dict[str, tuple[str, str]] = {
    # --- Sessions ----------------------------------------------------------------------------
    "get_sessions": (
        "List Sessions",
        "Retrieve a paginated list of sessions with filtering and sorting options. Supports "
        "filtering by session type (agent, team, workflow), component, user, and name. Sessions "
        "represent conversation histories and execution contexts.",
    ),
    "create_session": (
        "Create New Session",
        "Create a new empty session with optional configuration. Useful for pre-creating sessions "
        "with a specific `session_state`, metadata, or other properties before running any agent. "
        "The session can later be used by providing its `session_id` in run requests.",
    ),
    "delete_sessions": (
        "Delete Multiple Sessions",
        "Delete multiple sessions by their IDs in a single operation. This action cannot be undone "
        "and permanently removes the sessions and their runs.",
    ),
    "get_session_by_id": (
        "Get Session by ID",
        "Retrieve detailed information about a specific session including metadata, configuration, "
        "and run history. The response schema varies with the session type (agent, team, or workflow).",
    ),
    "update_session": (
        "Update Session",
        "Update session properties such as `session_name`, `session_state`, `metadata`, or `summary`.",
    ),
    "delete_session": (
        "Delete Session",
        "Permanently delete a specific session and all its runs. This action cannot be undone and "
        "removes the conversation history.",
    ),
    "rename_session": (
        "Rename Session",
        "Update the name of an existing session.",
    ),
    "get_session_runs": (
        "Get Session Runs",
        "Retrieve all runs (executions) of a session, with optional timestamp and status filtering. "
        "Repeat the `status` parameter to match any of several. A team's member runs come before "
        "the team's run. A run still executing is listed only when `status` names `RUNNING` (as "
        "AgentOS stores a run when it ends), and a session whose every run is executing is a 404. "
        "For lightweight entries, use `GET /sessions/{session_id}/run-previews`.",
    ),
    "get_session_run_previews": (
        "Get Session Run Previews",
        "Lightweight listing of a session's runs for polling clients such as a queue tray: ids, "
        "status, timestamps and truncated input/output previews, without messages, events, media "
        "or metrics. Accepts the same filters as `GET /sessions/{session_id}/runs`.",
    ),
    "get_session_run": (
        "Get Run by ID",
        "Retrieve a specific run by its ID from a session. The response schema varies with the run "
        "type (agent run, team run, or workflow run).",
    ),
    "get_session_media": (
        "Fetch stored media for a session",
        "Serve a piece of media that was offloaded to external media storage. This server keeps "
        "media inside the runs themselves and offloads none, so the answer is always `404`.",
    ),
    # --- Learnings ---------------------------------------------------------------------------
    "list_learnings": (
        "List Learnings",
        "List learning records (user memory, user profile, entity memory, decision logs) with "
        "pagination and filters. A caller bound to their identity sees their own records and those "
        "no one owns; naming another `user_id` is refused with `403`. Admins and an open server see "
        "every record, optionally filtered by `user_id`.",
    ),
    "create_learning": (
        "Create Learning",
        "Create a learning record. The identity-keyed types (`user_profile`, `user_memory`, "
        "`session_context`, `entity_memory`) get a deterministic id from their identity fields "
        "(`422` without them; `409` when the record exists: PATCH it). An `entity_memory` without a "
        "`namespace` is stored under `global`; under `namespace=\"user\"` its id embeds a digest of "
        "the user id, so two users never share an entity. A caller bound to their identity always "
        "writes their own records (another `user_id`: `403`).",
    ),
    "list_learning_users": (
        "List Learning Users",
        "List the users that own learning records, with their last update (records no one owns are "
        "left out). Sortable by `user_id` or `last_learning_updated_at` (the default).",
    ),
    "delete_learning_user": (
        "Delete Learning User",
        "Delete every learning record a user owns, or only those of `learning_type`. Records no one "
        "owns are untouched. A caller bound to their identity may only delete their own (`403`). "
        "Answers `204` even when there was nothing to delete.",
    ),
    "get_learning": (
        "Get Learning",
        "Retrieve a single learning record by its ID (another user's answers `404`).",
    ),
    "update_learning": (
        "Update Learning",
        "Replace a learning record's `content` and/or `metadata`; identity fields are immutable. "
        "Records no one owns may only be changed by an admin (`403`).",
    ),
    "delete_learning": (
        "Delete Learning",
        "Permanently delete a learning record by its ID. Records no one owns may only be deleted by "
        "an admin (`403`).",
    ),
    # --- Memory ------------------------------------------------------------------------------
    "get_memories": (
        "List Memories",
        "Retrieve a paginated list of user memories with filtering and search. Filter by user, "
        "agent, team or topics, or search within the memories' text.",
    ),
    "create_memory": (
        "Create Memory",
        "Create a new user memory with content and topics. Memories store what agents remember "
        "about a user across conversations.",
    ),
    "delete_memories": (
        "Delete Multiple Memories",
        "Delete multiple user memories by their IDs in a single operation. This action cannot be "
        "undone.",
    ),
    "get_memory": (
        "Get Memory by ID",
        "Retrieve a specific user memory by its ID.",
    ),
    "update_memory": (
        "Update Memory",
        "Update an existing user memory's content and topics: both are replaced by the values "
        "provided (topics left out become `[]`). An unknown id is created, except for callers "
        "under user isolation, who get `404` for ids they do not own.",
    ),
    "delete_memory": (
        "Delete Memory",
        "Permanently delete a specific user memory. This action cannot be undone.",
    ),
    "get_memory_topics": (
        "Get Memory Topics",
        "Retrieve every distinct topic of the memories the caller may read. Useful for filtering "
        "and categorising memories by topic.",
    ),
    "get_user_memory_stats": (
        "Get User Memory Statistics",
        "Retrieve paginated statistics of memory usage per user: how many memories each has and "
        "when the last one changed.",
    ),
    "optimize_memories": (
        "Optimize User Memories",
        "Merge a user's memories into fewer ones without losing facts: duplicates and memories "
        "contained in others are folded in, and memories sharing a topic become one. With `model` "
        "(`provider:model_id`, e.g. `openai:gpt-4o-mini`) the model rewrites them all as one memory "
        "(a reply that is empty or longer than the memories is discarded). Set `apply=false` to "
        "preview the result without saving it.",
    ),
    # --- Service accounts --------------------------------------------------------------------
    "list_service_accounts_service_accounts_get": (
        "List Service Accounts",
        "List the caller's service accounts. Returns metadata and display prefixes only, never "
        "hashes or plaintext tokens.",
    ),
    "create_service_account_service_accounts_post": (
        "Create Service Account",
        "Mint a service account token. The plaintext token is returned exactly once. A token "
        "carries only scopes its creator holds.",
    ),
    "revoke_service_account_service_accounts__service_account_id__delete": (
        "Revoke Service Account",
        "Revoke a service account. Takes effect at once. Idempotent: revoking a "
        "revoked account answers `204` too.",
    ),
    # --- Metrics -----------------------------------------------------------------------------
    "get_metrics": (
        "Get AgentOS Metrics",
        "Retrieve aggregated metrics for a date range (`starting_date`, `ending_date`, both "
        "`YYYY-MM-DD` and inclusive; without them every row). One row per user and day, cut in the "
        "server's `METRICS_TIMEZONE`: runs and sessions per kind (a team's member runs count as team "
        "runs), users, tokens (`token_metrics`), runs and tokens per model (`model_metrics`), and "
        "this server's additions: errors, cost where priced, run latency p50/p95 and per-agent "
        "counts. Sessions without a user aggregate into a shared bucket (`user_id: null`). A caller "
        "bound to their own data sees only their own rows (`user_id` is ignored); an admin sees "
        "everyone's and the shared bucket, or one `user_id`'s. `aggregation_period=monthly` (this "
        "server's extension) returns the monthly rows instead. The rows are as fresh as the last "
        "refresh (`POST /metrics/refresh`).",
    ),
    "refresh_metrics": (
        "Refresh Metrics",
        "Recompute the metrics rows from the runs: only the days with runs created or changed since "
        "the last refresh (and their months); running it twice leaves the same rows. By default "
        "the refresh runs now and returns the daily rows it rewrote. `background=true` runs it as a "
        "background job and answers `202` at once (`already_running` when one is in flight); poll "
        "`GET /metrics/refresh/status`. An admin's refresh covers every user and the shared bucket; "
        "anyone else's only their own rows.",
    ),
    "get_metrics_refresh_status": (
        "Get Metrics Refresh Status",
        "The status of the caller's most recent metrics refresh: `running`, then `completed` or "
        "`failed` (with `error`) and when it finished; `idle` if none was ever started.",
    ),
    # --- Components (the admin's agent, team and workflow definitions) ------------------------
    "list_components": (
        "List Components",
        "Retrieve a paginated list of the agents, teams and workflows defined in the database "
        "(the admin's definitions), newest first, optionally of one type. A caller who may not "
        "change them (user isolation, a browser session, an anonymous guest) sees only those "
        "with a published version, and no archived ones.",
    ),
    "create_component": (
        "Create Component",
        "Create a database agent, team or workflow with its first version (its `config`: the "
        "version's fields, validated as the admin validates them). `stage: \"published\"` makes "
        "it live at once; a draft runs only for an admin. Only an admin, or a caller acting for "
        "every user, may create one: definitions are shared by every user.",
    ),
    "get_component": (
        "Get Component",
        "Retrieve one component by id. `current_version` is its live version (the newest "
        "published); an archived component is found only with `include_deleted=true`.",
    ),
    "update_component": (
        "Update Component",
        "Change a component's name or description; `current_version` makes that published "
        "version live again (as set-current does). Metadata is not stored by this server.",
    ),
    "delete_component": (
        "Delete Component",
        "Archive a component: it is hidden and cannot be run until restored. "
        "`expected_current_version` (or `guard.current_version`) refuses with 409 unless it is "
        "the live version.",
    ),
    "restore_component": (
        "Restore Component",
        "Bring an archived component back (409 when it is not archived). Needs `components:delete`.",
    ),
    "list_configs": (
        "List Configs",
        "List a component's versions, newest first: its published versions and its one draft. "
        "A caller who may not change components sees the published ones only.",
    ),
    "create_config": (
        "Create Config Version",
        "Write the component's draft (there is one draft at a time: this is its next content) "
        "from `config`, validated as the admin validates it; `stage: \"published\"` publishes "
        "it, making it live. `guard.latest_version` refuses with 409 unless it is the latest version.",
    ),
    "update_config": (
        "Update Draft Config",
        "Update the draft version; `stage: \"published\"` publishes it. A published version "
        "never changes (409).",
    ),
    "get_current_config": (
        "Get Current Config",
        "Get the live (newest published) version of a component; 404 when none is published.",
    ),
    "delete_config": (
        "Delete Config Version",
        "Discard the draft version (its unpublished changes). Published versions cannot be "
        "deleted (409).",
    ),
    "set_current_config": (
        "Set Current Config Version",
        "Make a published version live again (a rollback). The live version here is always the "
        "newest published one, so the rollback publishes a copy of that version under the next "
        "number, and the pending draft's changes move to the draft after it.",
    ),
    "list_registry": (
        "List Registry",
        "List what a stored definition may reference: toolkits (`tool`), registered functions "
        "(`function`), model providers (`model`), knowledge bases (`knowledge`), and the live "
        "agents and teams (`agent`, `team`), filtered by type and by name (partial match).",
    ),
    # --- Queue (operators) ---------------------------------------------------------------------
    "list_queue_jobs": (
        "List Queue Jobs",
        "List the durable job queue's jobs, every user's, newest first, optionally filtered by "
        "status, session and submitting user (repeat `status` or `session_id` to match any of "
        "several). Only an admin, or the open server without authentication, may use the queue "
        "routes.",
    ),
    "get_queue_job": (
        "Get Queue Job",
        "Get one job of the durable queue (its id is its run's id).",
    ),
    "requeue_queue_job": (
        "Requeue Failed Queue Job",
        "Give a failed or cancelled job one more attempt under the same run id, as the admin "
        "console's retry does. A cancelled job whose cancellation still stands needs "
        "`clear_cancellation=true`, and a job that failed within the lease needs `force=true` "
        "(its worker may still be running); otherwise 409.",
    ),
    "get_queue_stats": (
        "Queue Stats",
        "Job counts by status and the oldest queued job's age: the queue-health signals to alert on.",
    ),
    # --- Approvals ---------------------------------------------------------------------------
    "list_approvals_approvals_get": (
        "List Approvals",
        "List approvals, newest first, with optional filters. An approval is written when a run "
        "pauses on a tool marked `@approval` (`approval_type: required`: the run waits for it), or "
        "once a human decided an audited tool call (`audit`). Under user isolation a caller sees "
        "only the approvals of their own runs; an admin sees everyone's and may filter by `user_id`.",
    ),
    "get_approval_count_approvals_count_get": (
        "Get Approval Count",
        "How many approvals are pending (of the caller, under user isolation; an admin may ask for "
        "one `user_id`'s).",
    ),
    "get_approval_approvals__approval_id__get": (
        "Get Approval",
        "One approval, with `run_status`: the status of its run now (`PAUSED` while it waits).",
    ),
    "get_approval_status_approvals__approval_id__status_get": (
        "Get Approval Status",
        "The status of one approval, for polling: `pending`, `approved`, `rejected`, with who "
        "resolved it and when.",
    ),
    "resolve_approval_approvals__approval_id__resolve_post": (
        "Resolve Approval",
        "Approve or reject a pending approval. `resolved_by` is the authenticated caller (the "
        "body's value counts only on a server without authentication). `resolution_data` goes "
        "with the decision: `note` (told to the agent on a rejection), `values` (user input) or "
        "`result` (an externally executed tool). Resolving a `required` approval continues its "
        "run by itself, as a durable background run. An approval resolved already is a `409`; "
        "under user isolation only an admin may resolve (others get `404`).",
    ),
    "delete_approval_approvals__approval_id__delete": (
        "Delete Approval",
        "Delete an approval record. Its run is not changed: a run that waited on it stays "
        "paused, and its owner may then continue it with their own decisions. Under user "
        "isolation only an admin may delete (others get `404`).",
    ),
    # --- Traces ------------------------------------------------------------------------------
    "get_traces": (
        "List Traces",
        "One page of traces, newest first, each the summary of one top-level run: its name, status, duration, "
        "span and error counts, input, and the run, session, user and component it belongs to. Filter by any of "
        "those and by a time window (ISO 8601). Under user isolation only the caller's own traces are listed.",
    ),
    "get_traces_filter_schema": (
        "Get Trace Filter Schema",
        "The fields `POST /traces/search` can filter on, their types and operators, the values of enum fields, "
        "and the logical operators (AND, OR) for combining clauses.",
    ),
    "get_trace": (
        "Get Trace or Span Detail",
        "A trace with its span tree: the run, its model calls (model, tokens), tool calls (parameters, result), "
        "member runs and workflow steps, each with its timing and status. With `span_id`, that span and the spans "
        "under it.",
    ),
    "get_trace_stats": (
        "Get Trace Session Statistics",
        "Per session: how many traces it has, when the first and the last started, and its user and components; "
        "the most recently active sessions first.",
    ),
    "search_traces": (
        "Search Traces",
        "Traces matching a filter expression (`{\"op\": \"EQ\", \"key\": \"status\", \"value\": \"ERROR\"}`, "
        "combined with `AND`, `OR` and `NOT`; keys and operators from `GET /traces/filter-schema`), as trace details "
        "(`group_by: run`) or per-session statistics (`group_by: session`).",
    ),
    # --- Schedules ---------------------------------------------------------------------------
    "list_schedules_schedules_get": (
        "List Schedules",
        "The caller's schedules, newest first (under user isolation only their own; another "
        "user's are never listed), optionally only the `enabled` or disabled ones. Timestamps are "
        "epoch seconds.",
    ),
    "create_schedule_schedules_post": (
        "Create Schedule",
        "A schedule of the caller's that calls a run route (`/agents/<id>/runs`, `/teams/<id>/runs`, "
        "`/workflows/<id>/runs`) with `payload` as its form fields, as a background run of the "
        "caller, at each tick of `cron_expr` (5 fields, read in `timezone`; empty: on demand, "
        "fired only by trigger). Refused with a `422` and the reason: an invalid cron expression "
        "(`Invalid cron expression: …`) or time zone, an endpoint that names no agent, team or "
        "workflow run route, or a payload that route's form would refuse. A name the caller "
        "already uses is a `409`. Each tick fires once, however many beats or web processes run.",
    ),
    "get_schedule_schedules__schedule_id__get": (
        "Get Schedule",
        "One of the caller's schedules, with its provenance (`managed_by`, `target_type`, "
        "`target_id`) and `disabled_reason`. Another user's is a `404`.",
    ),
    "update_schedule_schedules__schedule_id__patch": (
        "Update Schedule",
        "Change a schedule. Only `name`, `description`, `method`, `endpoint`, `payload`, "
        "`cron_expr`, `timezone`, `timeout_seconds`, `max_retries`, `retry_delay_seconds`, "
        "`enabled`, `next_run_at` (epoch seconds; moved to the first tick at or after it) and "
        "`disabled_reason` may be written: any other key (owner, provenance, lock state) is a `422` "
        "naming every rejected column. The new state is validated as a create is.",
    ),
    "delete_schedule_schedules__schedule_id__delete": (
        "Delete Schedule",
        "Delete a schedule and its run history (the runs it made stay in their sessions).",
    ),
    "enable_schedule_schedules__schedule_id__enable_post": (
        "Enable Schedule",
        "Enable a schedule; its next run is computed from now. A schedule whose target no longer "
        "exists cannot be enabled (`409`).",
    ),
    "disable_schedule_schedules__schedule_id__disable_post": (
        "Disable Schedule",
        "Disable a schedule: it does not fire until enabled again.",
    ),
    "trigger_schedule_schedules__schedule_id__trigger_post": (
        "Trigger Schedule",
        "Fire a schedule now, as a fire of its own: its run is a background run of the schedule's "
        "owner; the answer is the schedule run, `running` with its `run_id` and `session_id` (poll "
        "the run, or this schedule's runs). A disabled schedule is a `409`.",
    ),
    "list_schedule_runs_schedules__schedule_id__runs_get": (
        "List Schedule Runs",
        "A schedule's fires, latest first: each with its attempt, status (`running`, `success`, "
        "`failed`, `paused`; `pending` while a retry waits), the run it started and its error.",
    ),
    "get_schedule_run_schedules__schedule_id__runs__run_id__get": (
        "Get Schedule Run",
        "One fire of a schedule. Another user's, or one of another schedule, is a `404`.",
    ),
    # --- Knowledge ---------------------------------------------------------------------------
    "upload_content": (
        "Upload Content",
        "Add a file (multipart part `file`), a text (`text_content`) or a web page (`url`) to a knowledge base. "
        "Answers 202 with the content `processing`; it is read, chunked and embedded by a background job, and "
        "`GET /knowledge/content/{content_id}/status` says when it is `completed` or why it `failed`. The same bytes "
        "already in the base are not embedded again: that content is answered instead.",
    ),
    "get_content": (
        "List Content",
        "One page of a knowledge base's contents the caller may read (their own and the shared ones), newest first by default.",
    ),
    "delete_all_content": (
        "Delete All Content",
        "Remove every content of the base that the caller may change (their own; an admin's: everyone's), with its chunks.",
    ),
    "upload_remote_content": (
        "Upload Remote Content",
        "Add one file of a configured content source (`config_id`, one of `GET /knowledge/{knowledge_id}/sources`; "
        "server folders set in `KNOWLEDGE_SOURCES`) by its `path` in that source. Answers 202, as an upload does.",
    ),
    "get_content_by_id": (
        "Get Content by ID",
        "A content the caller may read, with its status, size and metadata.",
    ),
    "update_content": (
        "Update Content",
        "Change a content's name, description, metadata (reaching its chunks at once, for filtered searches) or reader (used on refresh).",
    ),
    "delete_content_by_id": (
        "Delete Content by ID",
        "Remove a content the caller may change, and its chunks; answers the deleted content.",
    ),
    "refresh_content": (
        "Refresh Content",
        "Read, chunk and embed a content again: a failed one, a web page that changed, a new reader. Its passages stay "
        "searchable until the new ones replace them. A content whose ingestion is still under way is answered as it is.",
    ),
    "get_content_status": (
        "Get Content Status",
        "`processing`, `completed` or `failed`, with the reason of a failure.",
    ),
    "search_knowledge": (
        "Search Knowledge",
        "The passages best matching `query` among those the caller may read, best first: `search_type` `vector` "
        "(the default: meaning), `keyword` (full text) or `hybrid` (both, fused by reciprocal rank). `filters` are "
        "equality conditions on metadata keys. At most `max_results` passages (default 10, here at most 100), "
        "paged by `meta`.",
    ),
    "get_knowledge_config": (
        "Get Config",
        "The readers (and the content types each reads), chunkers, filterable metadata keys, the vector store with its search types, and the remote content sources.",
    ),
    "list_content_sources": (
        "List Content Sources",
        "The remote content sources of a knowledge base: the server folders set in `KNOWLEDGE_SOURCES` (type `local`).",
    ),
    "list_source_files": (
        "List Files in Source",
        "One folder level of a content source (`prefix` names it, ending in `/`): its folders and a page of its files.",
    ),
    # --- Evals ------------------------------------------------------------------------------
    "get_eval_runs": (
        "List Evaluation Runs",
        "Retrieve paginated evaluation runs with filtering and sorting options. Filter by agent, "
        "team, workflow, model (`model_id`), the kind of component evaluated (`type`: agent, team "
        "or workflow) or evaluation type (`eval_types`, comma-separated). Newest first by default; "
        "an unknown `sort_by` sorts by `created_at`. Under user isolation a caller sees only their "
        "own eval runs.",
    ),
    "run_eval": (
        "Execute Evaluation",
        "Run an evaluation against an agent, a team or (this server's extension) a workflow: "
        "`accuracy` (a judge model scores the answer against `expected_output`, 1-10, with its "
        "reasoning), `agent_as_judge` (a judge model scores the answer against `criteria`, "
        "`binary` pass/fail or `numeric` with a `threshold`), `performance` (run time and peak "
        "memory of `num_iterations` runs after `warmup_runs`, with percentiles) or `reliability` "
        "(the `expected_tool_calls` were made, with `expected_tool_call_arguments`). Every eval "
        "run gets its own id. The eval runs as a background job; as AgentOS, the response is the "
        "finished eval (`200`), waiting at most `EVALS_SYNC_WAIT_SECONDS` (default 120): past "
        "that, and at once with `?background=true`, the answer is `202` with the eval run as it "
        "stands (`status` queued or running); poll `GET /eval-runs/{eval_run_id}`. A failed eval "
        "is `200` with `status: failed` and its `error`. The judge is `EVALS_JUDGE_MODEL`, else "
        "the evaluated component's own model; `model_id` with `model_provider` runs the evaluated "
        "component on that model instead. `file_path_to_save_results` (relative to "
        "`EVALS_RESULTS_DIR`) takes the placeholders `{run_id}` and `{name}`; `{eval_id}` is "
        "refused, as in Agno v3.",
    ),
    "get_eval_run": (
        "Get Evaluation Run",
        "Retrieve detailed results and metrics for a specific evaluation run, with its `status` "
        "(queued, running, completed, failed), `progress` and `error`. Another user's eval run is "
        "a `404` under user isolation.",
    ),
    "update_eval_run": (
        "Update Evaluation Run",
        "Rename an evaluation run (`name`, 1 to 255 characters).",
    ),
    "delete_eval_runs": (
        "Delete Evaluation Runs",
        "Delete evaluation runs by id (JSON body `{\"eval_run_ids\": [...]}`). Ids that are unknown, "
        "or another user's under user isolation, are ignored. A queued or running eval whose row "
        "is deleted stops without a result.",
    ),
}
