"""The ASGI request cycle: kept request threads (core.asgi) and Django's middleware that stays on
the event loop (core.middleware), still enforcing what it enforced."""
from __future__ import annotations

import asyncio
import json
import re
import threading

import httpx
import pytest
from asgiref.testing import ApplicationCommunicator
from django.http import JsonResponse
from django.urls import path

from core.asgi import ASGIHandler, RequestThreads
from tests.conftest import run_async

# Both requests must be inside this view at once for either to pass the barrier.
_together = threading.Barrier(2, timeout=10)


def where(request):
    return JsonResponse({"thread": threading.get_ident()})


def meet(request):
    _together.wait()
    return JsonResponse({"thread": threading.get_ident()})


_serials = iter(range(1, 1_000_000))


def _number_the_connection(sender, connection, **kwargs) -> None:
    connection.agno_test_serial = next(_serials)


def connection_of(request):
    """The thread's database connection: which one it is, and, on request, made past its age."""
    from django.db import connection

    connection.ensure_connection()
    answer = {"thread": threading.get_ident(), "connection": getattr(connection, "agno_test_serial", None)}
    if request.GET.get("expire"):
        connection.close_at = 0  # older than CONN_MAX_AGE: to be replaced before it is used again
    return JsonResponse(answer)


urlpatterns = [path("where", where), path("meet", meet), path("connection", connection_of)]


def _scope(target: str) -> dict:
    path, _, query = target.partition("?")
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": query.encode(), "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 50000), "server": ("testserver", 80),
    }


async def _get(app: ASGIHandler, path: str) -> tuple[int, dict]:
    communicator = ApplicationCommunicator(app, _scope(path))
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(10)
    body = await communicator.receive_output(10)
    await communicator.wait(10)
    return start["status"], json.loads(body["body"])


@pytest.mark.urls(__name__)
class TestRequestThreads:
    def test_the_sync_code_of_successive_requests_runs_on_one_kept_thread(self) -> None:
        app = ASGIHandler()

        async def two_requests():
            return [await _get(app, "/where") for _ in range(2)]

        (status_1, first), (status_2, second) = run_async(two_requests)
        assert status_1 == status_2 == 200
        assert first["thread"] == second["thread"]
        assert len(app.threads._idle) == 1

    def test_concurrent_requests_each_get_a_thread_of_their_own(self) -> None:
        app = ASGIHandler()

        async def together():
            return await asyncio.gather(_get(app, "/meet"), _get(app, "/meet"))

        # Were the two requests queued on one thread, the first would wait at the barrier forever.
        (status_1, first), (status_2, second) = run_async(together)
        assert status_1 == status_2 == 200
        assert first["thread"] != second["thread"]
        assert len(app.threads._idle) == 2

    def test_threads_beyond_the_idle_allowance_end_with_their_burst(self) -> None:
        threads = RequestThreads(keep_idle=1)
        first, second = threads.acquire(), threads.acquire()
        assert first is not second
        threads.release(first)
        threads.release(second)
        assert threads._idle == [first]
        assert second._shutdown and not first._shutdown
        assert threads.acquire() is first
        first.shutdown()


