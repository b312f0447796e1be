"""The Content Security Policy on every kind of response, and pages that need nothing it refuses.

What the browser does under the policy is in tests/ui/test_csp_browser.py; this checks the header
and the markup without one.
"""
from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from tests.factories import make_eval_run, make_run, make_session

pytestmark = pytest.mark.django_db

POLICY = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}
# Redoc (our own schema, nothing else) writes <style> elements and starts a blob: worker at run time.
REDOC_POLICY = POLICY | {"style-src-elem": ["'self'", "'unsafe-inline'"], "worker-src": ["'self'", "blob:"]}

ANONYMOUS = ["/chat/login/", "/admin/login/", "/docs", "/docs?script", "/redoc", "/openapi.json", "/agents", "/health",
             "/no-such-route", "/static/chat/js/app.js", "/static/chat/favicon.svg"]
SIGNED_IN = ["/chat/", "/chat/s/{session_id}/", "/chat/tokens/"]
STAFF = ["/admin/", "/admin/dashboard/", "/admin/agno_sessions/run/", "/admin/agno_sessions/run/{run_pk}/change/",
         "/admin/userdata/?user_id=alice", "/admin/userdata/erase/?user_id=alice",
         # django-celery-beat's periodic-task page ships an inline script (read-only in the console: the
         # scheduler writes these rows); the eval runs list has its score trends.
         "/admin/django_celery_beat/periodictask/{task_pk}/change/", "/admin/evals/evalrun/"]
HTML_PAGES = [page for page in ANONYMOUS + SIGNED_IN + STAFF if page not in {"/docs?script", "/openapi.json", "/agents", "/health", "/no-such-route"} and not page.startswith("/static/")]


def parse_policy(header: str) -> dict[str, list[str]]:
    directives = [part.split() for part in header.split(";") if part.strip()]
    return {name: sources for name, *sources in directives}


@pytest.fixture
def pages(client):
    """Every page above, fetched as the person it is for."""
    users = get_user_model().objects
    alice = users.create_user(username="alice", password="x-long-password")
    operator = users.create_user(username="operator", password="x-long-password", is_staff=True, is_superuser=True)
    session = make_session("alice", component_id="assistant")
    run = make_run("alice", session=session, component_id="assistant", run_data={"content": "hi"})
    make_eval_run("alice", score=0.5)
    task = PeriodicTask.objects.create(name="nightly", task="scheduler.fire", crontab=CrontabSchedule.objects.create(minute="0", hour="3"))

    def fetch(path: str):
        if path in SIGNED_IN:
            client.force_login(alice)
        elif path in STAFF:
            client.force_login(operator)
        else:
            client.logout()
        response = client.get(path.format(session_id=session.session_id, run_pk=run.pk, task_pk=task.pk))
        body = b"".join(response.streaming_content) if response.streaming else response.content
        return response, body.decode()

    return fetch


@pytest.mark.parametrize("path", ANONYMOUS + SIGNED_IN + STAFF)
def test_every_response_carries_the_policy(pages, path):
    response, _ = pages(path)
    assert response.status_code == (404 if path == "/no-such-route" else 200)
    assert parse_policy(response["Content-Security-Policy"]) == (REDOC_POLICY if path == "/redoc" else POLICY)


