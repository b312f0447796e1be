"""The chat UI in a real browser (Debian's Chromium): what an end user does, end to end."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from sessions.models import Run, RunStatus, Session
from tests.factories import make_run, make_session

from .conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")


def pick_agent(page, agent_id: str) -> None:
    page.select_option("#agent-picker", agent_id)


def last_reply(page):
    return page.locator(".msg-assistant").last


def runs_of(user_id: str) -> list[Run]:
    return list(Run.objects.for_user(user_id).order_by("created_at"))


def test_login_then_a_streamed_reply_in_a_new_session(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_agent(page, "assistant")
    # Count the renders of the reply while it streams: a streamed reply grows in several steps.
    page.evaluate("""() => {
        window.__renders = 0;
        new MutationObserver(() => { if (document.querySelector('.msg-assistant .md')) window.__renders++; })
            .observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true});
    }""")
    send(page, "/slow 1")
    expect(page.locator(".msg-user .msg-body")).to_have_text("/slow 1")
    page.wait_for_selector(".msg-assistant.is-streaming")
    page.wait_for_selector(IDLE)
    reply = last_reply(page).locator(".md")
    expect(reply).to_contain_text("offline demo")
    assert page.evaluate("window.__renders") >= 3
    # The new session is in the sidebar, current, and has its own URL.
    (run,) = wait_until(lambda: runs_of("alice"), message="the run to be recorded")
    assert run.status == RunStatus.COMPLETED and run.component_id == "assistant"
    expect(page.locator(f'.session[data-session-id="{run.session_id}"]')).to_have_class(re.compile("is-current"))
    expect(page).to_have_url(re.compile(f"/chat/s/{run.session_id}/$"))
    expect(page.locator("#model-badge")).to_have_text("Offline demo model")
    assert page.errors == []


def test_markdown_is_rendered_and_sanitised(browsing, make_user):
    make_user("alice")
    session = make_session("alice", component_id="assistant", session_name="Markdown")
    content = (
        "Some **bold** text.\n\n```python\nprint('hi')\n```\n\n"
        "<img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=2</script> [click](javascript:window.__pwned=3)"
    )
    make_run("alice", session=session, status=RunStatus.COMPLETED, component_id="assistant",
             input={"input_content": "<b>typed</b>"}, run_data={"content": content})
    page = browsing.chat_as("alice")
    page.goto(f"/chat/s/{session.session_id}/")
    reply = last_reply(page)
    expect(reply.locator(".md strong")).to_have_text("bold")
    expect(reply.locator(".md pre code")).to_have_text("print('hi')\n")
    expect(reply.locator(".md pre .copy-code")).to_be_visible()
    assert page.evaluate("document.querySelectorAll('#messages [onerror], #messages script').length") == 0
    assert page.evaluate("[...document.querySelectorAll('#messages a')].every(a => !/^javascript:/i.test(a.getAttribute('href') || ''))")
    assert page.evaluate("window.__pwned") is None
    # What the user typed is shown as typed, never as HTML.
    expect(page.locator(".msg-user .msg-body")).to_have_text("<b>typed</b>")


def test_tool_calls_are_shown_inline_with_arguments_and_results(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_agent(page, "assistant")
    send(page, '/call add {"a": 2, "b": 40}')
    page.wait_for_selector(IDLE)
    card = last_reply(page).locator("details.tool")
    expect(card).to_have_attribute("data-state", "done")
    expect(card.locator("summary")).to_contain_text("add")
    card.locator("summary").click()
    expect(card.locator(".tool-args")).to_contain_text('"a": 2')
    expect(card.locator(".tool-result")).to_contain_text("42")


def test_the_last_reply_can_be_regenerated_and_replaces_the_old_one(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_agent(page, "assistant")
    send(page, "first question")
    page.wait_for_selector(IDLE)
    send(page, "second question")
    page.wait_for_selector(IDLE)
    replies = page.locator(".msg-assistant")
    expect(replies).to_have_count(2)
    # Only the last reply offers it.
    expect(page.get_by_role("button", name="Regenerate")).to_have_count(1)
    expect(replies.last.get_by_role("button", name="Regenerate")).to_be_visible()
    original = wait_until(lambda: [run for run in runs_of("alice") if run.status == RunStatus.COMPLETED][1:], message="both runs")[0]

    replies.last.get_by_role("button", name="Regenerate").click()
    page.wait_for_selector(IDLE)
    expect(replies).to_have_count(2)  # the new answer took the old one's place
    expect(replies.last.locator(".md")).to_contain_text("You said: second question")
    expect(replies.last.get_by_role("button", name="Regenerate")).to_be_visible()
    runs = wait_until(lambda: [run for run in runs_of("alice") if run.status == RunStatus.REGENERATED] and runs_of("alice"), message="the original to be replaced")
    (fresh,) = [run for run in runs if run.run_data.get("regenerated_from") == original.pk]
    assert fresh.status == RunStatus.COMPLETED and Run.objects.for_user("alice").get(pk=original.pk).status == RunStatus.REGENERATED

    # Coming back shows the conversation as it now stands.
    page.reload()
    expect(page.locator(".msg-assistant")).to_have_count(2)
    expect(page.locator(".msg-user .msg-body")).to_have_text(["first question", "second question"])
    expect(page.locator(".msg-assistant").last.get_by_role("button", name="Regenerate")).to_be_visible()
    assert page.errors == []


def test_a_tool_that_needs_confirmation_is_approved_and_runs(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_agent(page, "hitl-agent")
    send(page, '/call delete_file {"path": "notes/x.txt"}')
    panel = page.locator(".approval")
    expect(panel).to_contain_text("delete_file")
    expect(panel.locator(".tool-args")).to_contain_text("notes/x.txt")
    wait_until(lambda: [run for run in runs_of("alice") if run.status == RunStatus.PAUSED], message="the paused run")
    panel.get_by_role("button", name="Approve").click()
    expect(panel).to_contain_text("You approved this.")
    page.wait_for_selector(IDLE)
    card = last_reply(page).locator("details.tool")
    expect(card).to_have_attribute("data-state", "done")
    card.locator("summary").click()
    expect(card.locator(".tool-result")).to_contain_text("deleted notes/x.txt")
    (run,) = runs_of("alice")
    wait_until(lambda: Run.objects.for_user("alice").get(pk=run.pk).status == RunStatus.COMPLETED, message="the run to complete")


def test_a_rejected_tool_does_not_run(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_agent(page, "hitl-agent")
    send(page, '/call delete_file {"path": "precious.txt"}')
    panel = page.locator(".approval")
    panel.get_by_label("Note (optional)").fill("keep it")
    panel.get_by_role("button", name="Reject").click()
    page.wait_for_selector(IDLE)
    expect(panel).to_contain_text("You rejected this.")
    expect(last_reply(page).locator("details.tool")).to_have_attribute("data-state", "rejected")
    expect(last_reply(page).locator(".md").last).to_contain_text("rejected")
    (run,) = runs_of("alice")
    stored = wait_until(lambda: Run.objects.for_user("alice").filter(pk=run.pk, status=RunStatus.COMPLETED).first(), message="completion")
    assert [tool["confirmed"] for tool in stored.run_data["tools"]] == [False]


def test_a_tool_that_asks_for_input_continues_with_it(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_agent(page, "hitl-agent")
    send(page, '/call wire_money {"to": "bob"}')
    panel = page.locator(".approval")
    panel.get_by_role("button", name="Submit").click()  # empty: refused in the page
    expect(panel.get_by_label("amount")).to_have_attribute("aria-invalid", "true")
    panel.get_by_label("amount").fill("50")
    panel.get_by_role("button", name="Submit").click()
    page.wait_for_selector(IDLE)
    card = last_reply(page).locator("details.tool")
    card.locator("summary").click()
    expect(card.locator(".tool-result")).to_contain_text("wired 50 to bob")


def test_a_paused_run_can_be_approved_after_coming_back(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_agent(page, "hitl-agent")
    send(page, '/call delete_file {"path": "later.txt"}')
    page.wait_for_selector(".approval")
    page.wait_for_selector(IDLE)
    (run,) = wait_until(lambda: runs_of("alice"), message="the paused run")
    page.goto(f"/chat/s/{run.session_id}/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator(".msg-user .msg-body")).to_have_text('/call delete_file {"path": "later.txt"}')
    page.locator(".approval").get_by_role("button", name="Approve").click()
    page.wait_for_selector(IDLE)
    expect(last_reply(page).locator("details.tool")).to_have_attribute("data-state", "done")
    wait_until(lambda: Run.objects.for_user("alice").filter(pk=run.pk, status=RunStatus.COMPLETED).exists(), message="completion")


def test_stop_cancels_a_slow_run_in_an_existing_session(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    send(page, "hello")
    page.wait_for_selector(IDLE)
    expect(page).to_have_url(re.compile("/chat/s/"))
    send(page, "/slow 5")
    page.wait_for_selector(".msg-assistant.is-streaming .md")  # some text arrived
    page.click("#stop")
    page.wait_for_selector(IDLE)
    expect(last_reply(page).locator(".msg-note-stopped")).to_be_visible()
    slow = wait_until(lambda: [run for run in runs_of("alice") if run.input.get("input_content") == "/slow 5"], message="the stopped run")
    assert slow[0].status == RunStatus.CANCELLED
    # Sending again works after a stop.
    send(page, "still there?")
    page.wait_for_selector(IDLE)
    expect(last_reply(page).locator(".md")).to_contain_text("still there?")


def test_stop_cancels_the_first_run_of_a_new_session(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    send(page, "/slow 5")
    page.wait_for_selector(".msg-assistant.is-streaming .md")
    page.keyboard.press("Escape")
    page.wait_for_selector(IDLE)
    expect(last_reply(page).locator(".msg-note-stopped")).to_be_visible()
    (run,) = wait_until(lambda: runs_of("alice"), message="the cancelled run to be recorded")
    assert run.status == RunStatus.CANCELLED


def test_a_failing_run_is_explained_in_words(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    send(page, "/fail")
    page.wait_for_selector(IDLE)
    error = last_reply(page).locator(".msg-error")
    expect(error).to_contain_text("Something went wrong.")
    (run,) = wait_until(lambda: runs_of("alice"), message="the failed run")
    assert run.status == RunStatus.ERROR
    expect(error).to_contain_text(run.content)


def test_a_run_still_running_on_load_is_followed_to_its_end(browsing, make_user):
    """Reload during a run executing elsewhere: the page replays its events, then follows it."""
    make_user("alice")
    session = make_session("alice", session_id="sess-bg", component_id="assistant", session_name="Background work")
    run = make_run("alice", session=session, status=RunStatus.RUNNING, component_id="assistant", input={"input_content": "long task"})
    from sessions.services import run_events_append
    from sessions.services.runs import run_transition

    base = {"agent_id": "assistant", "agent_name": "Assistant", "run_id": run.run_id, "session_id": session.session_id}
    run_events_append(run=run, events=[{**base, "event": "RunStarted"}, {**base, "event": "RunContent", "content": "Halfway "}])
    page = browsing.chat_as("alice")
    page.goto(f"/chat/s/{session.session_id}/")
    reply = last_reply(page)
    expect(reply.locator(".md")).to_have_text("Halfway")
    expect(reply).to_have_class(re.compile("is-streaming"))
    # The run goes on in its worker, which appends events and then finishes the run.
    run_events_append(run=run, events=[{**base, "event": "RunContent", "content": "and done."}, {**base, "event": "RunCompleted", "content": "Halfway and done."}], first_index=2)
    run_transition(run_id=run.run_id, expected=RunStatus.RUNNING, to=RunStatus.COMPLETED, content="Halfway and done.")
    page.wait_for_selector(IDLE)
    expect(reply.locator(".md")).to_have_text("Halfway and done.")
    expect(reply).not_to_have_class(re.compile("is-streaming"))


def test_reloading_during_a_background_run_picks_it_up_and_sees_it_finish(browsing, make_user):
    """The chat starts durable background runs: a reload mid-reply neither stops nor loses it."""
    make_user("alice")
    page = browsing.chat_as("alice")
    send(page, "/slow 3")
    page.wait_for_selector(".msg-assistant.is-streaming .md")  # the reply has started
    expect(page).to_have_url(re.compile("/chat/s/"))  # the session is addressable from the start
    page.reload()
    reply = last_reply(page)
    expect(reply).to_have_class(re.compile("is-streaming"))  # followed again after the reload
    page.wait_for_selector(IDLE, timeout=20000)
    expect(reply.locator(".md")).to_contain_text("offline demo")
    (run,) = wait_until(lambda: runs_of("alice"), message="the run")
    assert run.status == RunStatus.COMPLETED
    assert page.errors == []


def test_sessions_can_be_renamed_searched_and_deleted(browsing, make_user):
    make_user("alice")
    for name in ("Trip to Lisbon", "Tax questions"):
        make_run("alice", session=make_session("alice", component_id="assistant", session_name=name), status=RunStatus.COMPLETED, component_id="assistant")
    page = browsing.chat_as("alice")
    items = page.locator("#session-list .session")
    expect(items).to_have_count(2)
    page.fill("#session-search", "lisbon")
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("Trip to Lisbon")
    page.fill("#session-search", "")
    expect(items).to_have_count(2)

    page.get_by_role("button", name="Rename “Tax questions”").click()
    page.fill("#rename-input", "Taxes 2025")
    page.locator("#rename-dialog").get_by_role("button", name="Save").click()
    expect(page.locator("#session-list")).to_contain_text("Taxes 2025")
    wait_until(lambda: Session.objects.for_user("alice").filter(session_name="Taxes 2025").exists(), message="the rename")
    # Enter in the name field saves, as in every dialog people know (issue 34, item 7) ...
    page.get_by_role("button", name="Rename “Taxes 2025”").click()
    page.fill("#rename-input", "Taxes 2026")
    page.press("#rename-input", "Enter")
    expect(page.locator("#rename-dialog")).not_to_be_visible()
    expect(page.locator("#session-list")).to_contain_text("Taxes 2026")
    wait_until(lambda: Session.objects.for_user("alice").filter(session_name="Taxes 2026").exists(), message="the rename with Enter")
    # ... and Cancel still discards.
    page.get_by_role("button", name="Rename “Taxes 2026”").click()
    page.fill("#rename-input", "Not this")
    page.locator("#rename-dialog").get_by_role("button", name="Cancel").click()
    expect(page.locator("#rename-dialog")).not_to_be_visible()
    expect(page.locator("#session-list")).not_to_contain_text("Not this")

    page.get_by_role("button", name="Delete “Taxes 2026”").click()
    expect(page.locator("#delete-dialog")).to_contain_text("can't be undone")
    page.locator("#delete-dialog").get_by_role("button", name="Cancel").click()
    expect(items).to_have_count(2)
    page.get_by_role("button", name="Delete “Taxes 2026”").click()
    page.locator("#delete-dialog").get_by_role("button", name="Delete").click()
    expect(items).to_have_count(1)
    wait_until(lambda: not Session.objects.for_user("alice").filter(session_name="Taxes 2026").exists(), message="the delete")


def test_another_user_cannot_see_or_open_my_sessions(browsing, make_user):
    make_user("alice")
    make_user("bob")
    secret = make_session("alice", component_id="assistant", session_name="Alice's secret plans")
    make_run("alice", session=secret, status=RunStatus.COMPLETED, component_id="assistant", input={"input_content": "the plan"})

    alice = browsing.chat_as("alice")
    expect(alice.locator("#session-list")).to_contain_text("Alice's secret plans")

    bob = browsing.chat_as("bob")
    expect(bob.locator("#sessions-empty")).to_be_visible()
    expect(bob.locator("#session-list")).not_to_contain_text("secret")
    # Direct URL: the page says it is not there, and shows nothing of it.
    response = bob.goto(f"/chat/s/{secret.session_id}/")
    assert response.status == 404
    bob.wait_for_selector("body[data-ready=true]")
    expect(bob.locator("#notice")).to_contain_text("doesn't exist, or it isn't yours")
    expect(bob.locator("#messages")).not_to_contain_text("the plan")
    # Direct API calls with bob's browser session: 404, as for a missing session.
    for path in (f"/sessions/{secret.session_id}", f"/sessions/{secret.session_id}/runs", f"/sessions/{secret.session_id}/runs?user_id=alice"):
        assert bob.request.get(path).status == 404, path
    listing = bob.request.get("/sessions?user_id=alice").json()
    assert listing["data"] == []


def test_the_chat_works_on_a_phone_sized_screen(browsing, make_user, screenshots_dir):
    make_user("alice")
    page = browsing.chat_as("alice", viewport=(390, 844), mobile=True)
    expect(page.locator("#sidebar")).not_to_be_visible()
    send(page, "Hello from my phone")
    page.wait_for_selector(IDLE)
    expect(last_reply(page).locator(".md")).to_contain_text("Hello from my phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.get_by_role("button", name="Conversations").click()
    expect(page.locator("#sidebar")).to_be_visible()
    expect(page.locator("#sidebar-toggle")).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#session-list .session")).to_have_count(1)
    page.screenshot(path=str(screenshots_dir / "chat-phone.png"))
    page.keyboard.press("Escape")
    expect(page.locator("#sidebar")).not_to_be_visible()


def test_logout(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    page.click("#logout")
    expect(page).to_have_url(re.compile("/chat/login/$"))
    page.goto("/chat/")
    expect(page).to_have_url(re.compile("/chat/login/"))
