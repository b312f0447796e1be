"""Export, share links and access tokens, as a person uses them (Chromium): the chat's Share
dialog downloads the conversation and makes, copies and revokes its link; the shared page is a
read-only copy drawn by the chat's renderer under the CSP; the Access tokens page revokes a token."""
from __future__ import annotations

import json
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from chat.models import SharedConversation
from core.auth import OPERATOR
from core.models import AccessToken
from core.services.tokens import access_token_create
from scheduler.models import Schedule

from .conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")
    page.wait_for_selector(IDLE)


def csp_violations(page) -> list[str]:
    violations: list[str] = []
    page.context.expose_function("__cspViolation", lambda text: violations.append(text))
    page.context.add_init_script("""document.addEventListener("securitypolicyviolation",
        (e) => window.__cspViolation(`${location.pathname}: ${e.effectiveDirective} ${e.blockedURI}`));""")
    return violations


def test_a_conversation_is_exported_shared_read_only_and_unshared(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "assistant")
    # A new chat has nothing to export or share yet.
    page.click("#share-button")
    expect(page.locator("#share-none")).to_be_visible()
    expect(page.locator("#share-body")).to_be_hidden()
    page.get_by_role("button", name="Close").click()

    send(page, "Hello there")
    send(page, "/markdown")
    session_id = urlsplit(page.url).path.split("/")[3]

    page.click("#share-button")
    dialog = page.locator("#share-dialog")
    expect(dialog.locator("#share-state")).to_contain_text("Only you can see this conversation")
    with page.expect_download() as markdown:
        dialog.get_by_role("link", name="Markdown (.md)").click()
    text = markdown.value.path().read_text()
    assert markdown.value.suggested_filename.endswith(".md")
    assert text.startswith("# ") and "**You**" in text and "Hello there" in text and "def fibonacci(n: int) -> int:" in text
    with page.expect_download() as exported:
        dialog.get_by_role("link", name="JSON").click()
    body = json.loads(exported.value.path().read_text())
    assert body["session"]["session_id"] == session_id
    assert [message["role"] for message in body["messages"]] == ["user", "assistant", "user", "assistant"]

    dialog.get_by_role("button", name="Create a link").click()
    link = dialog.locator("#share-link")
    expect(link).not_to_have_value("")
    url = link.input_value()
    assert url.startswith(browsing.base_url + "/chat/shared/")
    expect(dialog.locator("#share-state")).to_contain_text("Anyone with this link")
    expect(dialog.get_by_role("button", name="Update the link")).to_be_visible()

    # Someone else, not signed in, opens the link: a read-only copy, rendered as the chat renders it.
    reader = browsing.page()
    violations = csp_violations(reader)
    reader.goto(url)
    reader.wait_for_selector("body[data-ready=true]")
    expect(reader.locator("#shared-title")).to_have_text(page.locator("#session-title").inner_text())
    expect(reader.locator(".msg-user")).to_have_text(["Hello there", "/markdown"])
    reply = reader.locator(".msg-assistant").last
    expect(reply.locator("pre > code.language-python.hljs")).to_contain_text("def fibonacci(n: int) -> int:")
    expect(reply.locator("table tbody tr")).to_have_count(2)
    expect(reply.locator(".math-display .katex-display")).to_have_count(1)
    # No controls and nothing else of alice's: no composer, sidebar, feedback, edit or regenerate, not her name.
    for selector in ("#composer", "#sidebar", ".fb-row", ".fb-thumb", ".msg-edit-button", ".msg-action", "#share-button"):
        expect(reader.locator(selector)).to_have_count(0)
    assert "alice" not in reader.content() and session_id not in reader.content()
    assert violations == [] and reader.errors == []

    # Stopping sharing: the link is a 404 at once.
    dialog.get_by_role("button", name="Stop sharing").click()
    expect(dialog.locator("#share-state")).to_have_text("Stopped sharing: the link no longer works.")
    expect(dialog.locator("#share-link-row")).to_be_hidden()
    assert wait_until(lambda: SharedConversation.objects.for_user("alice").count() == 0, message="the share to be revoked")
    response = reader.goto(url)
    assert response.status == 404
    expect(reader.locator("#shared-missing")).to_have_text("This conversation isn't shared, or its owner stopped sharing it.")
    assert page.errors == []


def test_access_tokens_are_listed_for_their_owner_and_revoking_one_stops_it_and_its_schedules(browsing, make_user, live_api):
    make_user("alice")
    make_user("bob")
    token, secret = access_token_create(name="laptop", user_id="alice", scopes="agents:run schedules:read schedules:write", granted_by=OPERATOR)
    access_token_create(name="ci", user_id="alice", scopes="sessions:read", granted_by=OPERATOR)
    access_token_create(name="bobs-token", user_id="bob", scopes="agents:read", granted_by=OPERATOR)
    auth = {"Authorization": f"Bearer {secret}"}
    created = httpx.post(f"{live_api}/schedules", headers=auth, timeout=10, json={
        "name": "nightly", "endpoint": "/agents/assistant/runs", "cron_expr": "0 3 * * *", "payload": {"message": "report"},
    })
    assert created.status_code == 201, created.text
    assert httpx.get(f"{live_api}/schedules", headers=auth, timeout=10).status_code == 200

    page = browsing.chat_as("alice")
    page.click("#my-tokens")
    expect(page.get_by_role("heading", name="Access tokens")).to_be_visible()
    rows = page.locator("#tokens tbody tr")
    expect(rows).to_have_count(2)  # alice's two, never bob's
    assert "bobs-token" not in page.content()
    laptop = page.locator('tr[data-token-name="laptop"]')
    expect(laptop).to_contain_text(f"agno_pat_{token.token_prefix}…")
    expect(laptop).to_contain_text("agents:run schedules:read schedules:write")

    laptop.get_by_text("Revoke…").click()
    laptop.get_by_role("button", name="Revoke “laptop”").click()
    expect(page.get_by_role("status")).to_contain_text("Revoked “laptop”")
    expect(page.locator('tr[data-token-name="laptop"]')).to_contain_text("revoked")
    expect(page.locator('tr[data-token-name="ci"]').get_by_text("Revoke…")).to_be_visible()

    # At once: the API refuses the token, and the schedule made with it is disabled, saying why.
    refused = httpx.get(f"{live_api}/schedules", headers=auth, timeout=10)
    assert refused.status_code == 401
    schedule = Schedule.objects.for_user("alice").get(name="nightly")
    assert schedule.enabled is False and schedule.disabled_reason.startswith("credential_revoked: the personal token 'laptop'")
    assert AccessToken.objects.for_user("bob").get().revoked_at is None
    assert page.errors == []