class InlineCode(HTMLParser):
    """Collects what the policy refuses: inline scripts and event handlers, <style>, style attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._script: dict[str, str | None] | None = None

    def handle_starttag(self, tag, attrs):
        named = dict(attrs)
        self.found += [f"<{tag} {name}=...>" for name in named if name == "style" or name.startswith("on")]
        if tag == "style":
            self.found.append("<style>")
        if tag == "script":
            self._script = named

    def handle_data(self, data):
        # A data block (type="application/json", as json_script writes) is never run: CSP allows it.
        if self._script is not None and "src" not in self._script and self._script.get("type") != "application/json" and data.strip():
            self.found.append(f"inline <script type={self._script.get('type')}>")

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = None


@pytest.mark.parametrize("path", HTML_PAGES)
def test_pages_have_no_inline_scripts_or_styles(pages, path):
    response, body = pages(path)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    parser = InlineCode()
    parser.feed(body)
    assert parser.found == []


# The headers the settings alone give are built once (core.middleware.ContentSecurityPolicyMiddleware);
# whatever a view or the settings change must still give exactly django-csp's own headers.
REPORT_ONLY = {"DIRECTIVES": {"default-src": ["'self'"], "report-uri": "/csp-reports"}}


def _plain(request, response):
    pass


def _nonce_used(request, response):
    str(request.csp_nonce)


def _updated(request, response):
    response._csp_update = {"img-src": ["https://images.example"]}


def _replaced(request, response):
    response._csp_replace = {"script-src": ["'self'", "https://cdn.example"]}


def _configured(request, response):
    response._csp_config = {"default-src": ["'none'"]}


def _updated_report_only(request, response):
    response._csp_update_ro = {"img-src": ["https://images.example"]}


def _exempt(request, response):
    response._csp_exempt = True


def _header_set(request, response):
    response["Content-Security-Policy"] = "default-src 'none'"


CHANGES = [_plain, _nonce_used, _updated, _replaced, _configured, _updated_report_only, _exempt, _header_set]


def _answer(middleware_class, path: str, change, status: int = 200):
    from django.http import HttpResponse
    from django.test import RequestFactory

    request = RequestFactory().get(path)

    def view(request):
        response = HttpResponse("{}", status=status, content_type="application/json")
        change(request, response)
        return response

    middleware = middleware_class(view)
    middleware.process_request(request)
    response = middleware.process_response(request, view(request))
    headers = {name: response.get(name) for name in ("Content-Security-Policy", "Content-Security-Policy-Report-Only")}
    if headers["Content-Security-Policy"] and "nonce-" in headers["Content-Security-Policy"]:
        assert request._csp_nonce in headers["Content-Security-Policy"]
        headers["Content-Security-Policy"] = headers["Content-Security-Policy"].replace(request._csp_nonce, "NONCE")
    return headers, request


@pytest.mark.parametrize("report_only", [None, REPORT_ONLY], ids=["enforced", "and-report-only"])
@pytest.mark.parametrize("change", CHANGES, ids=lambda change: change.__name__.strip("_"))
def test_the_policy_headers_are_django_csps_own(settings, change, report_only):
    from csp.exceptions import CSPNonceError
    from csp.middleware import CSPMiddleware

    from core.middleware import ContentSecurityPolicyMiddleware

    if report_only:
        settings.CONTENT_SECURITY_POLICY_REPORT_ONLY = report_only
    ours, request = _answer(ContentSecurityPolicyMiddleware, "/agents", change)
    upstream, _ = _answer(CSPMiddleware, "/agents", change)
    assert ours == upstream
    assert (ours["Content-Security-Policy-Report-Only"] is not None) == bool(report_only)
    if change is not _nonce_used:  # a nonce asked for once the header is written is an error
        with pytest.raises(CSPNonceError):
            str(request.csp_nonce)


def test_a_changed_policy_setting_is_read_again(settings):
    from core.middleware import ContentSecurityPolicyMiddleware

    before, _ = _answer(ContentSecurityPolicyMiddleware, "/agents", _plain)
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'none'"]}, "EXCLUDE_URL_PREFIXES": ["/health"]}
    after, _ = _answer(ContentSecurityPolicyMiddleware, "/agents", _plain)
    excluded, _ = _answer(ContentSecurityPolicyMiddleware, "/health", _plain)
    assert parse_policy(before["Content-Security-Policy"]) == POLICY
    assert after["Content-Security-Policy"] == "default-src 'none'"
    assert excluded["Content-Security-Policy"] is None


def test_debug_error_pages_are_left_alone_as_django_csp_leaves_them(settings):
    from csp.middleware import CSPMiddleware

    from core.middleware import ContentSecurityPolicyMiddleware

    settings.DEBUG = True
    for status in (404, 500):
        assert _answer(ContentSecurityPolicyMiddleware, "/agents", _plain, status)[0] == _answer(CSPMiddleware, "/agents", _plain, status)[0] == {
            "Content-Security-Policy": None, "Content-Security-Policy-Report-Only": None}