@pytest.mark.urls(__name__)
@pytest.mark.django_db(transaction=True)
class TestConnectionCare:
    """The request threads look after their connections themselves, in the thread that owns them,
    instead of through Django's request signals (each a hop to that thread and back)."""

    @pytest.fixture
    def app(self):
        app = ASGIHandler()
        yield app
        from django.db import connections

        for thread in app.threads._idle:  # their connections must not outlive the test database
            thread.submit(connections.close_all).result(10)
            thread.shutdown()

    def test_a_connection_past_its_age_is_replaced_before_the_next_request_uses_it(self, app, monkeypatch) -> None:
        from django.db import connection, connections
        from django.db.backends.signals import connection_created

        if connection.vendor == "sqlite":
            pytest.skip("SQLite's in-memory test database is never closed (PostgreSQL runs this)")
        monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 600)

        async def three_requests():
            return [await _get(app, path) for path in ("/connection", "/connection?expire=1", "/connection")]

        connection_created.connect(_number_the_connection)
        try:
            (_, first), (_, expired), (_, after) = run_async(three_requests)
        finally:
            connection_created.disconnect(_number_the_connection)
        assert first["thread"] == expired["thread"] == after["thread"]
        assert first["connection"] == expired["connection"]  # kept between requests
        assert after["connection"] != expired["connection"]  # replaced, though nothing closed it at the end

    def test_with_conn_max_age_0_a_used_connection_is_closed_after_the_request(self, app, monkeypatch) -> None:
        from django.db import connection, connections

        monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 0)

        async def one_request():
            status, body = await _get(app, "/connection")
            thread = app.threads._idle[-1]
            # Queued behind the request's work on its thread: what it sees is after the close.
            still_open = await asyncio.wrap_future(thread.submit(lambda: connection.connection is not None))
            return status, still_open

        status, still_open = run_async(one_request)
        assert status == 200 and still_open is False

    def test_request_finished_receivers_django_did_not_connect_still_run_in_the_request_thread(self, app) -> None:
        from django.core import signals
        seen: list[int] = []

        def receiver(**kwargs) -> None:
            seen.append(threading.get_ident())

        signals.request_finished.connect(receiver)
        try:
            (status, body) = run_async(lambda: _get(app, "/where"))
        finally:
            signals.request_finished.disconnect(receiver)
        assert status == 200 and seen == [body["thread"]]


