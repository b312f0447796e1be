"""Seed an Agno Site database with finished one-run sessions, for the GET /sessions benchmark.

    DATABASE_URL=sqlite:////tmp/x/db.sqlite3 .venv/bin/python -m bench.seed_sessions --count 10000

Writes through the sessions services (the same rows a real run leaves), in batches of one
transaction each, so 10,000 sessions take seconds instead of 10,000 model round trips. The
sessions match what bench/agentos_reference/app.py --seed-sessions puts into AgentOS.
"""
from __future__ import annotations

import argparse
import os
import time
from datetime import timedelta

ANSWER = "Hello from the fake LLM. This is a short answer."
MODEL = {"id": "gpt-4o-mini", "name": "OpenAIChat", "provider": "OpenAI"}


def run_data(*, run_id: str, session_id: str, user_id: str, agent_id: str, question: str, created_at: int) -> dict:
    metrics = {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30, "duration": 0.01}
    return {
        "run_id": run_id,
        "agent_id": agent_id,
        "agent_name": "Bench Agent",
        "session_id": session_id,
        "user_id": user_id,
        "content": ANSWER,
        "content_type": "str",
        "model": MODEL["id"],
        "model_provider": MODEL["provider"],
        "status": "COMPLETED",
        "created_at": created_at,
        "input": {"input_content": question},
        "metrics": metrics,
        "messages": [
            {"role": "user", "content": question, "from_history": False, "stop_after_tool_call": False,
             "created_at": created_at},
            {"role": "assistant", "content": ANSWER, "from_history": False, "stop_after_tool_call": False,
             "created_at": created_at, "metrics": metrics},
        ],
    }


def seed(*, count: int, user_id: str, agent_id: str, batch: int = 500) -> None:
    from django.db import transaction
    from django.utils import timezone

    from sessions.models import RunStatus
    from sessions.services import new_id, run_create, session_add_usage, session_create

    now = timezone.now()
    for offset in range(0, count, batch):
        with transaction.atomic():
            for index in range(offset, min(offset + batch, count)):
                created = now - timedelta(seconds=count - index)
                session = session_create(
                    user_id=user_id,
                    component_id=agent_id,
                    component_data={"name": "Bench Agent", "model": MODEL},
                )
                question = f"Seeded question number {index}"
                run_id = new_id()
                run_create(
                    session=session,
                    run_id=run_id,
                    component_id=agent_id,
                    input={"input_content": question},
                    status=RunStatus.COMPLETED,
                    model=MODEL["id"],
                    run_data=run_data(run_id=run_id, session_id=session.pk, user_id=user_id, agent_id=agent_id,
                                      question=question, created_at=int(created.timestamp())),
                    created_at=created,
                )
                session_add_usage(session_id=session.pk, input_tokens=20, output_tokens=10, now=created)
                # Backdate so the list order is the seeding order, as in the AgentOS seeding.
                session.created_at = created
                session.save(update_fields=["created_at"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL"))
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--user-id", default="bench-user")
    parser.add_argument("--agent-id", default="bench-agent")
    args = parser.parse_args()
    if not args.database_url:
        parser.error("--database-url or DATABASE_URL is required (the server's database)")
    # The server's settings, not the test ones bench._django defaults to.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.local")
    from ._django import setup

    setup(args.database_url)
    started = time.perf_counter()
    seed(count=args.count, user_id=args.user_id, agent_id=args.agent_id)
    print(f"seeded {args.count} sessions in {time.perf_counter() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main()
