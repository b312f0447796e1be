"""The floor: what a run costs on this stack before any of the run's own work.

    .venv/bin/python -m bench.compare --only agentos,floor      # beside AgentOS, same load

A whole Django project in one module (settings, URLconf, views), served by uvicorn exactly as
bench.compare serves Agno Site: no middleware, no database, no authentication, nothing stored.
It answers the two requests the run benchmarks make:

* ``GET /health``;
* ``POST /agents/{id}/runs``: parses the form, sends the message to the model through the
  official OpenAI SDK's untyped call (the one ``engine.models.openai`` makes), and
  answers a run-shaped JSON body, or, with ``stream=true``, SSE frames (``RunStarted``, a
  ``RunContent`` per model chunk, ``RunCompleted``) framed as AgentOS frames them.

No session, run row, history, memory, event log, cancellation, validation or scope. Any server
built from Django, the OpenAI SDK and an ASGI server pays at least this for a run, so its rate
beside AgentOS's bounds the ratio any implementation on this stack can reach.

``FLOOR_CLIENT=thread`` (default) makes the SDK's blocking call in a pool of 32 threads, as Agno
Site's runs do; ``FLOOR_CLIENT=async`` uses ``AsyncOpenAI`` on the event loop, no thread at all;
``FLOOR_CLIENT=urllib3`` leaves the SDK out: the same request through a plain urllib3 connection
pool in the same threads, to show what the SDK itself costs a run (the project keeps the SDK:
DESIGN.md's stack has model providers through their official SDKs).
"""
from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

SECRET_KEY = "bench-floor"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "bench.floor"
INSTALLED_APPS: list[str] = []
MIDDLEWARE: list[str] = []
DATABASES: dict = {}
USE_TZ = True
LOGGING_CONFIG = None

CLIENT = os.environ.get("FLOOR_CLIENT", "thread")
MODEL = "gpt-4o-mini"
INSTRUCTIONS = {"role": "system", "content": "You are a helpful assistant."}
_COMPLETIONS = "/chat/completions"

_threads = ThreadPoolExecutor(max_workers=32, thread_name_prefix="floor-run")
_sync_client = None
_async_client = None


class _Urllib3:
    """The two calls the floor makes of the SDK's client, through a bare urllib3 pool."""

    def __init__(self, base_url: str, api_key: str) -> None:
        import urllib3
        from urllib.parse import urlsplit

        parts = urlsplit(base_url)
        self.path = parts.path
        self.pool = urllib3.HTTPConnectionPool(parts.hostname, parts.port, maxsize=32, block=False)
        self.headers = {"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"}
        self.timeout = urllib3.Timeout(connect=10.0, read=60.0)

    def _send(self, path: str, body: dict, stream: bool):
        return self.pool.urlopen("POST", self.path + path, body=json.dumps(body).encode(), headers=self.headers,
                                 retries=False, redirect=False, timeout=self.timeout, preload_content=not stream)

    def post(self, path: str, body: dict, **_) -> dict:
        return json.loads(self._send(path, body, stream=False).data)

    def stream_lines(self, path: str, body: dict):
        response = self._send(path, body, stream=True)
        rest = b""
        while chunk := response.read1(65536):
            *lines, rest = (rest + chunk).split(b"\n")
            for line in lines:
                yield line.rstrip(b"\r").decode()
        response.release_conn()


def _clients():
    global _sync_client, _async_client
    if _sync_client is None:
        import openai

        options = {"api_key": os.environ.get("OPENAI_API_KEY", "bench"), "base_url": os.environ["OPENAI_BASE_URL"],
                   "max_retries": 0, "timeout": 60.0}
        _sync_client = _Urllib3(options["base_url"], options["api_key"]) if CLIENT == "urllib3" else openai.OpenAI(**options)
        _async_client = openai.AsyncOpenAI(**options)
    return _sync_client, _async_client


def _params(message: str, stream: bool) -> dict:
    params = {"model": MODEL, "messages": [INSTRUCTIONS, {"role": "user", "content": message}]}
    if stream:
        params.update(stream=True, stream_options={"include_usage": True})
    return params


