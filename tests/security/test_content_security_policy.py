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
