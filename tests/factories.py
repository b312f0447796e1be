"""Row factories for tests: one per owned model, so tenancy tests can cover every one of them."""
from __future__ import annotations

import itertools
from datetime import timedelta
from collections.abc import Callable
from typing import Any

from django.utils import timezone

from jobs.models import CancelIntent, Job
from approvals.models import Approval
from chat.models import SharedConversation
from core.auth import OPERATOR
from core.models import AccessToken
from core.services.tokens import access_token_create
from metrics.models import MetricsAggregate, MetricsRefreshState
from metrics.services import row_id
from scheduler.models import Schedule, ScheduleRun
from knowledge.models import VECTOR_DIMENSIONS, Chunk, Content, KnowledgeBase
from evals.models import EvalBatch, EvalDataset, EvalRun
from importer.models import ImportedRecord
from traces.models import Span, Trace
from learnings.models import Learning
from sessions.models import Run, RunEvent, RunFeedback, Session, UserMemory
from sessions.services import memory_create, run_create, run_events_append, run_feedback_set, session_create

_counter = itertools.count(1)


def make_session(user_id: str | None = "alice", **fields: Any) -> Session:
    fields.setdefault("session_id", f"sess-{next(_counter)}")
    fields.setdefault("component_id", "demo")
    return session_create(user_id=user_id, **fields)


def make_run(user_id: str | None = "alice", session: Session | None = None, **fields: Any) -> Run:
    session = session or make_session(user_id)
    fields.setdefault("input", {"input_content": "hello"})
    fields.setdefault("component_id", session.component_id)
    return run_create(session=session, **fields)


def make_event(user_id: str | None = "alice", run: Run | None = None, **fields: Any) -> RunEvent:
    run = run or make_run(user_id)
    index = fields.pop("event_index", 0)
    payload = fields.pop("payload", {"event": "RunStarted", "run_id": run.run_id, "created_at": int(timezone.now().timestamp())})
    run_events_append(run=run, events=[payload], first_index=index)
    return RunEvent.all_users.get(run_id=run.pk, event_index=index)


def make_memory(user_id: str | None = "alice", **fields: Any) -> UserMemory:
    fields.setdefault("memory", f"memory {next(_counter)}")
    fields.setdefault("topics", ["prefs"])
    return memory_create(user_id=user_id, **fields)


def make_learning(user_id: str | None = "alice", **fields: Any) -> Learning:
    fields.setdefault("learning_id", f"decision_{next(_counter)}")
    fields.setdefault("learning_type", "decision_log")
    fields.setdefault("content", {"decision": "use the cache"})
    return Learning.objects.create(user_id=user_id, **fields)


def make_feedback(user_id: str | None = "alice", run: Run | None = None, **fields: Any) -> RunFeedback:
    run = run or make_run(user_id)
    fields.setdefault("rating", "up")
    if user_id is None:  # a shared row: no person rates it, the service never makes one
        return RunFeedback.objects.create(user_id=None, run=run, session_id=run.session_id, **fields)
    return run_feedback_set(user_id=user_id, run_id=run.pk, **fields)


def make_cancel_intent(user_id: str | None = "alice", **fields: Any) -> CancelIntent:
    fields.setdefault("run_id", f"run-{next(_counter)}")
    return CancelIntent.objects.create(user_id=user_id, **fields)


def make_access_token(user_id: str | None = "alice", **fields: Any) -> AccessToken:
    fields.setdefault("name", f"token-{next(_counter)}")
    fields.setdefault("scopes", ["agents:read"])
    token, _secret = access_token_create(user_id=user_id, granted_by=OPERATOR, **fields)
    return token


def make_shared_conversation(user_id: str | None = "alice", **fields: Any) -> SharedConversation:
    session = fields.pop("session", None) or make_session(user_id)
    fields.setdefault("token", f"share-token-{next(_counter)}")
    fields.setdefault("messages", [{"role": "user", "content": "hello"}])
    return SharedConversation.objects.create(user_id=user_id, session=session, **fields)


