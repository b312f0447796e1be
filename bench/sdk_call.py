"""What one model call costs in the OpenAI SDK: typed ``create()`` against the untyped ``post()``.

    .venv/bin/python -m bench.sdk_call [--calls 500]

Starts bench.fake_openai (an instant model), then times, in CPU seconds of this process, the
same Chat Completions request (a system prompt and seven history messages) made four ways:
``client.chat.completions.create`` and ``client.post(..., cast_to=object)``, each non-streamed
and streamed, and, for scale, the same request through a bare urllib3 pool with no SDK at all.
engine.models.openai uses the second (same client, auth, base URL,
timeouts, error types and SSE decoding; no TypedDict request conversion, no pydantic models).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

import httpx

MESSAGES = [{"role": "system", "content": "You are helpful."}] + [
    {"role": "user" if n % 2 == 0 else "assistant", "content": "hello there " * 10} for n in range(7)
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()

    import openai

    port = free_port()
    model = subprocess.Popen([sys.executable, "-m", "bench.fake_openai", "--port", str(port)])
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        client = openai.OpenAI(api_key="bench", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
        body = {"model": "gpt-4o-mini", "messages": MESSAGES}
        streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}

        def typed() -> str:
            return client.chat.completions.create(**body).choices[0].message.content

        def untyped() -> str:
            return client.post("/chat/completions", body=body, cast_to=object)["choices"][0]["message"]["content"]

        def typed_stream() -> str:
            chunks = client.chat.completions.create(**streamed)
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

        def untyped_stream() -> str:
            chunks = client.post("/chat/completions", body=streamed, cast_to=object, stream=True, stream_cls=openai.Stream[object])
            return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])

        import urllib3

        pool = urllib3.HTTPConnectionPool("127.0.0.1", port, maxsize=4)
        headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}

        def bare() -> str:  # no SDK: what the request itself costs through a plain connection pool
            answer = pool.urlopen("POST", "/v1/chat/completions", body=json.dumps(body).encode(), headers=headers, retries=False)
            return json.loads(answer.data)["choices"][0]["message"]["content"]

        print(f"openai {openai.__version__}, {args.calls} calls each, CPU ms per call of this process (pid {os.getpid()}):")
        for name, call in [("create()", typed), ("post(cast_to=object)", untyped),
                           ("create(stream=True)", typed_stream), ("post(stream=True)", untyped_stream),
                           ("urllib3, no SDK", bare)]:
            answer = call()
            assert answer.startswith("Hello"), answer
            for _ in range(50):  # warm-up
                call()
            started = time.process_time()
            for _ in range(args.calls):
                call()
            print(f"  {name:24} {1000 * (time.process_time() - started) / args.calls:6.2f} ms")
    finally:
        model.terminate()
        model.wait(10)


if __name__ == "__main__":
    main()