@pytest.mark.django_db(transaction=True)
def test_over_asgi_browser_login_and_csrf_still_hold(live_api, django_user_model) -> None:
    """Sessions, CSRF and login run their hooks on the event loop now: the live ASGI server must
    still refuse a form or an API write without the token, and keep a login."""
    django_user_model.objects.create_user("carol", password="pw", is_staff=True)
    with httpx.Client(base_url=live_api, follow_redirects=False, timeout=10) as browser:
        login_page = browser.get("/admin/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page.text).group(1)
        assert browser.post("/admin/login/", data={"username": "carol", "password": "pw"}).status_code == 403
        logged_in = browser.post("/admin/login/?next=/admin/", data={"username": "carol", "password": "pw", "csrfmiddlewaretoken": token})
        assert logged_in.status_code == 302 and "sessionid" in browser.cookies
        assert browser.get("/admin/").status_code == 200
        refused = browser.post("/sessions", json={"session_id": "s1"})
        assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
        made = browser.post("/sessions", json={"session_id": "s1"}, headers={"X-CSRFToken": browser.cookies["csrftoken"]})
        assert made.status_code == 201 and made.json()["user_id"] == "carol"


@pytest.mark.django_db(transaction=True)
def test_over_asgi_a_message_set_before_a_redirect_is_shown_once_after_it(live_api, django_user_model) -> None:
    """The message storage is made only when a request uses it (API requests never do): one
    added before a redirect is still stored, shown on the next page, and then gone."""
    django_user_model.objects.create_superuser("dora", password="pw")
    with httpx.Client(base_url=live_api, follow_redirects=False, timeout=10) as browser:
        login_page = browser.get("/admin/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page.text).group(1)
        browser.post("/admin/login/?next=/admin/", data={"username": "dora", "password": "pw", "csrfmiddlewaretoken": token})
        erased = browser.post("/admin/userdata/erase/?user_id=nobody",
                              data={"user_id": "nobody", "confirm": "nobody", "csrfmiddlewaretoken": browser.cookies["csrftoken"]})
        assert erased.status_code == 302, erased.text
        assert "Erased 0 rows belonging to nobody." in browser.get(erased.headers["location"]).text
        assert "Erased 0 rows" not in browser.get(erased.headers["location"]).text


@pytest.mark.django_db(transaction=True)
def test_a_json_run_leaves_the_event_loop_only_where_it_must(live_api, monkeypatch) -> None:
    """A non-streamed run leaves the event loop once: one run thread for authentication and the
    whole run. Django's request signals (the request threads look after their own connections),
    rendering its JSON and a session that was only looked at (authentication looks for one) stay
    on the loop; the response is unchanged."""
    from asgiref import sync

    from core import asgi

    # Django's test client connects close_old_connections to the request signals again after each
    # of its requests; earlier tests in this process may have used it.
    asgi._take_connection_care_from_signals()
    hops: list[str] = []
    original = sync.SyncToAsync.__init__

    def record(self, func, *args, **kwargs):
        hops.append(getattr(func, "__qualname__", repr(func)))
        return original(self, func, *args, **kwargs)

    monkeypatch.setattr(sync.SyncToAsync, "__init__", record)
    response = httpx.post(f"{live_api}/agents/assistant/runs", data={"message": "hi", "stream": "false"}, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["status"] == "COMPLETED"
    assert "Cookie" in response.headers["vary"] and "set-cookie" not in response.headers
    # The run thread is not an asgiref hop (run_in_executor); nothing else leaves the loop.
    assert hops == [], hops

    # A sync API view renders its JSON in the thread it runs in: no hop of its own to render.
    hops.clear()
    listed = httpx.get(f"{live_api}/sessions", params={"limit": 5, "page": 1}, timeout=30)
    assert listed.status_code == 200 and listed.headers["content-type"] == "application/json"
    assert listed.json()["meta"]["page"] == 1
    assert hops and not any("render" in hop or "process_response" in hop for hop in hops), hops
    assert not any("sync_send" in hop or "close" in hop for hop in hops), hops  # no request signal hops

    # Errors are rendered the same way, in AgentOS's shape. (A session a view changes is still
    # saved in a thread: test_over_asgi_browser_login_and_csrf_still_hold logs in.)
    refused = httpx.post(f"{live_api}/agents/assistant/runs", data={"stream": "false"}, timeout=30)
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["body", "message"]


# sha256 of inspect.getsource(django.core.handlers.asgi.ASGIHandler.handle), Django 5.2.19.
DJANGO_HANDLE_SHA256 = "98faeb5bef800331e6a8002fbc96b30e4122a23438ae45a047190a531ea11323"


def test_the_handle_it_copies_is_still_djangos() -> None:
    """core.asgi.ASGIHandler.handle is Django 5.2's with the response's close changed: when
    Django's changes (an upgrade), this fails, and the copy must be made again from the new one."""
    import hashlib
    import inspect

    from django.core.handlers.asgi import ASGIHandler as DjangoASGIHandler

    source = inspect.getsource(DjangoASGIHandler.handle)
    assert hashlib.sha256(source.encode()).hexdigest() == DJANGO_HANDLE_SHA256, "Django's ASGIHandler.handle changed: copy it again into core.asgi"


def test_every_middleware_stays_on_the_event_loop(monkeypatch) -> None:
    """Django adapts a sync-only middleware under ASGI: it runs in the request's thread, and the
    rest of the chain, the view included, is pushed back to the loop by ``async_to_sync`` while
    that thread waits. Each request then costs a thread hop both ways (0.6M instructions per run
    for one CORS middleware that said nothing of its modes, and a slower first byte under load).
    Built as the server builds it, the chain adapts nothing."""
    from django.core.handlers.base import BaseHandler

    adapted: list[str] = []
    original = BaseHandler.adapt_method_mode

    def spy(self, is_async, method, method_is_async=None, debug=False, name=None):
        result = original(self, is_async, method, method_is_async, debug, name)
        if result is not method:
            adapted.append(name or repr(method))
        return result

    monkeypatch.setattr(BaseHandler, "adapt_method_mode", spy)
    handler = ASGIHandler()
    assert handler._middleware_chain is not None
    assert adapted == [], f"adapted to the other mode: {adapted}"
