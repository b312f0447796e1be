"""My learnings (/chat/learnings/) in Chromium: see, correct and delete what agents with learning on
learned, beside My memories; never another user's; shared records are read-only."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from learnings.models import Learning
from tests.factories import make_learning

from .conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def memories_of(user_id: str) -> list[str]:
    row = Learning.objects.for_user(user_id).filter(pk=f"memories_{user_id}").first()
    return [entry["content"] for entry in row.content["memories"]] if row else []


def test_learnings_are_listed_edited_and_deleted_and_never_another_users(browsing, make_user):
    make_user("alice")
    make_user("bob")
    make_learning("alice", learning_id="memories_alice", learning_type="user_memory", agent_id="demo-learner", content={
        "user_id": "alice", "memories": [{"id": "m1", "content": "User's name is Alice"}, {"id": "m2", "content": "User likes green tea"}],
    })
    make_learning("alice", learning_id="user_profile_alice", learning_type="user_profile", content={"name": "Alice"})
    make_learning("bob", learning_id="memories_bob", learning_type="user_memory", content={"memories": [{"id": "b", "content": "Bob plays the tuba"}]})
    make_learning(None, learning_id="entity_global_company_acme", learning_type="entity_memory", namespace="global",
                  entity_id="acme", entity_type="company", content={"facts": ["Acme makes anvils"]})

    page = browsing.chat_as("alice")
    page.get_by_role("link", name="My learnings").click()
    expect(page).to_have_url(re.compile("/chat/learnings/$"))
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator(".learning")).to_have_count(3)
    expect(page.locator("#learnings-list")).not_to_contain_text("tuba")
    expect(page.locator("#learnings-count")).to_have_text("3 learnings")
    expect(page.locator(".learning", has_text="Acme makes anvils")).to_contain_text("Shared (no owner)")
    expect(page.locator(".learning", has_text="Acme makes anvils").get_by_role("button")).to_have_count(0)

    # Correct a learned memory, then forget the other.
    page.get_by_role("button", name="Edit “User likes green tea”").click()
    page.get_by_label("Learned memory", exact=True).fill("User likes jasmine tea")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".learned-memory", has_text="jasmine tea")).to_be_visible()
    assert wait_until(lambda: memories_of("alice") == ["User's name is Alice", "User likes jasmine tea"], message="the edit")
    page.get_by_role("button", name="Forget “User's name is Alice”").click()
    expect(page.locator(".learned-memory")).to_have_count(1)
    assert wait_until(lambda: memories_of("alice") == ["User likes jasmine tea"], message="the forget")

    # Delete the profile, after a confirmation.
    page.get_by_role("button", name="Delete Profile").click()
    page.locator("#learning-delete-dialog").get_by_role("button", name="Delete").click()
    expect(page.locator(".learning")).to_have_count(2)
    assert wait_until(lambda: not Learning.objects.for_user("alice").filter(pk="user_profile_alice").exists(), message="the deletion")
    assert memories_of("bob") == ["Bob plays the tuba"]


def test_a_user_who_learned_nothing_is_told_how_learnings_appear(browsing, make_user):
    make_user("carol")
    make_learning("alice", learning_id="memories_alice", learning_type="user_memory", content={"memories": [{"id": "m", "content": "not carol's"}]})
    page = browsing.chat_as("carol")
    page.goto("/chat/learnings/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#learnings-empty")).to_contain_text("Nothing learned about you yet")
    expect(page.locator(".learning")).to_have_count(0)
    assert page.errors == []


def test_screenshot_my_learnings(browsing, make_user, screenshots_dir):
    make_user("ada")
    make_learning("ada", learning_id="memories_ada", learning_type="user_memory", agent_id="demo-learner", content={
        "user_id": "ada", "memories": [{"id": "m1", "content": "User's name is Ada"}, {"id": "m2", "content": "User likes green tea"}],
    })
    make_learning("ada", learning_id="user_profile_ada", learning_type="user_profile", agent_id="demo-learner", content={"name": "Ada", "user_id": "ada"})
    page = browsing.chat_as("ada")
    page.goto("/chat/learnings/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator(".learning")).to_have_count(2)
    page.screenshot(path=str(screenshots_dir / "chat-learnings.png"))
    assert (screenshots_dir / "chat-learnings.png").stat().st_size > 10_000


def test_an_entity_and_a_decision_read_in_words_with_their_json_folded(browsing, make_user):
    make_user("ada")
    make_learning("ada", learning_id="entity_user_0123456789abcdef_company_acme", learning_type="entity_memory", namespace="user",
                  entity_id="acme", entity_type="company", agent_id="demo-learner", content={
                      "entity_id": "acme", "entity_type": "company", "name": "Acme", "description": "A rocket maker",
                      "facts": [{"id": "f1", "content": "uses PostgreSQL"}, {"id": "f2", "content": "uses MySQL", "superseded_at": "2026-01-01T00:00:00Z"}],
                  })
    make_learning("ada", learning_id="dec_0123456789ab", learning_type="decision_log", agent_id="demo-learner", content={
        "id": "dec_0123456789ab", "decision": "use PostgreSQL", "reasoning": "it is reliable", "outcome": None,
    })
    page = browsing.chat_as("ada")
    page.goto("/chat/learnings/")
    page.wait_for_selector("body[data-ready=true]")
    entity = page.locator(".learning", has_text="Entity: company acme (user)")
    expect(entity.locator(".learning-name")).to_have_text("Acme: A rocket maker")
    expect(entity.locator(".learning-facts li")).to_have_text(["uses PostgreSQL"])  # a retired fact is not shown
    expect(entity.locator(".learning-content")).not_to_be_visible()  # the JSON is folded under its summary
    entity.get_by_text("Content (JSON)").click()
    expect(entity.locator(".learning-content")).to_contain_text('"uses MySQL"')
    decision = page.locator(".learning", has_text="Decision")
    expect(decision.locator(".learning-decision dd")).to_have_text(["use PostgreSQL", "it is reliable"])
    assert page.errors == []
