"""Each entry of docs/decisions/framework-internals.md beside the plain Django/DRF path it replaces.

    .venv/bin/python -m bench.internals [--db sqlite|postgres] [--rounds 5] [--requests 300]

Every pair runs interleaved (A, B, A, B, ...) for ``--rounds`` rounds and reports the median and
the spread (min-max) of the rounds, so a machine busy with other work moves both sides alike.

- ``http``: ``GET /health`` and ``GET /sessions?limit=20`` through the ASGI application, in
  process, 8 requests at once, with the project as it is (``project``) and with one entry
  replaced by Django's or DRF's own: Django's ``ASGIHandler`` (``django-handler``), Django's,
  django-csp's and WhiteNoise's middleware classes (``django-middleware``), DRF's ``dispatch``
  leaving the JSON response to Django to render (``drf-render``), and all three (``plain``).
  Requests/s (wall), CPU ms per request of the whole process, and the requests not answered 200
  (on PostgreSQL a thread per request holds a pooled connection each: the pool can run out).
- ``statements``: the run path's statements (core.statements) against the ORM calls that write
  and read the same rows: INSERT of a run row (``Run(...).save(force_insert=True)``), the run's
  result UPDATE (``filter().update()``), the history SELECT (the queryset itself). CPU us per call.
- ``pipelined`` (PostgreSQL): three statements in ``pipelined()`` against one after another.
- ``sqlite-lock`` (SQLite): 8 threads each running non-streamed runs (the instant offline
  model, the service every transport uses) on one database file, through the project's backend
  (writers take turns on a lock) and Django's (SQLite's busy handler). Run latency p50/p99, runs/s.
"""
from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from .inprocess_http import request

CONCURRENCY = 8
PLAIN_MIDDLEWARE = {
    "core.middleware.SecurityMiddleware": "django.middleware.security.SecurityMiddleware",
    "core.middleware.ContentSecurityPolicyMiddleware": "csp.middleware.CSPMiddleware",
    "core.middleware.StaticFilesMiddleware": "whitenoise.middleware.WhiteNoiseMiddleware",
    "core.middleware.SessionMiddleware": "django.contrib.sessions.middleware.SessionMiddleware",
    "core.middleware.CommonMiddleware": "django.middleware.common.CommonMiddleware",
    "core.middleware.CsrfViewMiddleware": "django.middleware.csrf.CsrfViewMiddleware",
    "core.middleware.AuthenticationMiddleware": "django.contrib.auth.middleware.AuthenticationMiddleware",
    "core.middleware.MessageMiddleware": "django.contrib.messages.middleware.MessageMiddleware",
    "core.middleware.XFrameOptionsMiddleware": "django.middleware.clickjacking.XFrameOptionsMiddleware",
}


def summary(values: list[float], digits: int = 3) -> dict[str, float]:
    return {"median": round(statistics.median(values), digits), "min": round(min(values), digits), "max": round(max(values), digits)}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


# --- http ----------------------------------------------------------------------------------------

def http_arms(names: list[str]) -> dict[str, Callable[[], Any]]:
    from django.core.handlers.asgi import ASGIHandler as DjangoASGIHandler
    from django.test.utils import override_settings
    from rest_framework.views import APIView

    from core.api.views import AgentOSView
    from core.asgi import ASGIHandler

    def build(handler_class: type, plain_middleware: bool) -> Any:
        from django.conf import settings

        middleware = [PLAIN_MIDDLEWARE.get(name, name) for name in settings.MIDDLEWARE] if plain_middleware else settings.MIDDLEWARE
        with override_settings(MIDDLEWARE=middleware):
            return handler_class()

    arms = {
        "project": lambda: (build(ASGIHandler, False), False),
        "django-handler": lambda: (build(DjangoASGIHandler, False), False),
        "django-middleware": lambda: (build(ASGIHandler, True), False),
        "drf-render": lambda: (build(ASGIHandler, False), True),
        "plain": lambda: (build(DjangoASGIHandler, True), True),
    }
    arms = {name: arms[name]() for name in ["project", *names] if name in arms}
    ours = AgentOSView.dispatch

    def arm(application: Any, plain_dispatch: bool) -> Callable[[], Any]:
        def use() -> Any:
            # DRF's dispatch leaves the Response to Django, which renders it after the view.
            AgentOSView.dispatch = APIView.dispatch if plain_dispatch else ours
            return application

        return use

    return {name: arm(application, plain) for name, (application, plain) in arms.items()}


