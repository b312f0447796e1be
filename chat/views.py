"""The browser chat UI: login, logout and the chat page.

The page itself is a shell: the browser talks to the same AgentOS REST API as any client,
authenticated by the Django session (``core.api.views.BrowserSessionAuthentication``) and bound
to the logged-in user's own data.
"""
from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_http_methods

from core.logins import LoginForm
from metrics.selectors import last_refreshed_at, refresh_status, usage_series
from metrics.services import RefreshAlreadyRunning, RefreshScope, metrics_refresh_run, metrics_timezone
from sessions.models import RunOrigin
from sessions.selectors import run_references, run_usage_recent, session_get, session_list

USAGE_DAYS = 30
USAGE_RECENT_RUNS = 20  # the latest runs My usage lists one by one

logger = logging.getLogger("agno_site.chat")


class LoginView(auth_views.LoginView):
    template_name = "chat/login.html"
    authentication_form = LoginForm
    redirect_authenticated_user = True
    extra_context = {"site_name": settings.AGENT_OS_NAME}


class LogoutView(auth_views.LogoutView):
    """POST only (Django's default since 5.0): a link cannot log anyone out."""


def _max_file_bytes() -> int:
    """What one document may weigh: past the request bound it is a 413, past the knowledge bound
    it is stored failed; the page names the smaller in its messages."""
    return min(settings.UPLOAD_MAX_FILE_BYTES, settings.KNOWLEDGE_MAX_CONTENT_BYTES)


def _page(request: HttpRequest, *, session_id: str | None, status: int = 200) -> HttpResponse:
    config = {
        "user": request.user.get_username(),
        "sessionId": session_id,
        "chatUrl": "/chat/",
        "sessionUrl": "/chat/s/",
        "loginUrl": settings.LOGIN_URL,
        "documentsUrl": "/chat/documents/",
        "runsUrl": "/chat/runs/",
        "maxFileBytes": _max_file_bytes(),
        # The longest message the run API accepts: the composer says so, and refuses more, before sending.
        "maxMessageChars": settings.RUN_MAX_MESSAGE_CHARS,
        # Replies link to their trace only where runs are traced (TRACING: on in development).
        "tracing": settings.TRACING,
    }
    context = {"config": config, "site_name": settings.AGENT_OS_NAME, "not_found": status == 404}
    return render(request, "chat/index.html", context, status=status)


@require_GET
@login_required
@ensure_csrf_cookie
def chat_home(request: HttpRequest) -> HttpResponse:
    return _page(request, session_id=None)


@require_GET
@login_required
@ensure_csrf_cookie
def chat_session(request: HttpRequest, session_id: str) -> HttpResponse:
    # Another user's session and a missing one look the same: a 404 that names neither.
    if session_get(user=request.user.get_username(), session_id=session_id) is None:
        return _page(request, session_id=None, status=404)
    return _page(request, session_id=session_id)


@require_GET
@login_required
@ensure_csrf_cookie
def chat_memories(request: HttpRequest) -> HttpResponse:
    """My memories: what the agents remember about the signed-in user (through the /memories API)."""
    config = {"user": request.user.get_username(), "chatUrl": "/chat/", "loginUrl": settings.LOGIN_URL}
    return render(request, "chat/memories.html", {"config": config, "site_name": settings.AGENT_OS_NAME})


@require_GET
@login_required
@ensure_csrf_cookie
def chat_learnings(request: HttpRequest) -> HttpResponse:
    """My learnings: what agents with learning on learned about the signed-in user (through the
    /learnings API)."""
    config = {"user": request.user.get_username(), "chatUrl": "/chat/", "loginUrl": settings.LOGIN_URL}
    return render(request, "chat/learnings.html", {"config": config, "site_name": settings.AGENT_OS_NAME})


@require_GET
@login_required
@ensure_csrf_cookie
def chat_documents(request: HttpRequest) -> HttpResponse:
    """My documents: the signed-in user's knowledge contents (through the /knowledge API): add
    files, web pages and notes, follow their ingestion, refresh, delete and search them."""
    config = {
        "user": request.user.get_username(),
        "chatUrl": "/chat/",
        "sessionUrl": "/chat/s/",
        "documentsUrl": "/chat/documents/",
        "loginUrl": settings.LOGIN_URL,
        "maxFileBytes": _max_file_bytes(),
    }
    return render(request, "chat/documents.html", {"config": config, "site_name": settings.AGENT_OS_NAME})


