"""My documents (/chat/documents/) and the composer's attachments in Chromium: add files, a note
and a web page, watch them read by the live server's embedded worker (Processing, then Ready or
Failed with the reason), refresh, delete, search, attach in the chat, on a phone and in dark mode."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout, expect

from knowledge.models import Chunk, Content
from tests.agents import conftest as agents_fixtures

from .conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

worker = agents_fixtures.worker  # the embedded worker of this process: it runs the ingestions

TEA = "Green tea is steeped at eighty degrees for two minutes; black tea takes boiling water and four minutes."
BIKES = "# Bicycle care\n\nA bicycle chain should be cleaned and oiled every few hundred kilometres, more often after rain."
IDLE = "body:not(.is-running)"

# Every status text a row or a chip shows, in order: "Processing…" may last less than a poll.
RECORD_STATUSES = """() => {
    window.__statuses = [];
    const seen = (node) => node.matches?.('.document-status, .attachment-status') && window.__statuses.push(
        (node.closest('[data-content-id]')?.querySelector('.document-name')?.textContent
         || node.closest('.attachment')?.querySelector('.attachment-name')?.textContent) + ': ' + node.textContent);
    new MutationObserver((changes) => changes.forEach((change) => {
        change.addedNodes.forEach((node) => { if (node.nodeType === 1) { seen(node); node.querySelectorAll('.document-status, .attachment-status').forEach(seen); } });
        if (change.type === 'characterData' || change.type === 'childList') { const target = change.target.nodeType === 1 ? change.target : change.target.parentElement; if (target) seen(target); }
    })).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


@pytest.fixture
def ingesting(worker, settings):
    """Ingestion jobs run in the live server's embedded worker, woken when a content is added."""
    settings.EMBEDDED_WORKER = True
    settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY = 20
    settings.AGENTOS_BACKGROUND_MAX_PER_USER = 20
    return worker


def contents_of(user_id: str) -> list[Content]:
    return list(Content.objects.for_user(user_id).order_by("created_at"))


def open_documents(browsing, username: str, **kwargs):
    page = browsing.chat_as(username, **kwargs)
    page.goto("/chat/documents/")
    page.wait_for_selector("body[data-ready=true]")
    page.evaluate(RECORD_STATUSES)
    return page


def row(page, name: str):
    return page.locator(".document", has=page.locator(".document-name", has_text=name))


def add_note(page, title: str, text: str) -> None:
    page.get_by_label("Note title (optional)").fill(title)
    page.get_by_label("Add a note").fill(text)
    page.get_by_role("button", name="Add note").click()


def test_files_and_a_note_are_read_then_ready_and_another_users_stay_unseen(browsing, make_user, ingesting, tmp_path):
    make_user("alice")
    make_user("bob")
    from django.conf import settings

    from knowledge.services import base_get_or_create, content_insert

    base = base_get_or_create(name=settings.KNOWLEDGE_DEFAULT_BASE)
    content_insert(user_id="bob", base_id=base.pk, source_type="text", text="Bob's secret: the tuba is in the attic.", name="bob's secret")

    page = browsing.chat_as("alice")
    page.get_by_role("link", name="My documents").click()
    expect(page).to_have_url(re.compile("/chat/documents/$"))
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#documents-empty")).to_be_visible()
    page.evaluate(RECORD_STATUSES)

    (tmp_path / "tea.txt").write_text(TEA)
    (tmp_path / "bikes.md").write_text(BIKES)
    page.locator("#documents-file").set_input_files([str(tmp_path / "tea.txt"), str(tmp_path / "bikes.md")])
    add_note(page, "Trains", "Sleeper trains to Vienna leave at nine in the evening and arrive at seven.")

    for name, kind in (("tea.txt", "Text"), ("bikes.md", "Markdown"), ("Trains", "Note")):
        item = row(page, name)
        expect(item.locator(".document-status")).to_have_text(re.compile(r"^Ready: \d+ passages?$"), timeout=60_000)
        expect(item.locator(".document-kind")).to_have_text(kind)
        expect(item.locator("time")).to_contain_text("Added")
    expect(row(page, "tea.txt").locator(".document-size")).to_have_text(f"{len(TEA)} bytes")
    statuses = page.evaluate("window.__statuses")
    for name in ("tea.txt", "bikes.md", "Trains"):
        mine = [text for text in statuses if text.startswith(f"{name}: ")]
        assert mine[0] == f"{name}: Processing…" and mine[-1].startswith(f"{name}: Ready"), statuses
    expect(page.locator("#documents-count")).to_have_text("3 documents")
    expect(page.locator("#documents-list")).not_to_contain_text("secret")
    # The live region said when each was ready, for those who cannot see the row change.
    expect(page.locator("#documents-live")).to_contain_text("Ready")

    stored = {content.name: content for content in contents_of("alice")}
    assert set(stored) == {"tea.txt", "bikes.md", "Trains"}
    assert all(content.status == "completed" and content.chunk_count >= 1 for content in stored.values())
    assert stored["Trains"].source_type == "text" and stored["bikes.md"].file_name == "bikes.md"
    expect(row(page, "Trains").locator(".document-status")).to_have_text(
        f"Ready: {stored['Trains'].chunk_count} passage" + ("s" if stored["Trains"].chunk_count != 1 else ""))

    # A reload lists what is stored, newest first.
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    # (Uploads sent at once are stored in whatever order they arrive: newest first by the stored time.)
    by_id = sorted(stored.values(), key=lambda content: content.pk)  # ties by id, as the list breaks them
    newest_first = [content.name for content in sorted(by_id, key=lambda content: content.created_at, reverse=True)]
    expect(page.locator(".document-name")).to_have_text(newest_first)

    # Search finds the passage and names its document; bob's passage is never one.
    page.get_by_label("Search your documents").fill("how hot should the water be for green tea?")
    page.get_by_role("button", name="Search", exact=True).click()
    first = page.locator(".passage").first
    expect(first.locator(".passage-name")).to_have_text("tea.txt")
    expect(first.locator(".passage-text")).to_contain_text("Green tea is steeped at eighty degrees")
    expect(page.locator("#documents-search-status")).to_have_text(re.compile(r"^\d+ passages? found\.$"))
    page.get_by_label("Search your documents").fill("tuba attic secret")
    page.get_by_label("Search your documents").press("Enter")
    expect(page.locator("#documents-results")).not_to_contain_text("tuba")
    assert page.errors == []


def test_a_broken_pdf_fails_with_its_reason_and_can_be_refreshed_then_deleted(browsing, make_user, ingesting, tmp_path):
    make_user("alice")
    page = open_documents(browsing, "alice")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    page.locator("#documents-file").set_input_files(str(tmp_path / "broken.pdf"))
    status = row(page, "broken.pdf").locator(".document-status")
    expect(status).to_have_text(re.compile(r"^Failed: .+[.?!]$"), timeout=60_000)
    (content,) = contents_of("alice")
    assert content.status == "failed" and content.status_message
    expect(status).to_contain_text(content.status_message.rstrip("."))
    expect(row(page, "broken.pdf").locator(".document-kind")).to_have_text("PDF")
    first_update = content.updated_at

    # Refresh reads it again: Processing…, then Failed again (the bytes are still not a PDF).
    page.evaluate("window.__statuses = []")
    row(page, "broken.pdf").get_by_role("button", name="Refresh “broken.pdf”").click()
    # (The row shows Failed before the click too: wait for the texts it went through since.)
    page.wait_for_function("() => window.__statuses.length > 1 && window.__statuses.at(-1).startsWith('broken.pdf: Failed')", timeout=60_000)
    expect(status).to_have_text(re.compile(r"^Failed: "))
    wait_until(lambda: Content.objects.for_user("alice").get(pk=content.pk).updated_at > first_update, message="the refresh")
    statuses = page.evaluate("window.__statuses")
    assert statuses[0] == "broken.pdf: Processing…" and statuses[-1].startswith("broken.pdf: Failed"), statuses

    # Delete asks first; Cancel keeps it, Delete removes it and its passages.
    item = row(page, "broken.pdf")
    item.get_by_role("button", name="Delete “broken.pdf”").click()
    dialog = page.locator("#document-delete-dialog")
    expect(dialog).to_contain_text("broken.pdf")
    dialog.get_by_role("button", name="Cancel").click()
    expect(item).to_have_count(1)
    expect(item.get_by_role("button", name="Delete “broken.pdf”")).to_be_focused()
    item.get_by_role("button", name="Delete “broken.pdf”").click()
    dialog.get_by_role("button", name="Delete").click()
    expect(item).to_have_count(0)
    expect(page.locator("#documents-empty")).to_be_visible()
    expect(page.locator("#documents-count")).to_have_text("0 documents")
    assert wait_until(lambda: not Content.objects.for_user("alice").exists(), message="the deletion")
    assert not Chunk.all_users.filter(content_id=content.pk).exists()
    assert page.errors == []


def test_refusals_are_sentences_too_large_an_unreachable_page_and_an_empty_note(browsing, make_user, ingesting, tmp_path, settings):
    settings.UPLOAD_MAX_FILE_BYTES = 2048
    make_user("alice")
    page = open_documents(browsing, "alice")
    expect(page.locator("#documents-max")).to_have_text("2 KB")
    (tmp_path / "big.txt").write_text("x" * 5000)
    page.locator("#documents-file").set_input_files(str(tmp_path / "big.txt"))
    refusal = page.locator(".upload.is-failed")
    expect(refusal).to_have_text(re.compile("“big.txt” is too large to add: a document can be at most 2 KB."))
    expect(refusal).to_have_attribute("role", "alert")
    refusal.get_by_role("button", name="Dismiss the message about “big.txt”").click()
    expect(refusal).to_have_count(0)
    assert contents_of("alice") == []

    # Not an address: said in the form, nothing sent.
    page.get_by_label("Add a web page").fill("not a url")
    page.get_by_role("button", name="Add page").click()
    expect(page.locator("#documents-url-error")).to_have_text("Enter the page's full address, starting with http:// or https://.")
    expect(page.get_by_label("Add a web page")).to_have_attribute("aria-invalid", "true")
    # A page on this machine is refused by the URL guard: accepted, then failed with why.
    page.get_by_label("Add a web page").fill("http://127.0.0.1:9/private")
    page.get_by_role("button", name="Add page").click()
    expect(page.locator("#documents-url-error")).to_be_hidden()
    expect(row(page, "http://127.0.0.1:9/private").locator(".document-status")).to_have_text(re.compile(r"^Failed: .+"), timeout=60_000)
    expect(row(page, "http://127.0.0.1:9/private").locator(".document-kind")).to_have_text("Web page")

    page.get_by_role("button", name="Add note").click()
    expect(page.locator("#documents-text-error")).to_have_text("Write the note's text first.")
    assert [content.source_type for content in contents_of("alice")] == ["url"]
    assert page.errors == []


def test_files_dropped_on_the_zone_are_added_and_the_picker_opens_from_the_keyboard(browsing, make_user, ingesting, tmp_path):
    make_user("alice")
    page = open_documents(browsing, "alice")
    zone = page.locator("#documents-drop")
    page.evaluate("""() => {
        window.__drop = new DataTransfer();
        window.__drop.items.add(new File(["Dropped notes: the ferry to the island leaves at ten."], "dropped.txt", {type: "text/plain"}));
        window.__drop.items.add(new File(["# Second\\n\\nA second dropped file."], "second.md", {type: "text/markdown"}));
    }""")
    zone.dispatch_event("dragenter", {"dataTransfer": page.evaluate_handle("window.__drop")})
    expect(zone).to_have_class(re.compile("is-over"))
    zone.dispatch_event("drop", {"dataTransfer": page.evaluate_handle("window.__drop")})
    expect(zone).not_to_have_class(re.compile("is-over"))
    for name in ("dropped.txt", "second.md"):
        expect(row(page, name).locator(".document-status")).to_have_text(re.compile(r"^Ready: "), timeout=60_000)
    assert sorted(content.name for content in contents_of("alice")) == ["dropped.txt", "second.md"]
    # The picker is a button: Tab to it and press Enter (or Space) to choose files. (Focused only
    # once the list has settled: a last status poll redrawing it may move the focus, on a loaded machine.)
    pick = page.locator("#documents-pick")
    page.wait_for_function("() => !document.querySelector('#documents-list')?.textContent.includes('Processing')")
    for _ in range(3):
        pick.focus()
        if page.evaluate("() => document.activeElement?.id") == "documents-pick":
            break
        page.wait_for_timeout(200)
    expect(pick).to_be_focused()
    # On a loaded machine Chromium has let a keypress's file dialog go unopened (no "filechooser"
    # event in 30 s, the focus checked); a second press opens it.
    chosen = None
    for _ in range(3):
        try:
            with page.expect_file_chooser(timeout=10_000) as chooser:
                page.keyboard.press("Enter")
            chosen = chooser.value
            break
        except PlaywrightTimeout:
            expect(pick).to_be_focused()
    assert chosen is not None, "Enter on the focused picker never opened a file chooser"
    assert chosen.is_multiple()
    assert page.errors == []


def test_show_more_pages_through_the_list(browsing, make_user, ingesting):
    make_user("alice")
    from django.conf import settings

    from knowledge.services import base_get_or_create, content_insert

    base = base_get_or_create(name=settings.KNOWLEDGE_DEFAULT_BASE)
    oldest = [content_insert(user_id="alice", base_id=base.pk, source_type="text", text=f"{TEA} Note number {n}.", name=f"note {n:02d}").content
              for n in range(23)][0]
    theirs = content_insert(user_id="bob", base_id=base.pk, source_type="text", text="Bob's own note.", name="bob's").content
    page = open_documents(browsing, "alice")
    expect(page.locator(".document")).to_have_count(20)
    expect(page.locator("#documents-count")).to_have_text("23 documents")
    page.get_by_role("button", name="Show more").click()
    expect(page.locator(".document")).to_have_count(23)
    expect(page.get_by_role("button", name="Show more")).to_be_hidden()
    expect(page.locator(".document-name").last).to_have_text("note 00")

    # A link to one document (an answer's source) shows it, even past the first page.
    page.goto(f"/chat/documents/#document-{oldest.pk}")
    page.wait_for_selector("body[data-ready=true]")
    linked = page.locator(f"#document-{oldest.pk}")
    expect(linked).to_have_class(re.compile("is-linked"))
    expect(linked).to_be_in_viewport()
    expect(linked.locator(".document-name")).to_have_text("note 00")
    # Another user's document is not shown, and not told apart from a missing one.
    page.goto(f"/chat/documents/#document-{theirs.pk}")
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#documents-notice")).to_have_text(re.compile("That document doesn't exist any more, or it isn't yours."))
    expect(page.locator("#documents-list")).not_to_contain_text("bob's")


def test_files_attached_in_the_composer_go_to_my_documents_and_the_message_names_them(browsing, make_user, ingesting, tmp_path, settings):
    settings.UPLOAD_MAX_FILE_BYTES = 4096
    make_user("alice")
    page = browsing.chat_as("alice")
    page.evaluate(RECORD_STATUSES)
    (tmp_path / "tea.txt").write_text(TEA)
    attach = page.get_by_role("button", name="Attach files")
    expect(attach).to_be_visible()
    with page.expect_file_chooser() as chooser:
        attach.click()
    chooser.value.set_files(str(tmp_path / "tea.txt"))
    chip = page.locator("#composer-attachments .attachment", has_text="tea.txt")
    expect(chip.locator(".attachment-status")).to_have_text(re.compile(r"^Ready: \d+ passages?$"), timeout=60_000)
    assert page.evaluate("window.__statuses")[0] == "tea.txt: Adding…"
    assert "tea.txt: Processing…" in page.evaluate("window.__statuses")
    (content,) = contents_of("alice")
    assert content.metadata in (None, {})  # a new conversation: no session yet

    page.fill("#composer-input", "What does my file say about green tea?")
    page.press("#composer-input", "Enter")
    expect(page.locator(".msg-user .msg-body").last).to_contain_text("Attached from My documents: “tea.txt”")
    page.wait_for_selector(IDLE)
    expect(page.locator("#composer-attachments")).to_be_hidden()
    session_id = wait_until(lambda: (Content.objects.for_user("alice").get(pk=content.pk).metadata or {}).get("session_id"), message="the tag")
    expect(page).to_have_url(re.compile(f"/chat/s/{session_id}/$"))
    assert Chunk.objects.for_user("alice").filter(content_id=content.pk).exists()

    # In an open conversation the upload carries its session from the start; a chip can be removed.
    (tmp_path / "bikes.md").write_text(BIKES)
    (tmp_path / "spare.txt").write_text("A spare note that stays out of the message.")
    (tmp_path / "huge.txt").write_text("x" * 5000)
    page.locator("#attach-input").set_input_files([str(tmp_path / "bikes.md"), str(tmp_path / "spare.txt"), str(tmp_path / "huge.txt")])
    expect(page.locator("#composer-attachments .attachment")).to_have_count(3)
    refused = page.locator("#composer-attachments .attachment", has_text="huge.txt")
    expect(refused.locator(".attachment-status")).to_have_text("It is too large to add: a document can be at most 4 KB.")
    expect(refused).to_have_class(re.compile("is-failed"))
    page.get_by_role("button", name="Remove “spare.txt” from this message").click()
    expect(page.locator("#composer-attachments .attachment")).to_have_count(2)
    bikes = wait_until(lambda: Content.objects.for_user("alice").filter(name="bikes.md").first(), message="the upload")
    assert not Content.objects.for_user("alice").filter(name="huge.txt").exists()
    assert bikes.metadata == {"session_id": session_id}
    page.fill("#composer-input", "And this one?")
    page.press("#composer-input", "Enter")
    expect(page.locator(".msg-user .msg-body").last).to_have_text(re.compile("And this one\\?\\s+Attached from My documents: “bikes.md”$"))
    page.wait_for_selector(IDLE)

    # My documents shows both, each with a link back to its conversation.
    page.get_by_role("link", name="My documents").click()
    page.wait_for_selector("body[data-ready=true]")
    expect(row(page, "bikes.md").get_by_role("link", name="From a conversation")).to_have_attribute("href", f"/chat/s/{session_id}/")
    expect(row(page, "tea.txt").get_by_role("link", name="From a conversation")).to_be_visible()
    assert page.errors == []


def test_a_file_that_could_not_be_read_is_not_named_in_the_message(browsing, make_user, ingesting, tmp_path):
    make_user("alice")
    page = browsing.chat_as("alice")
    (tmp_path / "tea.txt").write_text(TEA)
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    page.locator("#attach-input").set_input_files([str(tmp_path / "tea.txt"), str(tmp_path / "broken.pdf")])
    broken = page.locator("#composer-attachments .attachment", has_text="broken.pdf")
    expect(broken.locator(".attachment-status")).to_have_text(re.compile(r"^Failed: "), timeout=60_000)
    expect(page.locator("#composer-attachments .attachment.is-ready")).to_have_count(1, timeout=60_000)
    page.fill("#composer-input", "What do my files say?")
    page.press("#composer-input", "Enter")
    expect(page.locator(".msg-user .msg-body").last).to_have_text(re.compile("What do my files say\\?\\s+Attached from My documents: “tea.txt”$"))
    page.wait_for_selector(IDLE)
    assert page.errors == []


def test_my_documents_on_a_phone_in_dark_mode(browsing, make_user, ingesting, tmp_path):
    make_user("alice")
    page = browsing.chat_as("alice", viewport=(390, 844), mobile=True)
    page.emulate_media(color_scheme="dark")
    page.goto("/chat/documents/")
    page.wait_for_selector("body[data-ready=true]")
    add_note(page, "Phone note", TEA)
    status = row(page, "Phone note").locator(".document-status")
    expect(status).to_have_text(re.compile(r"^Ready: "), timeout=60_000)
    # Nothing wider than the screen; the buttons are big enough to tap; the page is dark.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    for name in ("Choose files…", "Add page", "Add note", "Search"):
        box = page.get_by_role("button", name=name, exact=True).bounding_box()
        assert box and box["height"] >= 32 and box["x"] >= 0 and box["x"] + box["width"] <= 390, (name, box)
    delete = row(page, "Phone note").get_by_role("button", name="Delete “Phone note”").bounding_box()
    assert delete["x"] + delete["width"] <= 390
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(16, 19, 24)", background
    # Keyboard: Tab reaches the file picker, and the dialog's Cancel closes it with focus back.
    row(page, "Phone note").get_by_role("button", name="Delete “Phone note”").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#document-delete-dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#document-delete-dialog")).to_be_hidden()
    expect(row(page, "Phone note")).to_have_count(1)
    # The chat's composer keeps its paperclip on the phone too.
    page.goto("/chat/")
    page.wait_for_selector("body[data-ready=true]")
    clip = page.get_by_role("button", name="Attach files").bounding_box()
    send_box = page.locator("#send").bounding_box()
    assert clip and send_box and clip["x"] >= 0 and send_box["x"] + send_box["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # The drawer's foot holds the link beside My memories, inside the drawer.
    page.get_by_role("button", name="Conversations").click()
    drawer = page.locator("#sidebar").bounding_box()
    for name in ("My memories", "My documents", "Log out"):
        box = page.locator("#sidebar").get_by_role("link" if name != "Log out" else "button", name=name).bounding_box()
        assert box and box["x"] >= drawer["x"] and box["x"] + box["width"] <= drawer["x"] + drawer["width"], (name, box, drawer)
    assert page.errors == []


def test_the_page_needs_a_login(browsing):
    page = browsing.page()
    page.goto("/chat/documents/")
    expect(page).to_have_url(re.compile(r"/chat/login/\?next=/chat/documents/"))


def test_screenshot_my_documents(browsing, make_user, ingesting, screenshots_dir, tmp_path):
    make_user("ada")
    page = open_documents(browsing, "ada", viewport=(1100, 900))
    (tmp_path / "Tea guide.md").write_text("# Tea\n\n" + TEA)
    (tmp_path / "scan.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    page.locator("#documents-file").set_input_files([str(tmp_path / "Tea guide.md"), str(tmp_path / "scan.pdf")])
    add_note(page, "Bicycle care", BIKES)
    for name in ("Tea guide.md", "scan.pdf", "Bicycle care"):
        expect(row(page, name).locator(".document-status")).not_to_have_text("Processing…", timeout=60_000)
    page.get_by_label("Search your documents").fill("how long should green tea steep?")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator(".passage").first).to_contain_text("Green tea")
    page.screenshot(path=str(screenshots_dir / "my-documents.png"), full_page=True)
    assert (screenshots_dir / "my-documents.png").stat().st_size > 10_000


def test_the_pages_work_under_the_content_security_policy(browsing, make_user, ingesting, live_api, tmp_path):
    from .conftest import PASSWORD
    from .test_csp_browser import watch

    make_user("alice")
    page = browsing.page()
    remote, violations = watch(page, live_api)
    page.goto("/chat/documents/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("body[data-ready=true]")
    add_note(page, "CSP note", TEA)
    expect(row(page, "CSP note").locator(".document-status")).to_have_text(re.compile(r"^Ready: "), timeout=60_000)
    page.get_by_label("Search your documents").fill("green tea")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator(".passage").first).to_be_visible()
    page.goto("/chat/")
    page.wait_for_selector("body[data-ready=true]")
    (tmp_path / "tea.txt").write_text(TEA)
    page.locator("#attach-input").set_input_files(str(tmp_path / "tea.txt"))
    expect(page.locator(".attachment.is-ready")).to_have_count(1, timeout=60_000)
    assert violations == [] and remote == []
    assert page.errors == []
