"""The agent form in Chromium (issue 19): a new agent shows its draft's form at once, and no
"Add another Draft" link for an agent that has none."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_new_agent_has_its_draft_form_and_no_add_another_link(browsing, make_user) -> None:
    make_user("operator", is_staff=True, is_superuser=True)
    page = browsing.page()
    page.goto("/admin/login/?next=/admin/agents/agentdefinition/add/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.locator("input[name$='-0-model']")).to_be_visible()
    page.wait_for_load_state("load")  # inlines.js has run
    expect(page.locator(".inline-group a.addlink", has_text="Add another")).to_have_count(1)  # inlines.js made it, and hid it: the draft is there
    expect(page.locator(".inline-group a.addlink", has_text="Add another")).to_be_hidden()
    # created/updated are the site's to keep: no input for them.
    expect(page.locator("input[name^=created_at], input[name^=updated_at]")).to_have_count(0)
    assert page.errors == []
