"""A metrics refresh over 100,000 runs: the first (every day), a second with nothing new, and an
incremental one after a day's new runs.

    .venv/bin/python -m bench.metrics_refresh [--runs 100000] [--users 200] [--days 90] [--backend postgres]

Seeds a throw-away database (PostgreSQL ``<base>_metrics_bench``, or a SQLite file) with sessions
and runs as the run pipeline leaves them (a run_data with messages and Agno's metrics, several
models, agents and a team with member runs, errors, durations), written in bulk so seeding takes
seconds. Then times ``metrics_refresh_run`` for an operator (every user's rows) and prints the
numbers as a Markdown table.
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import tempfile
import time
from contextlib import contextmanager
from datetime import timedelta
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

MODELS = [("gpt-4o-mini", "OpenAI"), ("gpt-4o", "OpenAI"), ("claude-sonnet-4", "Anthropic")]
AGENTS = ["assistant", "research", "support", "billing"]


@contextmanager
def database(backend: str) -> Iterator[str]:
    if backend == "sqlite":
        folder = tempfile.mkdtemp(prefix="agno-metrics-bench-")
        try:
            yield f"sqlite:///{folder}/bench.sqlite3"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    import psycopg

    base = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/agno_h_metrics")
    parts = urlsplit(base)
    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    name = f"{parts.path.strip('/') or 'agno_site'}_metrics_bench"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def run_data(rng: random.Random, model: tuple[str, str], tokens: tuple[int, int], duration: float, created: int) -> dict:
    metrics = {
        "input_tokens": tokens[0], "output_tokens": tokens[1], "total_tokens": sum(tokens), "duration": duration,
        "time_to_first_token": round(duration / 3, 3),
        "details": {"model": [{"id": model[0], "provider": model[1], "input_tokens": tokens[0], "output_tokens": tokens[1], "total_tokens": sum(tokens)}]},
    }
    question = f"Question {rng.random():.6f} about something the user cares about"
    return {
        "content": "An answer of a few sentences. " * 8, "status": "COMPLETED", "created_at": created, "metrics": metrics,
        "messages": [
            {"role": "user", "content": question, "created_at": created},
            {"role": "assistant", "content": "An answer of a few sentences. " * 8, "created_at": created, "metrics": metrics},
        ],
    }


def seed(*, runs: int, users: int, days: int, end, seed_value: int = 11, batch: int = 5000, prefix: str = "") -> int:
    """``runs`` runs over ``days`` days before ``end`` (the bench's own bulk writer: the rows the
    sessions services write, without a model round trip each)."""
    from django.db import transaction

    from sessions.models import Run, Session

    rng = random.Random(seed_value)
    user_ids = [f"user-{n:04d}" for n in range(users)] + [None]  # None: the shared bucket
    sessions: dict[tuple[str | None, str], Session] = {}
    pending_runs: list[Run] = []
    made = 0

    def flush() -> None:
        with transaction.atomic():
            Session.objects.bulk_create([s for s in sessions.values() if getattr(s, "_new", False)], batch_size=1000)
            for s in sessions.values():
                s._new = False
            Run.objects.bulk_create(pending_runs, batch_size=1000)
        pending_runs.clear()

    while made < runs:
        user = rng.choice(user_ids)
        agent = rng.choice(AGENTS + ["research-team"])
        key = (user, agent)
        created_at = end - timedelta(seconds=rng.randint(0, days * 86400 - 1))
        session = sessions.get(key)
        if session is None:
            kind = "team" if agent == "research-team" else "agent"
            session = Session(session_id=f"{prefix}s-{len(sessions)}", user_id=user, component_id=agent, session_type=kind, created_at=created_at, updated_at=created_at)
            session._new = True
            session.next_run_index = 0
            sessions[key] = session
        model = rng.choice(MODELS)
        tokens = (rng.randint(50, 3000), rng.randint(20, 800))
        duration = round(rng.lognormvariate(0.5, 0.7), 3)
        status = "ERROR" if rng.random() < 0.03 else "COMPLETED"

        def add(run_type: str, component: str, parent: str | None) -> str:
            nonlocal made
            run_id = f"{prefix}r-{made}"
            pending_runs.append(Run(
                run_id=run_id, session_id=session.session_id, user_id=user, run_type=run_type, component_id=component,
                run_index=session.next_run_index, parent_run_id=parent, status=status, input={"input_content": "q"},
                content="An answer.", run_data=run_data(rng, model, tokens, duration, int(created_at.timestamp())), model=model[0],
                input_tokens=tokens[0], output_tokens=tokens[1], total_tokens=sum(tokens), duration=duration,
                created_at=created_at, updated_at=created_at, started_at=created_at, finished_at=created_at + timedelta(seconds=duration),
            ))
            session.next_run_index += 1
            made += 1
            return run_id

        leader = add("team" if agent == "research-team" else "agent", agent, None)
        if agent == "research-team" and made < runs:
            add("agent", "researcher", leader)  # a member run
        if len(pending_runs) >= batch:
            flush()
    flush()
    with transaction.atomic():
        for s in sessions.values():
            Session.all_users.filter(pk=s.pk).update(next_run_index=s.next_run_index)
    return made


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--new-runs", type=int, default=1_000)
    parser.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    args = parser.parse_args()
    with database(args.backend) as url:
        from ._django import setup

        setup(url)
        from django.db import connection
        from django.utils import timezone

        from core.tenancy import ALL_USERS
        from metrics.models import MetricsAggregate
        from metrics.services import RefreshScope, metrics_refresh_run

        everyone = RefreshScope.of(ALL_USERS)
        now = timezone.now()
        started = time.perf_counter()
        made = seed(runs=args.runs, users=args.users, days=args.days, end=now - timedelta(minutes=30))
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        print(f"seeded {made} runs in {time.perf_counter() - started:.1f} s ({connection.vendor})", flush=True)

        results = []

        def timed(label: str, **kwargs) -> None:
            began, cpu = time.perf_counter(), time.process_time()
            written = metrics_refresh_run(scope=everyone, **kwargs)
            seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
            results.append((label, seconds, cpu, len(written)))
            print(f"{label}: {seconds:.2f} s ({cpu:.2f} s CPU here), {len(written)} rows written", flush=True)

        timed("first refresh (every day)")
        timed("second refresh, nothing new")
        # New runs of the last hours, written after the watermark (as a live server writes them).
        from sessions.models import Run

        seed(runs=args.new_runs, users=args.users, days=1, end=timezone.now(), seed_value=12, prefix="new-")
        Run.all_users.filter(run_id__startswith="new-").update(updated_at=timezone.now())
        timed(f"incremental, after {args.new_runs} new runs of the last 24 h")
        timed("full recompute, nothing changed", full=True)
        rows = MetricsAggregate.all_users.count()
        print()
        print(f"| {made:,} runs, {args.users} users + shared bucket, {args.days} days, {connection.vendor} | wall s | CPU s (Python) | rows written |")
        print("|---|---:|---:|---:|")
        for label, seconds, cpu, written in results:
            print(f"| {label} | {seconds:.2f} | {cpu:.2f} | {written:,} |")
        print(f"\n{rows:,} metrics rows in all; peak RSS {peak_rss_mb():.0f} MB; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
