"""Shared fixtures. Real services only: a missing PostgreSQL or Redis fails under CI=true."""
from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require_service(name: str, reason: str) -> None:
    """Fail under CI, skip (loudly) elsewhere."""
    message = f"{name} unavailable: {reason}"
    if IN_CI:
        pytest.fail(message + " (CI=true: a missing service is a failure)")
    pytest.skip(message)


def run_async(make_coroutine):
    """Run a coroutine on a loop of its own, in a thread of its own: the test's thread may already
    run an event loop (Playwright's sync API leaves one), where asyncio.run() refuses."""
    import asyncio
    import threading

    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(make_coroutine())
        except BaseException as exc:  # handed to the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(30)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.fixture(autouse=True, scope="session")
def _the_test_process_serves_jobs() -> None:
    """The test process stands in for the server (whose lifespan the test client does not run):
    its embedded worker may claim jobs, as a served process's does (jobs.worker.serve_jobs)."""
    from django.conf import settings

    if settings.configured:  # tests/engine can run without Django (-p no:django)
        from jobs.worker import serve_jobs

        serve_jobs()


@pytest.fixture
def on_postgres(settings) -> bool:
    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    # The browser tests go last (after pytest-django's own ordering, which puts tests without a
    # database at the end): Playwright's sync API leaves an event loop running on the test
    # thread for the rest of the session, and code that refuses to block a running loop (the
    # run loop's sync facade, async_to_sync) would then refuse in every later test.
    items[:] = [item for item in items if "browser" not in item.keywords] + [item for item in items if "browser" in item.keywords]
    from django.conf import settings

    if not settings.configured:  # tests/engine can run without Django (-p no:django)
        return
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        skip = pytest.mark.skip(reason="PostgreSQL only (this run is on SQLite)")
        for item in items:
            if "postgres_only" in item.keywords:
                item.add_marker(skip)


class LiveServer:
    """The real ASGI app (HTTP, SSE, WebSockets) served by uvicorn in a thread."""

    def __init__(self) -> None:
        import socket
        import threading

        import uvicorn

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        # proxy_headers off, as manage.py serve runs it: uvicorn would otherwise take the client
        # address from X-Forwarded-For for loopback peers; core.addresses decides that.
        config = uvicorn.Config("agno_site.asgi:application", host="127.0.0.1", port=self.port, log_level="warning", lifespan="off", proxy_headers=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="live-asgi", daemon=True)
        self.thread.start()
        import time

        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the live ASGI server did not start")
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def _live_server_process(django_db_setup, django_db_blocker):
    server = LiveServer()
    yield server
    server.stop()


@pytest.fixture
def live_api(_live_server_process, transactional_db) -> str:
    """Base URL of a live server sharing the test database (transactional, so both see rows)."""
    return _live_server_process.url


@pytest.fixture(scope="session")
def _fake_openai_server():
    from tests.fakes.openai_server import FakeOpenAIServer

    server = FakeOpenAIServer().start()
    # The code agents' OpenAI clients are built on first use, from these.
    os.environ["OPENAI_API_KEY"] = "test-key"
    os.environ["OPENAI_BASE_URL"] = server.base_url
    yield server
    server.stop()