async def http_round(application: Any, path: str, query: bytes, count: int) -> tuple[float, float, int]:
    """Requests/s, CPU ms per request, and how many requests did not answer 200."""
    semaphore = asyncio.Semaphore(CONCURRENCY)
    failed = 0

    async def one() -> None:
        nonlocal failed
        async with semaphore:
            status, _ = await request(application, "GET", path, query=query)
        failed += status != 200

    await asyncio.gather(*(one() for _ in range(CONCURRENCY * 4)))  # warm: threads, connections
    failed = 0
    started_cpu, started_wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(count)))
    cpu, wall = time.process_time() - started_cpu, time.perf_counter() - started_wall
    return count / wall, 1000 * cpu / count, failed


def measure_http(rounds: int, count: int, names: list[str]) -> dict:
    import uvloop

    seed_sessions(60)
    arms = http_arms(names)
    results: dict = {}
    for path, query in (("/health", b""), ("/sessions", b"limit=20&page=1")):
        seen: dict[str, dict[str, list[float]]] = {name: {"rps": [], "cpu": [], "failed": []} for name in arms}
        for _ in range(rounds):
            for name, use in arms.items():
                rps, cpu, failed = uvloop.run(http_round(use(), path, query, count))
                seen[name]["rps"].append(rps)
                seen[name]["cpu"].append(cpu)
                seen[name]["failed"].append(failed)
        results[path] = {
            name: {"requests_per_second": summary(v["rps"], 1), "cpu_ms_per_request": summary(v["cpu"]), "not_200": int(sum(v["failed"]))}
            for name, v in seen.items()
        }
    arms["project"]()  # our dispatch back
    return results


def seed_sessions(count: int) -> None:
    from agents.pipeline.execution import run_execute_here
    from agents.pipeline.runs import RunRequest, run_prepare
    from core.auth import Principal

    principal = Principal(user_id="bench-user", isolated=True, via="session")
    for index in range(count):
        prepared = run_prepare(principal=principal, agent_id="bench", request=RunRequest(message=f"hello {index}", stream=False))
        run_execute_here(prepared)


# --- statements ----------------------------------------------------------------------------------

def measure_statements(rounds: int, calls: int) -> dict:
    from django.db import transaction
    from django.utils import timezone

    from sessions.models import Run, RunStatus, Session
    from sessions.selectors import NO_LIMIT, _compiled_history, _history  # noqa: the read under test
    from sessions.services.runs import _RUN_INSERT, _RUN_RESULT  # noqa: the statements under test

    session = Session.objects.unscoped("bench").filter(user_id="bench-user").first()
    template = Run.objects.unscoped("bench").filter(session_id=session.pk).first()
    columns = [field.attname for field in Run._meta.concrete_fields]

    def new_run() -> Run:
        run = copy.copy(template)
        run.pk = f"bench-{uuid.uuid4().hex}"
        run.run_index = 10_000 + new_run.counter
        new_run.counter += 1
        return run

    new_run.counter = 0

    def insert_compiled() -> None:
        run = new_run()
        _RUN_INSERT.row([getattr(run, name) for name in columns])

    def insert_orm() -> None:
        new_run().save(force_insert=True)

    result_fields = ["status", "input", "run_data", "content", "input_tokens", "output_tokens", "total_tokens", "duration", "error", "updated_at", "finished_at"]

    def values() -> list[Any]:
        now = timezone.now()
        return [RunStatus.COMPLETED, template.input, template.run_data, template.content, 1, 2, 3, 0.1, "", now, now]

    def update_compiled() -> None:
        _RUN_RESULT.row(template.pk, values(), [template.user_id])

    def update_orm() -> None:
        Run.objects.for_user(template.user_id).filter(pk=template.pk).update(**dict(zip(result_fields, values())))

    before = str(NO_LIMIT)

    def select_compiled() -> None:
        _compiled_history(3).all("bench-user", session.pk, before)

    def select_orm() -> None:
        list(_history("bench-user", session.pk, before, 3))

    pairs = {
        "insert a run": (insert_compiled, insert_orm),
        "the run's result update": (update_compiled, update_orm),
        "the history select": (select_compiled, select_orm),
    }
    results = {}
    for label, (compiled, orm) in pairs.items():
        seen: dict[str, list[float]] = {"compiled": [], "orm": []}
        for _ in range(rounds):
            for side, fn in (("compiled", compiled), ("orm", orm)):
                with transaction.atomic():
                    for _ in range(20):
                        fn()  # warm
                    started = time.process_time()
                    for _ in range(calls):
                        fn()
                    seen[side].append(1e6 * (time.process_time() - started) / calls)
        results[label] = {side: {"cpu_us_per_call": summary(v, 1)} for side, v in seen.items()}
    return results


