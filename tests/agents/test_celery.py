"""Background runs on real Celery worker processes, Redis and PostgreSQL.

The web tier is the live ASGI server of the test process (dispatching through Redis, following
runs through channels-redis); workers and beat are real ``celery -A agno_site`` processes on
the same test database. Killing a worker, capping concurrency, cancelling from another process,
resuming through Redis, and Redis going away mid-run.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from jobs.models import Job, JobStatus
from sessions.models import Run, RunEvent
from tests.agents.conftest import wait_for
from tests.api.sse import parse_sse
from tests.conftest import require_service
from tests.fakes._base import Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_only, pytest.mark.redis, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))
SLOW = Reply(text="one two three four five six seven eight nine ten", delay=0.25)


def _redis_up(url: str) -> bool:
    import redis

    try:
        redis.Redis.from_url(url, socket_timeout=2).ping()
        return True
    except Exception:
        return False


class Cluster:
    """Celery workers and beat as real processes, each in its own process group."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.processes: dict[str, subprocess.Popen] = {}

    def _start(self, name: str, args: list[str]) -> subprocess.Popen:
        log = self.logs / f"{name}.log"
        process = subprocess.Popen(
            [CELERY, "-A", "agno_site", *args, "--logfile", str(log), "-l", "info"],
            cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.processes[name] = process
        return process

    def worker(self, name: str, *, pool: str = "solo", concurrency: int = 1) -> subprocess.Popen:
        process = self._start(name, ["worker", "-P", pool, "-c", str(concurrency), "-n", f"{name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"])
        log = self.logs / f"{name}.log"
        wait_for(lambda: log.exists() and "ready." in log.read_text(), timeout=60, interval=0.1)
        return process

    def beat(self) -> subprocess.Popen:
        process = self._start("beat", ["beat", "-S", "django_celery_beat.schedulers:DatabaseScheduler", "--pidfile="])
        log = self.logs / "beat.log"
        wait_for(lambda: log.exists() and "beat: Starting" in log.read_text(), timeout=60, interval=0.1)
        return process

    def kill(self, name: str) -> None:
        os.killpg(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait(timeout=10)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(timeout=10)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    os.killpg(process.pid, signal.SIGKILL)


def _use_broker(app, url: str) -> None:
    app.conf.broker_url = url
    # The next send opens pools for this broker (the app caches them, kombu keeps one per URL).
    app._pool = None
    app.amqp._producer_pool = None


def _point_web_tier_at(settings, redis_url: str) -> None:
    from channels.layers import channel_layers

    from agno_site.celery import app

    settings.REDIS_URL = redis_url
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [{"address": redis_url, "socket_timeout": None}]}}}
    channel_layers.backends.clear()
    _use_broker(app, redis_url)


@pytest.fixture
def cluster(settings, live_api, fake_openai, tmp_path):
    from channels.layers import channel_layers

    from agno_site.celery import app

    redis_url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    if not _redis_up(redis_url):
        require_service("Redis", f"cannot reach {redis_url}")
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    cluster = _make_cluster(settings, redis_url, fake_openai, tmp_path)
    yield cluster
    cluster.stop()
    settings.REDIS_URL = None
    channel_layers.backends.clear()
    _use_broker(app, "memory://")


def _make_cluster(settings, redis_url: str, fake_openai, logs: Path) -> Cluster:
    _point_web_tier_at(settings, redis_url)
    settings.AGENTOS_BACKGROUND_MAX_ATTEMPTS = 2
    database = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "agno_site.settings.test",
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/{database['NAME']}",
        "REDIS_URL": redis_url,
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "test-key",
        "AGENTOS_BACKGROUND_LEASE_SECONDS": "3",
        "AGENTOS_REAPER_INTERVAL_SECONDS": "1",
        "AGENTOS_BACKGROUND_RETRY_DELAY_SECONDS": "0",
        "AGENTOS_BACKGROUND_MAX_CONCURRENCY": str(settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY),
        "AGENTOS_BACKGROUND_MAX_PER_USER": str(settings.AGENTOS_BACKGROUND_MAX_PER_USER),
    }
    return Cluster(env, logs)


def submit(base: str, **form: str) -> dict:
    form.setdefault("stream", "false")
    form.setdefault("background", "true")
    form.setdefault("user_id", "alice")
    response = httpx.post(f"{base}/agents/openai-agent/runs", data=form, timeout=30)
    assert response.status_code == 202, response.text
    return response.json()


def status_of(run_id: str) -> str:
    return Run.objects.unscoped("test").get(pk=run_id).status


def ended(run_id: str) -> str | None:
    status = status_of(run_id)
    return status if status in ("COMPLETED", "ERROR", "CANCELLED") else None


