"""Runs of the test server's code agents over HTTP, for the /agents tests."""
from __future__ import annotations

import httpx


def post_run(base: str, agent_id: str = "assistant", **form: str) -> httpx.Response:
    form.setdefault("stream", "false")
    return httpx.post(f"{base}/agents/{agent_id}/runs", data=form, timeout=30)
