"""The operator console: contents with status, reason, size and chunk count; a refresh action;
chunks read-only."""
from __future__ import annotations

import pytest
from django.urls import reverse

from knowledge.models import Chunk, Content, ContentStatus
from knowledge.services import content_insert
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def operator_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    return client


def test_contents_show_their_status_reason_size_and_chunks_and_can_be_refreshed(operator_client, shared_base):
    good = content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="Lunch is served at noon.", name="lunch").content
    bad = content_insert(user_id="bob", base_id=shared_base.pk, source_type="upload", data=b"\x00\x01", file_name="blob.bin").content
    ingest()
    page = operator_client.get(reverse("admin:knowledge_content_changelist")).content.decode()
    assert "lunch" in page and "completed" in page
    assert "failed" in page and "Unsupported content type" in page

    detail = operator_client.get(reverse("admin:knowledge_content_change", args=[good.pk])).content.decode()
    assert reverse("admin:jobs_job_change", args=[good.job_id]) in detail and "completed" in detail

    answer = operator_client.post(
        reverse("admin:knowledge_content_changelist"), {"action": "refresh_contents", "_selected_action": [good.pk, bad.pk]}, follow=True,
    )
    assert "Refreshing 2 content(s)." in answer.content.decode()
    assert set(Content.all_users.values_list("status", flat=True)) == {ContentStatus.PROCESSING}
    assert sorted(ingest()) == ["COMPLETED", "ERROR"]


def test_chunks_are_read_only(operator_client, shared_base):
    content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="A single chunk.")
    ingest()
    chunk = Chunk.all_users.get()
    url = reverse("admin:knowledge_chunk_change", args=[chunk.pk])
    page = operator_client.get(url)
    assert page.status_code == 200 and "A single chunk." in page.content.decode() and 'name="_save"' not in page.content.decode()
    assert operator_client.post(url, {"text": "changed"}).status_code == 403
    assert Chunk.all_users.get().text == "A single chunk."
