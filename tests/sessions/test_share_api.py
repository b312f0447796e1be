"""Share links: /chat/api/sessions/{id}/share (the owner's) and the page it opens, /chat/shared/<token>/."""
from __future__ import annotations


import pytest
from django.test import Client

from chat.models import SharedConversation
from sessions.models import Run, RunStatus, Session
from tests.factories import make_run, make_session

pytestmark = pytest.mark.django_db




def say(asked: str, answer: str) -> Run:
    """A finished exchange in alice's conversation "s-tea" (made on first use)."""
    session = Session.objects.for_user("alice").filter(pk="s-tea").first() or make_session("alice", session_id="s-tea", session_name="Tea notes")
    run = make_run("alice", session=session, status=RunStatus.COMPLETED, input={"input_content": asked})
    Run.objects.for_user("alice").filter(pk=run.pk).update(content=answer)
    return run


URL = "/chat/api/sessions/s-tea/share"


def test_the_owner_shares_a_snapshot_updates_it_and_revokes_it(alice) -> None:
    say("How hot for green tea?", "About **eighty** degrees.")
    assert alice.get(URL).json() == {"detail": "This conversation is not shared"}

    created = alice.put(URL)
    assert created.status_code == 200
    share = created.json()
    token = share["path"].split("/")[-2]
    assert share["path"] == f"/chat/shared/{token}/" and share["url"] == f"http://testserver/chat/shared/{token}/"
    assert len(token) >= 40 and share["title"] == "Tea notes"  # 256 random bits, URL-safe
    assert alice.get(URL).json() == share

    page = Client().get(share["path"])  # nobody signed in
    assert page.status_code == 200 and page["Cache-Control"].startswith("max-age=0") and "no-store" in page["Cache-Control"]
    html = page.content.decode()
    assert "About **eighty** degrees." in html and "How hot for green tea?" in html
    # Nothing of the owner's beyond the conversation: not their name, not the session or run ids, no chat controls.
    for private in ("alice", "s-tea", "composer", "csrf", "chat-config"):
        assert private not in html, private

    # Later messages are not shared until the owner updates the link; the link stays the same.
    say("And black tea?", "Boiling water.")
    assert "Boiling water." not in Client().get(share["path"]).content.decode()
    updated = alice.put(URL).json()
    assert updated["path"] == share["path"]
    assert "Boiling water." in Client().get(share["path"]).content.decode()

    assert alice.delete(URL).status_code == 204
    gone = Client().get(share["path"])
    assert gone.status_code == 404 and "Boiling water." not in gone.content.decode()
    assert alice.get(URL).status_code == 404
    assert alice.delete(URL).status_code == 204  # stopping twice is no error
    # Sharing again makes a new link: the revoked one never comes back.
    again = alice.put(URL).json()
    assert again["path"] != share["path"] and Client().get(share["path"]).status_code == 404


def test_another_user_can_neither_share_nor_see_nor_revoke_a_conversation_that_is_not_theirs(alice, bob) -> None:
    say("hello", "hi")
    share = alice.put(URL).json()
    for method in ("get", "put", "delete"):
        response = getattr(bob, method)(URL)
        assert (response.status_code, response.json()) == (404, {"detail": "Session not found"}), method
    assert bob.put("/chat/api/sessions/nope/share").status_code == 404
    assert Client().get(share["path"]).status_code == 200  # bob's attempts changed nothing
    assert SharedConversation.objects.for_user("bob").count() == 0


def test_only_a_signed_in_browser_manages_shares(alice) -> None:
    say("hello", "hi")
    assert Client().put(URL).status_code in (401, 403)
    assert SharedConversation.objects.unscoped("the test counts every share").count() == 0


def test_a_link_that_never_existed_is_the_same_404_as_a_revoked_one(alice) -> None:
    for token in ("x" * 43, "short", "y" * 200):
        page = Client().get(f"/chat/shared/{token}/")
        assert page.status_code == 404 and "stopped sharing" in page.content.decode()


def test_deleting_the_conversation_deletes_its_share(alice) -> None:
    say("hello", "hi")
    share = alice.put(URL).json()
    assert alice.delete("/sessions/s-tea").status_code == 204
    assert Client().get(share["path"]).status_code == 404
    assert SharedConversation.objects.for_user("alice").count() == 0


def test_an_operator_takes_a_share_down_in_the_console(alice, django_user_model) -> None:
    say("hello", "hi")
    share = alice.put(URL).json()
    operator = Client()
    operator.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    row = SharedConversation.objects.for_user("alice").get()
    listed = operator.get("/admin/chat/sharedconversation/").content.decode()
    assert "Tea notes" in listed and row.token not in listed  # the link's secret is not shown
    assert operator.post(f"/admin/chat/sharedconversation/{row.pk}/delete/", {"post": "yes"}).status_code == 302
    assert Client().get(share["path"]).status_code == 404
