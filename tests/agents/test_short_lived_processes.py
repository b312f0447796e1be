"""A short-lived process never claims a job (issue 32, item 7): a ``manage.py shell`` that adds a
knowledge content, with the embedded worker on and no broker, only commits the content and its
ingestion job. Before, the shell's own embedded worker claimed the job and died with the shell,
and the content failed a lease later as "Worker lost". Only a served process (the ASGI server's
lifespan, ``scheduler_tick --loop``) and Celery workers run workers."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.models import Job, JobStatus
from jobs.services.claims import job_claim
from jobs.services.jobs import job_run
from knowledge.models import Content, ContentStatus

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]

# What an operator types into ``manage.py shell``; then the shell lingers a moment (as a session
# does) before it exits, which gives a worker of its own every chance to claim the job.
SHELL = """
import time
from jobs.models import Job
from knowledge.services import base_get_or_create, content_insert

base = base_get_or_create(name="documents")
content = content_insert(user_id="alice", base_id=base.pk, source_type="text", text="The office opens at nine.", name="office").content
deadline = time.monotonic() + 3
while time.monotonic() < deadline and Job.objects.unscoped("the test's probe").get(pk=content.job_id).status == "queued":
    time.sleep(0.05)
print(content.pk)
"""


def database_url(settings) -> str:
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.postgresql":
        return f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/{database['NAME']}"
    return f"sqlite:///{database['NAME']}"


def test_a_manage_py_shell_that_adds_a_content_leaves_its_job_to_a_real_worker(settings) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL",)}
    env.update({
        "DJANGO_SETTINGS_MODULE": "agno_site.settings.test", "DATABASE_URL": database_url(settings),
        "EMBEDDED_WORKER": "true", "AGNO_SITE_IGNORE_DOTENV": "true",
    })
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", SHELL], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    content = Content.objects.unscoped("the test reads what the shell wrote").get(pk=done.stdout.strip().splitlines()[-1])
    job = Job.objects.unscoped("the test reads what the shell wrote").get(pk=content.job_id)
    assert (job.status, job.locked_by, job.attempt) == (JobStatus.QUEUED, "", 0)  # nobody took it
    assert content.status == ContentStatus.PROCESSING

    # A real worker (here: this process, standing in for a served one) takes it and finishes it.
    settings.EMBEDDED_WORKER = False  # the test runs the job itself, in its thread
    claimed = job_claim(worker="a-real-worker")
    assert claimed is not None and claimed.pk == job.pk
    assert job_run(claimed, "a-real-worker") == JobStatus.COMPLETED.upper()
    content.refresh_from_db()
    assert content.status == ContentStatus.COMPLETED


@pytest.mark.slow
def test_a_server_with_its_lifespan_off_still_runs_the_jobs_it_accepts(settings, tmp_path) -> None:
    """The other side: a process that loads the server's application (here uvicorn with
    ``--lifespan off``, as the benchmarks run it) serves, and its embedded worker runs its jobs."""
    import signal
    import socket

    import httpx

    from sessions.models import Run
    from tests.agents.conftest import wait_for

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL",)}
    env.update({
        "DJANGO_SETTINGS_MODULE": "agno_site.settings.test", "DATABASE_URL": database_url(settings),
        "EMBEDDED_WORKER": "true", "AGNO_SITE_IGNORE_DOTENV": "true", "VAR_DIR": str(tmp_path),
    })
    with (tmp_path / "server.log").open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "agno_site.asgi:application", "--port", str(port), "--lifespan", "off"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        def up() -> bool:
            try:
                return httpx.get(f"{base}/health", timeout=5).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(up, timeout=60, interval=0.2)
        accepted = httpx.post(f"{base}/agents/assistant/runs", data={"message": "hello", "stream": "false", "background": "true", "user_id": "alice"}, timeout=30)
        assert accepted.status_code == 202, accepted.text
        run_id = accepted.json()["run_id"]
        assert wait_for(lambda: Run.objects.unscoped("the test reads the server's run").get(pk=run_id).status == "COMPLETED", timeout=60)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