def make_job(user_id: str | None = "alice", **fields: Any) -> Job:
    session = fields.pop("session", None) or make_session(user_id)
    fields.setdefault("id", f"job-{next(_counter)}")
    fields.setdefault("component_id", "assistant")
    return Job.objects.create(user_id=user_id, session_id=session.pk, payload={"message": "hi"}, **fields)


def make_approval(user_id: str | None = "alice", **fields: Any) -> Approval:
    run = fields.pop("run", None) or make_run(user_id, status="PAUSED")
    fields.setdefault("id", f"approval-{next(_counter)}")
    fields.setdefault("tool_name", "wire_funds")
    fields.setdefault("tool_args", {"to": "bob", "amount": 100})
    fields.setdefault("agent_id", run.component_id)
    return Approval.objects.create(user_id=user_id, run_id=run.pk, session_id=run.session_id, **fields)


def make_metrics_row(user_id: str | None = "alice", **fields: Any) -> MetricsAggregate:
    day = fields.pop("date", None) or (timezone.now() - timedelta(days=next(_counter))).date()
    period = fields.pop("aggregation_period", "daily")
    fields.setdefault("agent_runs_count", 1)
    return MetricsAggregate.objects.create(id=row_id(user_id, day, period), user_id=user_id, date=day, aggregation_period=period, **fields)


def make_refresh_state(user_id: str | None = "alice", **fields: Any) -> MetricsRefreshState:
    fields.setdefault("scope", f"test-{user_id}-{next(_counter)}")
    return MetricsRefreshState.objects.create(user_id=user_id, **fields)


def make_schedule(user_id: str | None = "alice", **fields: Any) -> Schedule:
    """A schedule row as the scheduler's service writes it (without its PeriodicTask)."""
    fields.setdefault("name", f"schedule-{next(_counter)}")
    fields.setdefault("endpoint", "/agents/assistant/runs")
    fields.setdefault("payload", {"message": "good morning"})
    fields.setdefault("cron_expr", "0 9 * * *")
    fields.setdefault("target_type", "agent")
    fields.setdefault("target_id", "assistant")
    return Schedule.objects.create(user_id=user_id, **fields)


def make_schedule_run(user_id: str | None = "alice", **fields: Any) -> ScheduleRun:
    schedule = fields.pop("schedule", None) or make_schedule(user_id)
    fields.setdefault("scheduled_for", timezone.now())
    return ScheduleRun.objects.create(user_id=user_id, schedule=schedule, **fields)


def make_knowledge_base(user_id: str | None = "alice", **fields: Any) -> KnowledgeBase:
    fields.setdefault("name", f"base-{next(_counter)}")
    fields.setdefault("embedder_id", "minilm")
    return KnowledgeBase.objects.create(user_id=user_id, **fields)


def make_content(user_id: str | None = "alice", base: KnowledgeBase | None = None, **fields: Any) -> Content:
    base = base or make_knowledge_base(user_id)
    fields.setdefault("name", f"doc-{next(_counter)}.txt")
    fields.setdefault("source_type", "text")
    fields.setdefault("status", "completed")
    return Content.objects.create(user_id=user_id, base=base, **fields)


def make_chunk(user_id: str | None = "alice", content: Content | None = None, **fields: Any) -> Chunk:
    content = content or make_content(user_id)
    fields.setdefault("index", next(_counter))
    fields.setdefault("text", "a passage of text")
    fields.setdefault("embedding", [1.0] + [0.0] * (VECTOR_DIMENSIONS - 1))
    fields.setdefault("embedder_id", "minilm")
    return Chunk.objects.create(user_id=user_id, base_id=content.base_id, content=content, **fields)