def _run_body(agent_id: str, session_id: str, run_id: str, content: str, usage: dict) -> dict:
    return {
        "run_id": run_id, "agent_id": agent_id, "session_id": session_id, "content": content,
        "content_type": "str", "status": "COMPLETED", "model": MODEL, "model_provider": "OpenAI",
        "metrics": usage, "created_at": int(time.time()),
    }


def _frame(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _chunks_from_lines(lines):
    for line in lines:
        if line.startswith("data: ") and line != "data: [DONE]":
            yield json.loads(line[6:])


def _delta(chunk: dict) -> str:
    choices = chunk.get("choices") or ()
    return (choices[0].get("delta") or {}).get("content") or "" if choices else ""


async def health(request):
    from django.http import JsonResponse

    return JsonResponse({"status": "ok", "instantiated_at": 0})


async def run(request, agent_id: str):
    from django.http import HttpResponse, StreamingHttpResponse

    form = request.POST
    message = form.get("message", "")
    session_id = form.get("session_id") or str(uuid.uuid4())
    run_id = str(uuid.uuid4())
    stream = form.get("stream", "true").lower() != "false"
    sync_client, async_client = _clients()
    if not stream:
        params = _params(message, stream=False)
        if CLIENT == "async":
            completion = await async_client.post(_COMPLETIONS, body=params, cast_to=object)
        else:
            completion = await asyncio.get_running_loop().run_in_executor(
                _threads, lambda: sync_client.post(_COMPLETIONS, body=params, cast_to=object)
            )
        content = completion["choices"][0]["message"]["content"]
        body = _run_body(agent_id, session_id, run_id, content, completion.get("usage") or {})
        return HttpResponse(json.dumps(body), content_type="application/json")

    async def events():
        started = {"run_id": run_id, "agent_id": agent_id, "session_id": session_id, "created_at": int(time.time())}
        yield _frame("RunStarted", {"event": "RunStarted", **started})
        parts: list[str] = []
        async for chunk in _model_chunks(message, sync_client, async_client):
            delta = _delta(chunk)
            if delta:
                parts.append(delta)
                yield _frame("RunContent", {"event": "RunContent", **started, "content": delta, "content_type": "str"})
        yield _frame("RunCompleted", {"event": "RunCompleted", **started, "content": "".join(parts)})

    return StreamingHttpResponse(events(), content_type="text/event-stream", headers={"Cache-Control": "no-cache"})


async def _model_chunks(message: str, sync_client, async_client):
    import httpx2

    params = _params(message, stream=True)
    if CLIENT == "async":
        response = await async_client.post(_COMPLETIONS, body=params, cast_to=httpx2.Response, stream=True)
        try:
            async for line in response.aiter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    yield json.loads(line[6:])
        finally:
            await response.aclose()
        return
    # As a run thread does: the blocking call and its reading in a thread, each chunk handed to the loop.
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    done = object()

    def read() -> None:
        try:
            if isinstance(sync_client, _Urllib3):
                for chunk in _chunks_from_lines(sync_client.stream_lines(_COMPLETIONS, params)):
                    loop.call_soon_threadsafe(queue.put_nowait, chunk)
                return
            response = sync_client.post(_COMPLETIONS, body=params, cast_to=httpx2.Response, stream=True)
            try:
                for chunk in _chunks_from_lines(response.iter_lines()):
                    loop.call_soon_threadsafe(queue.put_nowait, chunk)
            finally:
                response.close()
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, done)

    loop.run_in_executor(_threads, read)
    while (chunk := await queue.get()) is not done:
        yield chunk


def _urlpatterns():
    from django.urls import path

    return [path("health", health), path("agents/<str:agent_id>/runs", run)]


def __getattr__(name: str):
    # The URLconf is this module, read after Django is set up (its views import Django lazily).
    if name == "urlpatterns":
        return _urlpatterns()
    raise AttributeError(name)


def application():
    """uvicorn ``--factory bench.floor:application``."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.floor"
    from django.core.asgi import get_asgi_application

    return get_asgi_application()
