"""Issue 19's chat defects, each as a person meets them in Chromium: approvals that wait while the
conversation goes on, history navigation and switching during a stream, Retry, and what a stored
conversation shows (decisions, stops, images, tool results)."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from sessions.models import Run, RunStatus
from tests.factories import make_run, make_session
from tests.fakes._base import Failure, Reply

from .conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")


def last_reply(page):
    return page.locator(".msg-assistant").last


def asked(page):
    return page.locator(".msg-user .msg-body")


def runs_of(user_id: str) -> list[Run]:
    return list(Run.objects.for_user(user_id).order_by("created_at"))


def status_of(run: Run) -> str:
    return Run.objects.for_user(run.user_id).get(pk=run.pk).status


def test_an_approval_waits_while_the_conversation_goes_on_and_its_decision_is_kept(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "hitl-agent")
    send(page, '/call delete_file {"path": "pending.txt"}')
    page.wait_for_selector(IDLE)
    pending = page.locator(".approval")
    expect(pending).to_contain_text("decide now, or go on talking")
    # The person goes on talking instead of deciding: the new reply streams and finishes.
    send(page, "never mind, just say hi")
    page.wait_for_selector(IDLE)
    later = last_reply(page)
    expect(later.locator(".md")).to_contain_text("You said: never mind, just say hi")
    expect(later).not_to_contain_text("Still working")
    paused, hi = wait_until(lambda: len(runs_of("alice")) == 2 and runs_of("alice"), message="both runs")
    assert (paused.status, status_of(hi)) == (RunStatus.PAUSED, RunStatus.COMPLETED)
    # The approval above is still decidable, and deciding it continues the paused run.
    pending.get_by_role("button", name="Approve").click()
    expect(pending).to_contain_text("You approved this.")
    page.wait_for_selector(IDLE)
    first = page.locator(".msg-assistant").first
    expect(first.locator("details.tool")).to_have_attribute("data-state", "done")
    expect(page.locator(".notice")).to_be_hidden()
    wait_until(lambda: status_of(paused) == RunStatus.COMPLETED, message="the approved run to complete")
    # Regenerate stays on the last reply, not on the approved one above it.
    expect(page.get_by_role("button", name="Regenerate")).to_have_count(1)
    expect(later.get_by_role("button", name="Regenerate")).to_be_visible()

    # Reopened, the decision is still there: what, who and when, from the stored run.
    page.reload()
    first = page.locator(".msg-assistant").first
    expect(first.locator(".approval-record")).to_have_text(re.compile(r"^You \(alice\) approved delete_file on .*\d{4}.*\.$"))
    expect(first.locator("details.tool")).to_have_attribute("data-state", "done")
    expect(page.get_by_role("button", name="Regenerate")).to_have_count(1)
    expect(last_reply(page).get_by_role("button", name="Regenerate")).to_be_visible()
    assert page.errors == []


def test_history_and_switching_show_the_conversation_the_url_names_while_a_reply_streams(browsing, make_user):
    make_user("alice")
    first = make_session("alice", component_id="assistant", session_name="First talk")
    make_run("alice", session=first, status=RunStatus.COMPLETED, component_id="assistant",
             input={"input_content": "an old question"}, run_data={"content": "an old answer"})
    other = make_session("alice", component_id="assistant", session_name="Other talk")
    make_run("alice", session=other, status=RunStatus.COMPLETED, component_id="assistant",
             input={"input_content": "another question"}, run_data={"content": "another answer"})
    page = browsing.chat_as("alice")
    page.locator(f'.session[data-session-id="{first.session_id}"] .session-open').click()
    expect(asked(page)).to_have_text(["an old question"])
    send(page, "/slow 6")
    page.wait_for_selector(".msg-assistant.is-streaming .md")

    # Back, mid-stream: the URL and the page agree on a new chat.
    page.go_back()
    expect(page).to_have_url(re.compile("/chat/$"))
    expect(page.locator("#session-title")).to_have_text("New chat")
    expect(page.locator("#welcome")).to_be_visible()
    expect(page.locator(".msg")).to_have_count(0)
    # Forward again: the conversation, its reply still followed.
    page.go_forward()
    expect(page).to_have_url(re.compile(f"/chat/s/{first.session_id}/$"))
    expect(asked(page)).to_have_text(["an old question", "/slow 6"])
    expect(last_reply(page)).to_have_class(re.compile("is-streaming"))

    # Another conversation, mid-stream: it opens; the reply goes on on the server.
    page.locator(f'.session[data-session-id="{other.session_id}"] .session-open').click()
    expect(page).to_have_url(re.compile(f"/chat/s/{other.session_id}/$"))
    expect(page.locator("#session-title")).to_have_text("Other talk")
    expect(asked(page)).to_have_text(["another question"])
    slow = wait_until(lambda: [run for run in runs_of("alice") if run.input.get("input_content") == "/slow 6"], message="the slow run")[0]
    wait_until(lambda: status_of(slow) == RunStatus.COMPLETED, timeout=20, message="the slow run to finish in the background")
    # Opening it again shows the finished reply.
    page.locator(f'.session[data-session-id="{first.session_id}"] .session-open').click()
    page.wait_for_selector(IDLE)
    expect(last_reply(page).locator(".md")).to_contain_text("(offline demo) You said: (only commands)")
    expect(last_reply(page).locator(".msg-note-stopped")).to_have_count(0)
    assert page.errors == []


def test_a_failed_reply_can_be_retried(browsing, make_user, fake_openai):
    make_user("alice")
    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "assistant")
    # The server answers the first send with a 500 (before any run exists): Retry sends it again.
    failures = []

    def fail_first(route):
        if route.request.method == "POST" and not failures:
            failures.append(route.request.url)
            route.fulfill(status=500, content_type="application/json", body='{"detail": "Internal Server Error"}')
        else:
            route.continue_()

    page.route(re.compile(r"/agents/assistant/runs$"), fail_first)
    send(page, "are you there?")
    page.wait_for_selector(IDLE)
    expect(last_reply(page).locator(".msg-error")).to_contain_text("Internal Server Error")
    last_reply(page).get_by_role("button", name="Retry").click()
    page.wait_for_selector(IDLE)
    expect(asked(page)).to_have_text(["are you there?"])
    expect(page.locator(".msg-assistant")).to_have_count(1)
    expect(last_reply(page).locator(".md")).to_contain_text("You said: are you there?")
    expect(page.locator(".msg-error")).to_have_count(0)
    assert len(failures) == 1

    # The model fails (the provider's 401): Retry answers again, and the new answer takes its place.
    page.get_by_role("button", name="New chat").click()
    page.select_option("#agent-picker", "openai-agent")
    fake_openai.push(Failure(status=401, message="Incorrect API key provided"), Reply(text="Hello again, now it works."))
    send(page, "hello model")
    page.wait_for_selector(IDLE)
    expect(last_reply(page).locator(".msg-error")).to_be_visible()
    (failed,) = wait_until(lambda: [run for run in runs_of("alice") if run.component_id == "openai-agent" and run.status == RunStatus.ERROR], message="the failed run")
    last_reply(page).get_by_role("button", name="Retry").click()
    page.wait_for_selector(IDLE)
    expect(page.locator(".msg-assistant")).to_have_count(1)
    expect(last_reply(page).locator(".md")).to_have_text("Hello again, now it works.")
    wait_until(lambda: status_of(failed) == RunStatus.REGENERATED, message="the failed run to be replaced")
    page.reload()
    expect(asked(page)).to_have_text(["hello model"])
    expect(page.locator(".msg-assistant")).to_have_count(1)
    expect(page.locator(".msg-error")).to_have_count(0)
    expect(last_reply(page).locator(".md")).to_have_text("Hello again, now it works.")
    assert page.errors == []


def test_a_stored_conversation_shows_stops_tool_results_and_images_as_they_were(browsing, make_user):
    make_user("alice")
    session = make_session("alice", component_id="assistant", session_name="Stored")
    # A run stopped before it executed: the server's reason is no reply of the agent's.
    make_run("alice", session=session, status=RunStatus.CANCELLED, component_id="assistant", input={"input_content": "stuck"},
             run_data={"content": "cancelled before execution", "cancellation_stage": "PENDING"})
    result = '{"operation": "addition", "result": 42.0}'
    tool = {"tool_call_id": "call_1", "tool_name": "add", "tool_args": {"a": 2, "b": 40}, "tool_call_error": False, "result": result}
    make_run("alice", session=session, status=RunStatus.COMPLETED, component_id="assistant", input={"input_content": "add them"},
             run_data={"content": f"Tool add returned: {result}\n\n<img src=x alt=chart> <img src=./y.png> ![z](z.png)", "tools": [tool]})
    page = browsing.chat_as("alice")
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    page.goto(f"/chat/s/{session.session_id}/")
    page.wait_for_selector("body[data-ready=true]")
    stopped, added = page.locator(".msg-assistant").all()
    expect(stopped.locator(".msg-note-stopped")).to_have_text("Stopped")
    expect(stopped).not_to_contain_text("cancelled before execution")
    # The tool's result as it was sent: 42.0, not 42.
    card = added.locator("details.tool")
    card.locator("summary").click()
    expect(card.locator(".tool-result")).to_have_text(result)
    expect(added.locator(".md")).to_contain_text("[chart]")
    assert added.locator(".md img").count() == 0
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_load_state("networkidle")
    assert [url for url in fetched if re.search(r"/(x|y\.png|z\.png)$", url)] == []
    assert page.errors == []