PASSAGE_MISSING = "This passage is not one of yours, or it was deleted."


def _passage_page(request: HttpRequest, context: dict[str, Any] | None, *, status: int = 200) -> HttpResponse:
    """The page an answer's source links to: a document's (or a search's) passages, the cited
    one marked; a missing one and another user's look the same (a 404)."""
    base = {"site_name": settings.AGENT_OS_NAME, "missing": context is None, "missing_text": PASSAGE_MISSING}
    return render(request, "chat/passage.html", {**base, **(context or {})}, status=404 if context is None else status)


@require_GET
@login_required
def chat_document(request: HttpRequest, content_id: str) -> HttpResponse:
    """One of the signed-in user's documents (or a shared one), passage by passage, each with its
    anchor (``#chunk-<id>``); ``?passage=<chunk id>`` marks the one an answer cited."""
    from knowledge.models import Content
    from knowledge.services import content_passages_for_user

    try:
        content, passages = content_passages_for_user(user=request.user.get_username(), content_id=content_id)
    except Content.DoesNotExist:
        return _passage_page(request, None)
    cited = request.GET.get("passage", "")
    rows = [
        {
            "anchor": f"chunk-{row['id']}", "text": row["text"], "cited": str(row["id"]) == cited,
            "label": f"Passage {position}", "where": _where(row["metadata"] or {}),
        }
        for position, row in enumerate(passages, start=1)
    ]
    return _passage_page(request, {
        "title": str(content), "origin": content.url or content.file_name, "passages": rows,
        "cited": next((row for row in rows if row["cited"]), None),
        "intro": f"{len(rows)} passage{'' if len(rows) == 1 else 's'}, in the order they appear in the document.",
        "back_url": f"/chat/documents/#document-{content.pk}", "back_text": "← My documents",
    })


def _where(metadata: dict[str, Any]) -> str:
    """Where in its document a passage is (the reader's page and headings), when it says."""
    parts = []
    if metadata.get("page"):
        parts.append(f"page {metadata['page']}")
    headings = metadata.get("headings")
    if isinstance(headings, list) and headings:
        parts.append(" › ".join(str(heading) for heading in headings))
    return " · ".join(parts)


@require_GET
@login_required
def chat_run_source(request: HttpRequest, run_id: str, search: int, hit: int) -> HttpResponse:
    """A source of one of the signed-in user's replies that has no stored document (a knowledge
    base held in code): the passage as the run recorded it, beside the other passages of the
    same source that the reply's searches found."""
    session_id, references = run_references(user=request.user.get_username(), run_id=run_id) or ("", [])
    found = _reference_passages(references)
    cited = found.get((search, hit))
    if cited is None:
        return _passage_page(request, None)
    rows, seen = [], set()
    for place, passage in found.items():
        # The chat lists a passage two searches found once, at either place: it is listed once here too.
        if passage["name"] != cited["name"] or passage["key"] in seen:
            continue
        seen.add(passage["key"])
        is_cited = passage["key"] == cited["key"]
        anchor = f"ref-{search}-{hit}" if is_cited else f"ref-{place[0]}-{place[1]}"
        rows.append({"anchor": anchor, "text": passage["content"], "cited": is_cited, "label": f"Search: “{passage['query']}”", "where": ""})
    return _passage_page(request, {
        "title": cited["name"] or "A knowledge base", "origin": "", "passages": rows, "cited": next(row for row in rows if row["cited"]),
        "intro": "This source is held in the agent's code, not in your documents: these are its passages that the reply's searches found.",
        "back_url": f"/chat/s/{session_id}/", "back_text": "← Back to the conversation",
    })