def make_eval_run(user_id: str | None = "alice", **fields: Any) -> EvalRun:
    fields.setdefault("run_id", f"eval-{next(_counter)}")
    fields.setdefault("eval_type", "reliability")
    fields.setdefault("agent_id", "assistant")
    fields.setdefault("model_id", "demo")
    fields.setdefault("model_provider", "Offline")
    fields.setdefault("eval_input", {"input": "hi", "expected_tool_calls": ["add"]})
    fields.setdefault("eval_data", {"eval_status": "PASSED", "passed_tool_calls": ["add"], "failed_tool_calls": []})
    fields.setdefault("status", "completed")
    return EvalRun.objects.create(user_id=user_id, **fields)


def make_eval_dataset(user_id: str | None = "alice", **fields: Any) -> EvalDataset:
    fields.setdefault("id", f"dataset-{next(_counter)}")
    fields.setdefault("name", "sums")
    fields.setdefault("cases", [{"input": "2+2?", "expected_output": "4"}])
    return EvalDataset.objects.create(user_id=user_id, **fields)


def make_eval_batch(user_id: str | None = "alice", **fields: Any) -> EvalBatch:
    fields.setdefault("id", f"batch-{next(_counter)}")
    fields.setdefault("dataset_id", "dataset-x")
    fields.setdefault("component_id", "assistant")
    return EvalBatch.objects.create(user_id=user_id, **fields)


def make_trace(user_id: str | None = "alice", **fields: Any) -> Trace:
    now = timezone.now()
    fields.setdefault("trace_id", f"{next(_counter):032x}")
    fields.setdefault("run_id", f"traced-run-{next(_counter)}")
    fields.setdefault("name", "Agent.run")
    fields.setdefault("agent_id", "assistant")
    for name in ("start_time", "end_time", "created_at"):
        fields.setdefault(name, now)
    return Trace.objects.create(user_id=user_id, **fields)


def make_span(user_id: str | None = "alice", trace: Trace | None = None, **fields: Any) -> Span:
    trace = trace or make_trace(user_id)
    now = timezone.now()
    fields.setdefault("span_id", f"{next(_counter):016x}")
    fields.setdefault("name", "Agent.run")
    fields.setdefault("span_type", "AGENT")
    fields.setdefault("start_time", now)
    fields.setdefault("end_time", now)
    return Span.objects.create(user_id=user_id, trace=trace, **fields)


def make_imported_record(user_id: str | None = "alice", **fields: Any) -> ImportedRecord:
    """The importer's note that a row came from an Agno database (importer.services writes them)."""
    fields.setdefault("kind", "session")
    fields.setdefault("source_id", f"imported-{next(_counter)}")
    fields.setdefault("source", "agno.db")
    return ImportedRecord.all_users.create(user_id=user_id, **fields)


# model -> factory(user_id) for every OwnedModel; tests/core/test_tenancy.py fails if one is missing.
OWNED_FACTORIES: dict[type, Callable[[str | None], Any]] = {
    Session: make_session,
    Run: make_run,
    RunEvent: make_event,
    UserMemory: make_memory,
    Learning: make_learning,
    RunFeedback: make_feedback,
    CancelIntent: make_cancel_intent,
    AccessToken: make_access_token,
    SharedConversation: make_shared_conversation,
    Job: make_job,
    Approval: make_approval,
    MetricsAggregate: make_metrics_row,
    MetricsRefreshState: make_refresh_state,
    Schedule: make_schedule,
    ScheduleRun: make_schedule_run,
    KnowledgeBase: make_knowledge_base,
    Content: make_content,
    Chunk: make_chunk,
    EvalRun: make_eval_run,
    EvalDataset: make_eval_dataset,
    EvalBatch: make_eval_batch,
    Trace: make_trace,
    Span: make_span,
    ImportedRecord: make_imported_record,
}


def signed_in(username: str, *, superuser: bool = False, **client: Any):
    """A Django test client signed in as a new user of the browser session (the chat's)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    users = get_user_model().objects
    user = users.create_superuser(username, password="pw-for-tests") if superuser else users.create_user(username, password="pw-for-tests")
    browser = Client(**client)
    browser.force_login(user)
    return browser
