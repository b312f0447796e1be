"""The chat pages without a browser: who gets what."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.factories import make_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(client):
    user = get_user_model().objects.create_user(username="alice", password="x-long-password")
    client.force_login(user)
    return user


def test_a_browser_opening_the_site_lands_on_the_chat(client):
    response = client.get("/", HTTP_ACCEPT="text/html")
    assert response.status_code in (301, 302) and response["Location"] == "/chat/"
    response = client.get("/chat/")
    assert response.status_code == 302 and response["Location"] == "/chat/login/?next=/chat/"


def test_login_page_and_login(client):
    get_user_model().objects.create_user(username="alice", password="x-long-password")
    page = client.get("/chat/login/")
    assert page.status_code == 200 and b'autocomplete="current-password"' in page.content
    bad = client.post("/chat/login/", {"username": "alice", "password": "wrong"})
    assert bad.status_code == 200 and b'role="alert"' in bad.content
    good = client.post("/chat/login/", {"username": "alice", "password": "x-long-password"})
    assert good.status_code == 302 and good["Location"] == "/chat/"


def test_chat_page_serves_its_assets_from_the_project(client, alice):
    page = client.get("/chat/")
    body = page.content.decode()
    assert page.status_code == 200
    assert "/static/vendor/marked/marked.esm.js" in body and "/static/vendor/dompurify/purify.es.mjs" in body
    assert "http://" not in body.replace("http://www.w3.org", "") and "https://" not in body
    assert 'name="csrf-token"' in body


def test_own_session_page_opens_and_another_users_is_a_404(client, alice):
    mine = make_session("alice", component_id="assistant")
    theirs = make_session("bob", component_id="assistant")
    assert client.get(f"/chat/s/{mine.session_id}/").status_code == 200
    response = client.get(f"/chat/s/{theirs.session_id}/")
    assert response.status_code == 404
    assert theirs.session_id not in response.content.decode()
    assert client.get("/chat/s/does-not-exist/").status_code == 404


def test_logout_is_post_only(client, alice):
    assert client.get("/chat/logout/").status_code == 405
    response = client.post("/chat/logout/")
    assert response.status_code == 302 and response["Location"] == "/chat/login/"
    assert client.get("/chat/").status_code == 302


def test_my_approvals_page_is_for_a_signed_in_user(client):
    assert client.get("/chat/approvals/")["Location"] == "/chat/login/?next=/chat/approvals/"
    client.force_login(get_user_model().objects.create_user(username="alice", password="x-long-password"))
    page = client.get("/chat/approvals/")
    assert page.status_code == 200 and "chat/js/inbox.js" in page.content.decode()
    assert 'id="my-approvals"' in client.get("/chat/").content.decode()


def test_my_documents_page_is_for_a_signed_in_user_and_names_the_upload_bound(client, settings):
    settings.UPLOAD_MAX_FILE_BYTES = 5_000_000
    assert client.get("/chat/documents/")["Location"] == "/chat/login/?next=/chat/documents/"
    client.force_login(get_user_model().objects.create_user(username="alice", password="x-long-password"))
    page = client.get("/chat/documents/")
    body = page.content.decode()
    assert page.status_code == 200 and "chat/js/documents.js" in body and "chat/css/documents.css" in body
    assert page.context["config"]["maxFileBytes"] == min(5_000_000, settings.KNOWLEDGE_MAX_CONTENT_BYTES)
    assert "<script>" not in body  # CSP: the config rides in a JSON script element, nothing inline runs
    chat = client.get("/chat/").content.decode()
    assert 'id="my-documents"' in chat and 'href="/chat/documents/"' in chat
    assert 'id="attach"' in chat and 'aria-label="Attach files"' in chat and "chat/css/attachments.css" in chat


def test_the_browser_sessions_knowledge_calls_are_the_users_own(client, alice, settings):
    settings.EMBEDDED_WORKER = False  # the ingestion waits queued: this test is about who owns it
    added = client.post("/knowledge/content?user_id=bob", {"text_content": "Alice's note", "name": "note", "user_id": "bob"})
    assert added.status_code == 202, added.content
    assert added.json()["user_id"] == "alice"
    from knowledge.models import Content

    assert [content.user_id for content in Content.all_users.all()] == ["alice"]
    assert [row["name"] for row in client.get("/knowledge/content", {"user_id": "bob"}).json()["data"]] == ["note"]
    client.logout()
    bob = get_user_model().objects.create_user(username="bob", password="x-long-password")
    client.force_login(bob)
    assert client.get("/knowledge/content").json()["data"] == []
    assert client.delete(f"/knowledge/content/{added.json()['id']}").status_code == 404