def peak_running(jobs: list[Job]) -> int:
    """The most jobs that ran at once, from their own recorded start and end times."""
    moments = sorted([(job.started_at, 1) for job in jobs] + [(job.completed_at, -1) for job in jobs])
    level = peak = 0
    for _, delta in moments:
        level += delta
        peak = max(peak, level)
    return peak


def test_a_killed_worker_loses_no_accepted_job(live_api, cluster, fake_openai) -> None:
    # The first four answers wait on a gate, so all four runs are inside their model call at once
    # however slowly the workers start; the rerun after the kill gets the default answer.
    gate = threading.Event()
    for _ in range(4):
        fake_openai.push(Reply(text="one two three four five", gate=gate, gate_after=1))
    fake_openai.default = SLOW
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.beat()
    ids = [submit(live_api, message=f"job {i}", session_id=f"k-{i}")["run_id"] for i in range(4)]
    fake_openai.wait_for_requests(4, timeout=60)
    running = list(Job.objects.unscoped("test").filter(pk__in=ids, status=JobStatus.RUNNING))
    assert len(running) == 4
    victim_job = running[0]
    victim = next(name for name, process in cluster.processes.items() if victim_job.locked_by.endswith(f"-{process.pid}"))
    cluster.kill(victim)  # kill -9, mid-run
    gate.set()
    for run_id in ids:
        assert wait_for(lambda: ended(run_id), timeout=90) == "COMPLETED", run_id
    rerun = Job.objects.unscoped("test").get(pk=victim_job.pk)
    assert rerun.attempt == 2 and rerun.status == JobStatus.COMPLETED
    assert all(Job.objects.unscoped("test").get(pk=run_id).status == JobStatus.COMPLETED for run_id in ids)


def test_the_concurrency_cap_holds_across_workers(live_api, cluster, fake_openai, settings) -> None:
    fake_openai.default = Reply(text="a b c d e", delay=0.2)
    settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY = 2
    cluster.env["AGENTOS_BACKGROUND_MAX_CONCURRENCY"] = "2"
    cluster.worker("w1", pool="prefork", concurrency=2)
    cluster.worker("w2", pool="prefork", concurrency=2)
    ids = [submit(live_api, message=f"job {i}", session_id=f"cap-{i}", user_id=f"user-{i}")["run_id"] for i in range(6)]
    for run_id in ids:
        assert wait_for(lambda: ended(run_id), timeout=90) == "COMPLETED"
    jobs = list(Job.objects.unscoped("test").filter(pk__in=ids))
    peak = peak_running(jobs)
    assert peak == 2  # measured from the jobs' own timings: four processes' loops, never more than 2 runs


def test_one_worker_process_runs_its_jobs_side_by_side(live_api, cluster, fake_openai) -> None:
    """One process (Celery's threads pool here; any pool alike): its job loop claims and runs
    every job it has room for at once, not one per pool thread."""
    gate = threading.Event()
    for _ in range(4):
        fake_openai.push(Reply(text="a b c d e", gate=gate, gate_after=0))
    worker = cluster.worker("w1", pool="threads", concurrency=2)
    ids = [submit(live_api, message=f"job {i}", session_id=f"thr-{i}", user_id=f"user-{i}")["run_id"] for i in range(4)]
    fake_openai.wait_for_requests(4, timeout=30)  # all four wait on their model at once
    gate.set()
    for run_id in ids:
        assert wait_for(lambda: ended(run_id), timeout=90) == "COMPLETED"
    jobs = list(Job.objects.unscoped("test").filter(pk__in=ids))
    peak = peak_running(jobs)
    assert peak == 4  # two pool threads, four runs at once
    assert {job.locked_by.rsplit("-", 1)[-1] for job in jobs} == {str(worker.pid)}


def test_cancel_from_another_process(live_api, cluster, fake_openai) -> None:
    gate = threading.Event()
    fake_openai.push(Reply(text="a b c d e f", gate=gate, gate_after=2))
    cluster.worker("w1")
    run_id = submit(live_api, message="cancel me", session_id="c-1")["run_id"]
    wait_for(lambda: status_of(run_id) == "RUNNING")
    fake_openai.wait_for_requests(1, timeout=20)  # the worker is inside its model call
    called = time.monotonic()
    httpx.post(f"{live_api}/agents/openai-agent/runs/{run_id}/cancel", params={"session_id": "c-1"})
    # The protocol: the worker's watch asks the database every POLL_SECONDS for the intents of
    # the runs it executes, while they wait on their model; the next check after the call sees it.
    from jobs.services.cancellation import POLL_SECONDS

    wait_for(lambda: time.monotonic() - called > 3 * POLL_SECONDS)
    gate.set()  # the call returns; the worker's next check sees the cancel and stops
    assert wait_for(lambda: ended(run_id), timeout=30) == "CANCELLED"
    assert Job.objects.unscoped("test").get(pk=run_id).status == JobStatus.CANCELLED