def measure_pipelined(rounds: int, calls: int) -> dict:
    from django.db import connection, transaction

    from core.statements import pipelined

    def three() -> None:
        with connection.cursor() as cursor:
            for _ in range(3):
                cursor.execute("SELECT 1")

    def three_pipelined() -> None:
        with pipelined():
            three()

    seen: dict[str, list[float]] = {"pipelined": [], "one after another": []}
    for _ in range(rounds):
        for side, fn in (("pipelined", three_pipelined), ("one after another", three)):
            with transaction.atomic():
                started = time.perf_counter()
                for _ in range(calls):
                    fn()
                seen[side].append(1e6 * (time.perf_counter() - started) / calls)
    return {side: {"wall_us_per_three_statements": summary(v, 1)} for side, v in seen.items()}


# --- sqlite-lock ---------------------------------------------------------------------------------

def measure_sqlite_lock(rounds: int, runs: int) -> dict:
    """8 threads, each running ``runs`` runs (the instant offline model) in a session of its own,
    on the same database file, with each backend in turn: per-run latency and runs/s."""
    from django.db import connections

    from agents.pipeline.execution import run_execute_here
    from agents.pipeline.runs import RunRequest, run_prepare
    from core.auth import Principal

    engines = {"writers-take-turns": "core.db.sqlite3", "busy-handler": "django.db.backends.sqlite3"}

    def writers(engine: str) -> tuple[list[float], float]:
        connections.settings["default"]["ENGINE"] = engine  # the threads below open connections anew
        latencies: list[float] = []
        lock = threading.Lock()

        def work(index: int) -> None:
            principal = Principal(user_id=f"bench-writer-{index}", isolated=True, via="session")
            session_id, mine = None, []
            for number in range(runs):
                started = time.perf_counter()
                prepared = run_prepare(principal=principal, agent_id="bench", request=RunRequest(message=f"q {number}", session_id=session_id, stream=False))
                output = run_execute_here(prepared)
                mine.append(time.perf_counter() - started)
                session_id = output["session_id"]
            assert type(connections["default"]).__module__ == f"{engine}.base", type(connections["default"])
            connections["default"].close()
            with lock:
                latencies.extend(mine)

        threads = [threading.Thread(target=work, args=(index,)) for index in range(CONCURRENCY)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return latencies, time.perf_counter() - started

    connections["default"].close()
    seen: dict[str, dict[str, list[float]]] = {name: {"p50": [], "p99": [], "rps": []} for name in engines}
    try:
        for _ in range(rounds):
            for name, engine in engines.items():
                latencies, wall = writers(engine)
                seen[name]["p50"].append(1000 * percentile(latencies, 0.5))
                seen[name]["p99"].append(1000 * percentile(latencies, 0.99))
                seen[name]["rps"].append(len(latencies) / wall)
    finally:
        connections.settings["default"]["ENGINE"] = engines["writers-take-turns"]
    return {
        name: {"latency_ms_p50": summary(v["p50"], 2), "latency_ms_p99": summary(v["p99"], 2), "runs_per_second": summary(v["rps"], 0)}
        for name, v in seen.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--only", default="http,statements,pipelined,sqlite-lock")
    parser.add_argument("--suffix", default="", help="added to the results file's name")
    parser.add_argument("--arms", default="django-handler,django-middleware,drf-render,plain", help="the http pairs beside project")
    args = parser.parse_args()
    only = set(args.only.split(","))

    from .compare import site_environment
    from ._django import bench_database

    os.environ.update(site_environment("http://127.0.0.1:9"))  # no model is called
    os.environ["AGENT_MODULES"] = "bench.inprocess_agents"
    report: dict = {"db": args.db, "rounds": args.rounds, "concurrency": CONCURRENCY}
    with ExitStack() as stack:
        url = stack.enter_context(bench_database(args.db, under="/dev/shm" if Path("/dev/shm").is_dir() else None))
        os.environ["DATABASE_URL"] = url
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0, interactive=False)
        if "http" in only:
            report["http"] = measure_http(args.rounds, args.requests, args.arms.split(","))
        else:
            seed_sessions(5)
        if "statements" in only:
            report["statements"] = measure_statements(args.rounds, 300)
        if "pipelined" in only and args.db == "postgres":
            report["pipelined"] = measure_pipelined(args.rounds, 300)
        if "sqlite-lock" in only and args.db == "sqlite":
            report["sqlite-lock"] = measure_sqlite_lock(args.rounds, 40)
        from django.db import connections

        connections.close_all()
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"internals_{args.db}{args.suffix}.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
