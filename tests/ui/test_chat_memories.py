"""My memories (/chat/memories/) in Chromium: see, correct and delete what the agents remember."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from sessions.models import UserMemory
from tests.factories import make_memory

from .conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def memories_of(user_id: str) -> list[str]:
    return sorted(UserMemory.objects.for_user(user_id).values_list("memory", flat=True))


def test_memories_are_listed_edited_and_deleted_and_never_another_users(browsing, make_user):
    make_user("alice")
    make_user("bob")
    make_memory("alice", memory="User's name is Alice", topics=["name"])
    make_memory("alice", memory="User likes green tea", topics=["preferences"])
    make_memory("bob", memory="Bob's secret: plays the tuba", topics=["secrets"])

    page = browsing.chat_as("alice")
    page.get_by_role("link", name="My memories").click()
    expect(page).to_have_url(re.compile("/chat/memories/$"))
    page.wait_for_selector("body[data-ready=true]")
    items = page.locator(".memory .memory-text")
    expect(items).to_have_count(2)
    expect(page.locator("#memories-list")).not_to_contain_text("tuba")
    expect(page.locator("#memories-count")).to_have_text("2 memories")
    expect(page.locator(".memory", has_text="green tea").locator(".memory-topics")).to_have_text("preferences")

    # Correct one.
    page.get_by_role("button", name="Edit “User likes green tea”").click()
    editor = page.get_by_label("Memory", exact=True)
    editor.fill("User likes jasmine tea")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".memory", has_text="jasmine tea")).to_be_visible()
    assert wait_until(lambda: memories_of("alice") == ["User likes jasmine tea", "User's name is Alice"], message="the edit")

    # An empty memory is refused in the page; nothing is sent.
    page.get_by_role("button", name="Edit “User likes jasmine tea”").click()
    page.get_by_label("Memory", exact=True).fill("   ")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("alert")).to_contain_text("can't be empty")
    page.get_by_role("button", name="Cancel").click()

    # Forget one, after a confirmation.
    page.get_by_role("button", name="Delete “User's name is Alice”").click()
    page.locator("#memory-delete-dialog").get_by_role("button", name="Delete").click()
    expect(items).to_have_count(1)
    expect(page.locator("#memories-count")).to_have_text("1 memory")
    assert wait_until(lambda: memories_of("alice") == ["User likes jasmine tea"], message="the deletion")
    assert memories_of("bob") == ["Bob's secret: plays the tuba"]

    # Search, then a reload shows what is stored.
    page.fill("#memories-search", "coffee")
    expect(page.locator("#memories-empty")).to_have_text("No memory matches your search.")
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    expect(items).to_have_text(["User likes jasmine tea"])
    assert page.errors == []


def test_a_user_without_memories_is_told_how_they_appear(browsing, make_user):
    make_user("carol")
    make_memory("alice", memory="not carol's")
    page = browsing.chat_as("carol")
    page.goto("/chat/memories/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#memories-empty")).to_contain_text("remember nothing about you yet")
    expect(page.locator(".memory")).to_have_count(0)


def test_the_page_needs_a_login(browsing):
    page = browsing.page()
    page.goto("/chat/memories/")
    expect(page).to_have_url(re.compile(r"/chat/login/\?next=/chat/memories/"))


def test_screenshot_memories(browsing, make_user, screenshots_dir):
    make_user("ada")
    for text, topics in (
        ("User's name is Ada", ["name"]),
        ("User likes green tea, no sugar", ["preferences", "drinks"]),
        ("User is learning Portuguese for a trip to Lisbon in May", ["travel", "languages"]),
        ("User prefers short answers with code examples", ["preferences"]),
    ):
        make_memory("ada", memory=text, topics=topics)
    page = browsing.chat_as("ada", viewport=(1100, 760))
    page.goto("/chat/memories/")
    page.wait_for_selector("body[data-ready=true]")
    page.get_by_role("button", name="Edit “User likes green tea, no sugar”").click()
    page.get_by_label("Memory", exact=True).fill("User likes jasmine tea, no sugar")
    page.screenshot(path=str(screenshots_dir / "chat-memories.png"))
    assert (screenshots_dir / "chat-memories.png").stat().st_size > 10_000