def _reference_passages(references: list[Any]) -> dict[tuple[int, int], dict[str, str]]:
    """Each passage of a run's references by its place (search, hit), with the key the chat
    tells passages apart by (its chunk id, else its source and text)."""
    found: dict[tuple[int, int], dict[str, str]] = {}
    for search_index, search in enumerate(references):
        items = search.get("references") if isinstance(search, dict) else None
        for hit_index, item in enumerate(items if isinstance(items, list) else []):
            hit = {"content": item} if isinstance(item, str) else item
            if not isinstance(hit, dict) or not isinstance(hit.get("content"), str):
                continue
            found[(search_index, hit_index)] = {
                "content": hit["content"], "name": str(hit.get("name") or ""), "query": str(search.get("query") or ""),
                "key": str(hit.get("chunk_id") or f"{hit.get('content_id') or hit.get('name') or ''}\0{hit['content']}"),
            }
    return found


@require_GET
@login_required
@ensure_csrf_cookie
def chat_approvals(request: HttpRequest) -> HttpResponse:
    """My approvals: the signed-in user's runs that wait for (or got) an operator's decision,
    through the /approvals API, which shows a browser user only their own."""
    config = {"user": request.user.get_username(), "chatUrl": "/chat/", "sessionUrl": "/chat/s/", "loginUrl": settings.LOGIN_URL}
    return render(request, "chat/approvals.html", {"config": config, "site_name": settings.AGENT_OS_NAME})


@require_http_methods(["GET", "POST"])
@login_required
def chat_usage(request: HttpRequest) -> HttpResponse:
    """My usage: the signed-in user's own runs and tokens per day, from the metrics tables.
    Opening it counts first (only their rows, only the days whose runs changed since the last
    count), so it never shows zeros for runs already made; POST (*Count again*) counts again."""
    user_id = request.user.get_username()
    scope = RefreshScope.of(user_id)
    _count_usage(scope)
    if request.method == "POST":
        return redirect("chat:usage")
    tz = metrics_timezone()
    start = timezone.now().astimezone(tz).date() - timedelta(days=USAGE_DAYS - 1)
    usage = usage_series(user=user_id, start=start, days=USAGE_DAYS)
    days = [
        {
            "date": label,
            "runs": sum(usage.runs[kind][slot] for kind in usage.runs),
            "input": usage.tokens["input"][slot], "output": usage.tokens["output"][slot], "total": usage.tokens["total"][slot],
            "errors": usage.errors[slot],
        }
        for slot, label in reversed(list(enumerate(usage.labels)))
    ]
    return render(request, "chat/usage.html", {
        "site_name": settings.AGENT_OS_NAME, "days": days, "usage": usage, "time_zone": tz.key,
        "recent_runs": run_usage_recent(user_id=user_id, limit=USAGE_RECENT_RUNS),
        "max_runs": max((day["runs"] for day in days), default=0) or 1, "max_tokens": max((day["total"] for day in days), default=0) or 1,
        "refreshed_at": last_refreshed_at(scope=scope), "refresh": refresh_status(scope=scope),
    })


def _count_usage(scope: RefreshScope) -> None:
    """Recompute the user's own metrics rows now. A count already in flight is shown as such;
    a failed one is recorded in the refresh state, which the page shows beside the numbers."""
    try:
        metrics_refresh_run(scope=scope)
    except RefreshAlreadyRunning:
        pass
    except Exception:  # noqa: BLE001 - recorded by metrics_refresh_run; the page still shows the last count
        logger.exception("counting %s's usage failed", scope.user_id)


@require_GET
@login_required
def chat_trace(request: HttpRequest, run_id: str) -> HttpResponse:
    """The trace of one of the signed-in user's runs: its spans as a waterfall (another user's
    run, or an untraced one, says so)."""
    from core.tenancy import scope_queryset
    from traces.api.render import duration
    from traces.models import Span, Trace
    from traces.waterfall import ordered, waterfall

    user = request.user.get_username()
    trace = scope_queryset(Trace.objects, user).filter(run_id=run_id).order_by("start_time").first()
    context: dict = {"site_name": settings.AGENT_OS_NAME, "run_id": run_id, "trace": trace}
    if trace is not None:
        spans = list(scope_queryset(Span.objects, user).filter(trace_id=trace.pk).order_by("start_time", "id"))
        context.update(
            waterfall=waterfall(trace, spans), took=duration(trace.duration_ms),
            spans=[{"span": span, "depth": depth, "took": duration(span.duration_ms)} for span, depth in ordered(spans)],
        )
    return render(request, "chat/trace.html", context, status=200 if trace is not None else 404)