def test_resume_through_redis_after_a_disconnect(live_api, cluster, fake_openai) -> None:
    fake_openai.default = SLOW
    cluster.worker("w1")
    seen: list = []
    with httpx.stream("POST", f"{live_api}/agents/openai-agent/runs", data={"message": "follow me", "background": "true", "user_id": "alice", "session_id": "r-1"}, timeout=30) as response:
        buffer = ""
        for chunk in response.iter_text():
            buffer += chunk
            while "\n\n" in buffer:
                block, buffer = buffer.split("\n\n", 1)
                seen += parse_sse(block + "\n\n")
            if len(seen) >= 4:
                break
    run_id = seen[0][1]["run_id"]
    with httpx.stream("POST", f"{live_api}/agents/openai-agent/runs/{run_id}/resume", data={"session_id": "r-1", "last_event_index": str(seen[-1][1]["event_index"])}, timeout=60) as response:
        resumed = [frame for frame in parse_sse("".join(response.iter_text())) if "event_index" in frame[1]]
    indexes = [data["event_index"] for _, data in seen + resumed]
    assert indexes == list(range(len(indexes)))
    assert resumed[-1][0] == "RunCompleted"
    assert list(RunEvent.objects.for_user("alice").filter(run_id=run_id).order_by("event_index").values_list("event_index", flat=True)) == indexes


def test_redis_going_away_mid_run_loses_nothing(live_api, settings, fake_openai, tmp_path) -> None:
    from channels.layers import channel_layers

    from agno_site.celery import app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    redis_url = f"redis://127.0.0.1:{port}/0"
    cluster = None
    try:
        wait_for(lambda: _redis_up(redis_url), timeout=20)
        cluster = _make_cluster(settings, redis_url, fake_openai, tmp_path)
        fake_openai.default = SLOW
        cluster.worker("w1")
        run_id = submit(live_api, message="outlive redis", session_id="x-1")["run_id"]
        wait_for(lambda: status_of(run_id) == "RUNNING")
        server.kill()  # Redis is gone: no broker, no live events
        server.wait(timeout=10)
        assert wait_for(lambda: ended(run_id), timeout=60) == "COMPLETED"
        # Following the run falls back to the database and still gets every event, in order.
        with httpx.stream("POST", f"{live_api}/agents/openai-agent/runs/{run_id}/resume", data={"session_id": "x-1", "last_event_index": "-1"}, timeout=60) as response:
            frames = [frame for frame in parse_sse("".join(response.iter_text())) if "event_index" in frame[1]]
        assert [data["event_index"] for _, data in frames] == list(range(len(frames)))
        assert frames[-1][0] == "RunCompleted" and frames[0][0] == "RunStarted"
    finally:
        if cluster is not None:
            cluster.stop()
        if server.poll() is None:
            server.kill()
        settings.REDIS_URL = None
        channel_layers.backends.clear()
        _use_broker(app, "memory://")


def test_a_team_paused_in_one_worker_continues_in_another(live_api, cluster) -> None:
    """A member's pause is stored with the team run: a worker started after the first one is
    gone continues it from the database alone, member first, then the leader."""
    cluster.worker("w1")
    task = json.dumps({"member_id": "hitl-member", "task": '/call delete_file {"path": "z.txt"}'})
    accepted = httpx.post(
        f"{live_api}/teams/hitl-team/runs",
        data={"message": f"/call delegate_task_to_member {task}", "stream": "false", "background": "true", "user_id": "alice", "session_id": "team-bg"},
        timeout=30,
    )
    assert accepted.status_code == 202, accepted.text
    run_id = accepted.json()["run_id"]
    assert wait_for(lambda: status_of(run_id) == "PAUSED", timeout=60)
    cluster.kill("w1")
    cluster.worker("w2")
    paused = httpx.get(f"{live_api}/teams/hitl-team/runs/{run_id}", params={"session_id": "team-bg"}).json()
    [requirement] = paused["requirements"]
    assert requirement["member_agent_id"] == "hitl-member"
    requirement["confirmation"] = True
    again = httpx.post(
        f"{live_api}/teams/hitl-team/runs/{run_id}/continue",
        data={"requirements": json.dumps([requirement]), "session_id": "team-bg", "stream": "false", "background": "true"}, timeout=30,
    )
    assert again.status_code == 202, again.text
    assert wait_for(lambda: ended(run_id), timeout=60) == "COMPLETED"
    done = Run.objects.unscoped("test").get(pk=run_id)
    assert done.run_data["content"] == "Tool delete_file returned: deleted z.txt"
    member = Run.objects.unscoped("test").get(pk=requirement["member_run_id"])
    assert (member.status, member.parent_run_id, member.run_type) == ("COMPLETED", run_id, "agent")
