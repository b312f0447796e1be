"""Agents, teams and workflows: where code components are defined, their toolkits' and MCP
servers' bounds, the threads runs use, tracing, evals."""
from __future__ import annotations

from pathlib import Path

from . import envtools as env
from .environment import DEBUG, VAR_DIR

# --- Agents -------------------------------------------------------------------------------------
# Python modules that define agents in code (each exposes AGENTS, a list of runtime Agents).
AGENT_MODULES = env.listing("AGENT_MODULES")
# Root of the per-user folders the "workspace" toolkit works in.
WORKSPACE_ROOT = Path(env.string("WORKSPACE_ROOT", str(VAR_DIR / "workspace")))
# Hosts or networks the "http" toolkit may fetch although they are private (e.g. an intranet).
HTTP_FETCH_ALLOW_HOSTS = env.listing("HTTP_FETCH_ALLOW_HOSTS")
# MCP servers an operator may give a database-defined agent in the admin (the allow-list):
# ``name=command`` (a stdio server the worker starts) or ``name=url`` (streamable HTTP, through the
# "http" toolkit's address guard: a private address needs HTTP_FETCH_ALLOW_HOSTS). The bundled demo
# server is allowed by default; MCP_SERVERS=none allows none.
MCP_SERVERS = env.named_targets("MCP_SERVERS", "demo=python -m mcp_server.demo_tools")
# How long one MCP operation (connect, list or call) may take before it fails as a tool call.
MCP_TIMEOUT_SECONDS = env.number("MCP_TIMEOUT_SECONDS", 30.0, minimum=1.0)
# The platform's own MCP server at /mcp (its agents, teams and workflows as MCP tools).
MCP_SERVER_ENABLED = env.boolean("MCP_SERVER_ENABLED", True)
# Threads per process for the database phases of runs (a run's start, its end; a request's
# preparation). Runs wait on their models on the event loop and hold none while they wait.
RUN_THREADS = env.integer("RUN_THREADS", 32, minimum=1)
# Threads per process that sync tools run in (the run loop is async: a tool that blocks on files,
# HTTP or a database must not block it). Async tools are awaited on the loop and need none.
TOOL_THREADS = env.integer("TOOL_THREADS", 16, minimum=1)
# Connection pools per model provider and event loop; the runtime (no Django) reads the variable
# itself, so it is checked here, at start-up.
MODEL_HTTP_POOLS = env.integer("MODEL_HTTP_POOLS", 8, minimum=1)
# Inline and streamed runs one user may have in progress in each web process (0: no cap); over
# it a run is refused with 429: one user can never take more than that share of a process, and a
# person chatting needs one or two.
RUN_MAX_PER_USER = env.integer("RUN_MAX_PER_USER", 8, minimum=0)

# --- Tracing (OpenTelemetry) ------------------------------------------------------------------
# Every top-level run's spans (the run, model calls, tool calls, member runs, workflow steps) to
# the trace tables, and to an OTLP collector when OTEL_EXPORTER_OTLP_ENDPOINT is set. A code
# component's own ``tracing=`` setting wins over this. On in development (make run), opt-in in
# production, as AgentOS's tracing=True: a traced run costs about 0.2 ms more CPU, 3-5% of a run
# through a provider SDK (bench/README.md).
TRACING = env.boolean("TRACING", DEBUG)
# How long the span writer gathers finished runs' spans before it writes them (milliseconds).
TRACING_EXPORT_DELAY_MS = env.integer("TRACING_EXPORT_DELAY_MS", 1000, minimum=10)
OTEL_SERVICE_NAME = env.string("OTEL_SERVICE_NAME", "agno-site")

# --- Evals -------------------------------------------------------------------------------------
# The model that judges accuracy and agent-as-judge evals ("provider:model_id"); empty: the
# evaluated agent's or team's own model judges (a workflow then needs this set).
EVALS_JUDGE_MODEL = env.string("EVALS_JUDGE_MODEL", "")
# POST /eval-runs answers with the finished eval, as AgentOS does, waiting at most this long for
# its background job; past it, a 202 with the eval run as it stands (poll GET /eval-runs/{id}).
EVALS_SYNC_WAIT_SECONDS = env.integer("EVALS_SYNC_WAIT_SECONDS", 120, minimum=1)
# Where file_path_to_save_results templates are written (relative to it); unset: refused.
EVALS_RESULTS_DIR = env.string("EVALS_RESULTS_DIR", "") or None