@pytest.fixture
def fake_openai(_fake_openai_server):
    """The local OpenAI-compatible server the code agent ``openai-agent`` talks to; script it with
    push(), or set ``default`` (restored after the test)."""
    default = _fake_openai_server.default
    _fake_openai_server.reset()
    yield _fake_openai_server
    _fake_openai_server.reset()
    _fake_openai_server.default = default


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test databases, guarded by the owner-clause check, and before they are
    dropped, this process's embedded worker and trace writer stopped: background runs started by
    tests wake the worker, traced runs the writer, and their threads hold connections (an autouse
    fixture would be torn down after the databases are, its threads still in them)."""
    # From here on (the test databases exist, their migrations done) every statement on an owned
    # table must carry its owner clause or run on an explicit unscoped path (tests/tenancy_guard.py).
    from tests import tenancy_guard

    tenancy_guard.install()
    _flush_keeps_static_rows(django_db_blocker)
    yield
    tenancy_guard.uninstall()
    import jobs.loop_worker as loops
    import jobs.worker as module

    for running in (module._worker, loops._worker):
        if running is not None:
            running.stop()
    from traces import provider

    provider.reset()  # the trace writer's thread keeps its connection between batches


def _flush_keeps_static_rows(django_db_blocker) -> None:
    """Empty the database after a transactional test with one DELETE per table, and keep the rows
    migrations wrote for every test: content types and permissions.

    Django's own flush costs two ways here. On PostgreSQL it is a TRUNCATE of some fifty tables,
    which makes new files for each table and index: 1.2 to 4.2 s per flush on this loaded 2-core
    machine, against 0.13 to 0.38 s for DELETEs of the same few rows. Then, on both databases, it
    sends post_migrate, whose receivers (contenttypes' and auth's, the only two) rebuild the same
    250 rows in about 70 queries: 0.45 to 1.2 s more. Over a thousand transactional tests these
    were the largest single cost of the suite. So the rows post_migrate wrote are read once, as
    migrations left them, and written back with their own ids after each flush (two INSERTs):
    each transactional test still starts from the same rows, and cached content type ids stay
    right. PostgreSQL's foreign keys are all deferred (Django makes them so), so the DELETEs go
    in any order in one transaction, as SQLite's flush already does them.
    """
    import weakref

    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType
    import time

    from django.db import IntegrityError, connections, transaction
    from django.db.models.signals import post_migrate
    from django.test import TransactionTestCase

    from core.tenancy import unscoped

    live = [receiver() if isinstance(receiver, weakref.ReferenceType) else receiver for _, receiver, *_ in post_migrate.receivers]
    receivers = {getattr(receiver, "__module__", "") for receiver in live if receiver is not None}
    if receivers - {"django.contrib.auth.management", "django.contrib.contenttypes.management"}:
        return  # another app writes rows after a migration: keep Django's own flush
    with django_db_blocker.unblock():
        rows = {alias: (list(ContentType.objects.using(alias).values()), list(Permission.objects.using(alias).values())) for alias in connections}
    django_teardown = TransactionTestCase._fixture_teardown

    def _fixture_teardown(self) -> None:
        if self.available_apps is not None or self.serialized_rollback:
            return django_teardown(self)
        for alias in self._databases_names(include_mirrors=False):
            connection = connections[alias]
            tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
            deletes = [f"DELETE FROM {connection.ops.quote_name(table)}" for table in tables]
            for attempt in range(3):
                try:
                    _delete_all(connection, alias, deletes)
                    break
                except IntegrityError:
                    # A live server's thread wrote a row (a run's end) between two DELETEs, whose
                    # foreign key the commit then refuses. Its writer is finishing: try again.
                    time.sleep(0.2 * (attempt + 1))
            else:
                return django_teardown(self)  # still racing: Django's flush (one TRUNCATE of all)
            content_types, permissions = rows[alias]
            ContentType.objects.using(alias).bulk_create([ContentType(**row) for row in content_types])
            Permission.objects.using(alias).bulk_create([Permission(**row) for row in permissions])

    def _delete_all(connection, alias: str, deletes: list[str]) -> None:
        with unscoped("the test runner empties every table between transactional tests"), transaction.atomic(using=alias):
            with connection.cursor() as cursor:
                if connection.vendor == "postgresql":  # one round trip
                    cursor.execute(";\n".join(deletes))
                else:  # sqlite3 takes one statement at a time (in process: no round trips)
                    for statement in deletes:
                        cursor.execute(statement)

    TransactionTestCase._fixture_teardown = _fixture_teardown


@pytest.fixture(autouse=True)
def _no_run_left_in_the_watch():
    """No test leaves a run in the job watch (jobs.services.watch): its thread would go on
    renewing that run's heartbeat and writing its events through later tests, against a database
    flushed or closed to it, logging a traceback at each failure (seen: a later test's ast.parse
    failed with "AST constructor recursion depth mismatch" while the watch's thread formatted
    one, which parses source in Python 3.11). A run still ending as the test does (its task, its
    worker) is given a moment. Torn down after the embedded worker is stopped (defined first)."""
    yield
    import sys
    import time

    module = sys.modules.get("jobs.services.watch")
    if module is None:
        return
    watch = module.watch
    deadline = time.monotonic() + 3.0
    while watch._jobs and time.monotonic() < deadline:
        time.sleep(0.02)
    with watch._condition:
        left = sorted(watch._jobs)
        watch._jobs.clear()  # the next test starts with an empty watch, and is not blamed for these
    if left:
        pytest.fail(f"the test left {len(left)} run(s) in the job watch (never ended or cancelled): {left}")


@pytest.fixture(autouse=True)
def _no_worker_left_running():
    """The embedded worker that a test's background runs woke (through the test client or a live
    server in this process) is stopped after the test, before its database is flushed: one left
    running polls and reaps the job table into the next test, where a transactional test's flush
    (TRUNCATE) can deadlock with it on PostgreSQL (seen in CI: "couldn't be flushed"). The next
    background run starts it again."""
    yield
    import jobs.loop_worker as loops
    import jobs.worker as module

    for running in (module._worker, loops._worker):
        if running is not None:
            running.stop()


@pytest.fixture(autouse=True)
def _no_server_errors(request):
    """No request made by any test may end in a 500 (issue: every client error is a 4xx).

    Django signals every unhandled exception of a request, in the test client and in the live
    server alike; a test that means to provoke one can say so with ``@pytest.mark.allow_500``.
    """
    from django.core.signals import got_request_exception

    errors: list[str] = []

    def record(sender, request=None, **kwargs):
        errors.append(getattr(request, "path", "?"))

    got_request_exception.connect(record, weak=False)
    yield
    got_request_exception.disconnect(record)
    if errors and "allow_500" not in request.keywords:
        pytest.fail(f"requests ended in a server error: {errors}")


@pytest.fixture(autouse=True)
def _owner_clauses_held():
    """No statement of the test, in any thread, ran on an owned table without its owner clause
    (the guard also raises where it runs, but a worker thread may swallow that)."""
    import sys

    guard = sys.modules.get("tests.tenancy_guard")  # installed with the test databases, if any
    if guard is None:
        yield
        return
    guard.take_violations()
    yield
    missing = guard.take_violations()
    if missing:
        pytest.fail("SQL without an owner clause:\n" + "\n".join(missing[:5]))


@pytest.fixture
def alice(db):
    """alice, signed in to the browser session (a test module may define its own alice)."""
    from tests.factories import signed_in

    return signed_in("alice")


@pytest.fixture
def bob(db):
    """bob, signed in to the browser session (a test module may define its own bob)."""
    from tests.factories import signed_in

    return signed_in("bob")


@pytest.fixture
def offline_demo(monkeypatch) -> None:
    """What `make run` serves without a key: agents.demo on the offline model. The demo picks its
    model as it is imported (OpenAI when OPENAI_API_KEY is set, as the session's fake OpenAI server
    sets it), so a demo imported earlier in the session with the key is imported again without it,
    and the registry forgets the components it built from the old one."""
    import importlib
    import sys

    from agents.registry.code import code_components_forget

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    module = sys.modules.get("agents.demo")
    if module is not None and module.MODEL != "offline:demo":
        importlib.reload(module)
        code_components_forget()
