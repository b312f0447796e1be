"""Browser fixtures: Debian's Chromium driven by Playwright (python, sync API), one browser per session.

The live server is ``live_api`` (uvicorn serving the real ASGI app in a thread, on the test
database). Playwright's sync API keeps an event loop on the test thread, so Django's ORM calls
from the test body need DJANGO_ALLOW_ASYNC_UNSAFE.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_service

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
PASSWORD = "correct-horse-battery-staple"
TIMEOUT_MS = 15_000


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    if not os.access(CHROMIUM, os.X_OK):
        require_service("Chromium", f"{CHROMIUM} is not installed (scripts/install_chromium.sh)")
    vendor = Path(__file__).resolve().parents[2] / "chat" / "static_vendor" / "vendor"
    if not all((vendor / name).is_file() for name in ("marked/marked.esm.js", "highlightjs/highlight.min.js")):
        require_service("vendored browser libraries", "chat/static_vendor is missing (run scripts/vendor_static.sh)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def screenshots_dir(tmp_path) -> Path:
    """``docs/`` when re-taking the README's screenshots (make screenshots), else a temp dir."""
    target = os.environ.get("SCREENSHOTS_DIR")
    return Path(target) if target else tmp_path


class Browsing:
    """Contexts opened by a test, closed after it; each context is one signed-in person."""

    def __init__(self, browser: Any, base_url: str) -> None:
        self.browser = browser
        self.base_url = base_url
        self.contexts: list[Any] = []

    def page(self, *, viewport: tuple[int, int] = (1280, 860), mobile: bool = False) -> Any:
        context = self.browser.new_context(
            base_url=self.base_url,
            viewport={"width": viewport[0], "height": viewport[1]},
            is_mobile=mobile,
            has_touch=mobile,
            device_scale_factor=2 if mobile else 1,
            reduced_motion="reduce",  # no transitions or chart animations: screenshots and waits are stable
        )
        context.set_default_timeout(TIMEOUT_MS)
        self.contexts.append(context)
        page = context.new_page()
        page.errors = []
        page.on("pageerror", lambda error: page.errors.append(str(error)))
        return page

    def chat_as(self, username: str, **kwargs: Any) -> Any:
        page = self.page(**kwargs)
        page.goto("/chat/")
        page.fill("#id_username", username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("body[data-ready=true]")
        return page

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture
def browsing(chromium, live_api) -> Iterator[Browsing]:
    session = Browsing(chromium, live_api)
    yield session
    session.close()


@pytest.fixture
def make_user(transactional_db) -> Callable[..., Any]:
    from django.contrib.auth import get_user_model

    def make(username: str, **fields: Any) -> Any:
        return get_user_model().objects.create_user(username=username, password=PASSWORD, **fields)

    return make


def wait_until(condition: Callable[[], Any], *, timeout: float = 10.0, message: str = "condition") -> Any:
    """Poll a database condition with a deadline (the browser side waits with Playwright)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        time.sleep(0.05)


def off_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a thread of its own (Playwright's event loop runs on the test's, where
    a run cannot be driven synchronously), its database connections closed before the thread
    ends: a pooled connection left in a dead thread is never given back to the pool, and a
    handful of them exhausted PostgreSQL's pool of 10 in the last browser tests (seen in CI)."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connections

    def closing() -> Any:
        try:
            return fn(*args)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(closing).result()