@require_GET
@login_required
@ensure_csrf_cookie
def chat_schedules(request: HttpRequest) -> HttpResponse:
    """My schedules: the signed-in user's cron runs, through the /schedules API (a browser user
    sees only their own), with a cron helper and each schedule's history."""
    config = {"user": request.user.get_username(), "chatUrl": "/chat/", "sessionUrl": "/chat/s/", "loginUrl": settings.LOGIN_URL}
    return render(request, "chat/schedules.html", {"config": config, "site_name": settings.AGENT_OS_NAME})


EVAL_BATCH_KINDS = (("accuracy", "Accuracy: a judge scores each answer against its expected output"),
                    ("agent_as_judge", "Agent as judge: a judge scores each answer against your criteria"))


@require_http_methods(["GET", "POST"])
@login_required
def chat_evals(request: HttpRequest) -> HttpResponse:
    """My evals: the signed-in user's eval datasets (uploaded as JSON or CSV), batches run over
    them against an agent or team they may use, with each batch's aggregate score, and their
    latest eval runs. Everything is theirs alone (the eval services, owned by them)."""
    from django.contrib import messages
    from django.shortcuts import redirect

    from core.components import component_list
    from evals.selectors import dataset_list, eval_run_list, EvalRunFilters
    from evals.models import EvalBatch
    from evals.services import ComponentMissing, EvalInvalid, EvalRunNotFound, batch_create, dataset_cases_parse, dataset_create
    from core.tenancy import scope_queryset

    user = request.user.get_username()
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "upload":
                upload = request.FILES.get("dataset")
                name = (request.POST.get("name") or "").strip() or (upload.name.rsplit(".", 1)[0] if upload else "")
                if upload is None:
                    raise EvalInvalid("Choose a JSON or CSV file of cases to upload")
                if upload.size > 2 * 1024 * 1024:
                    raise EvalInvalid("A dataset file may be at most 2 MB")
                cases = dataset_cases_parse(content=upload.read(), filename=upload.name or "")
                dataset = dataset_create(owner_id=user, name=name[:255] or "dataset", cases=cases)
                messages.success(request, f"Uploaded “{dataset.name}”: {len(cases)} case(s).")
            elif action == "batch":
                kind, _, component_id = (request.POST.get("target") or "").partition(":")
                options: dict = {}
                if request.POST.get("criteria"):
                    options["criteria"] = request.POST["criteria"][:2000]
                batch = batch_create(
                    owner_id=user, dataset_id=request.POST.get("dataset_id") or "", eval_type=request.POST.get("eval_type") or "",
                    component_kind=kind, component_id=component_id, options=options,
                )
                messages.success(request, f"Running “{batch.dataset_name}” as {batch.eval_type} against {batch.component_id}: {batch.cases_total} case(s).")
            else:
                raise EvalInvalid("Unknown action")
        except (EvalInvalid, ComponentMissing) as exc:
            messages.error(request, str(exc))
        except EvalRunNotFound:
            messages.error(request, "That dataset is not yours, or it was deleted.")
        return redirect("chat:evals")
    targets = [(f"agent:{entry.component_id}", entry.name or entry.component_id) for entry in component_list("agent")]
    targets += [(f"team:{entry.component_id}", f"{entry.name or entry.component_id} (team)") for entry in component_list("team")]
    runs, _ = eval_run_list(user=user, filters=EvalRunFilters(), sort_by="created_at", descending=True, offset=0, limit=20)
    # The sessions the evals' cases ran in: out of the chat's conversation list, reachable here.
    eval_sessions, _ = session_list(user=user, origins=[RunOrigin.EVAL], sort_by="updated_at", offset=0, limit=20)
    return render(request, "chat/evals.html", {
        "site_name": settings.AGENT_OS_NAME, "datasets": dataset_list(user=user), "targets": targets, "kinds": EVAL_BATCH_KINDS,
        "batches": list(scope_queryset(EvalBatch.objects, user).order_by("-created_at")[:20]), "runs": runs,
        "eval_sessions": eval_sessions,
    })

