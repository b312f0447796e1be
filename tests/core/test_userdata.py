"""Per-user export and erasure, generic over every owned model."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from core.services.userdata import EXPORT_FORMAT, userdata_counts, userdata_erase, userdata_export, userdata_export_chunks
from core.tenancy import owned_models
from tests.factories import OWNED_FACTORIES

pytestmark = pytest.mark.django_db


def _label(model) -> str:
    return model._meta.label


@pytest.fixture
def alice_and_bob():
    """One row of every owned model for alice and for bob (a run brings its session, an event its run)."""
    for factory in OWNED_FACTORIES.values():
        factory("alice")
        factory("bob")


def test_export_has_every_owned_table_and_only_the_users_rows(alice_and_bob):
    export = userdata_export(user_id="alice")
    assert export["format"] == EXPORT_FORMAT
    assert export["user_id"] == "alice"
    assert set(export["tables"]) == {_label(model) for model in owned_models()}
    for model in owned_models():
        rows = export["tables"][_label(model)]
        expected = model.objects.for_user("alice").count()
        # (tests/core/test_tenancy.py makes sure every owned model has a factory)
        assert expected >= 1 or model not in OWNED_FACTORIES
        assert len(rows) == expected
        assert {row["user_id"] for row in rows} <= {"alice"}
        assert sorted(str(row["pk"]) for row in rows) == sorted(str(pk) for pk in model.objects.for_user("alice").values_list("pk", flat=True))


def test_export_is_one_json_document_with_json_fields_kept_as_json(alice_and_bob):
    text = "".join(userdata_export_chunks(user_id="alice"))
    export = json.loads(text)
    run = export["tables"]["agno_sessions.Run"][0]
    assert run["input"] == {"input_content": "hello"}  # a JSON field stays an object, not a string
    assert isinstance(run["created_at"], str) and run["created_at"].startswith("20")


def test_export_of_an_unknown_user_is_empty_not_an_error(alice_and_bob):
    export = userdata_export(user_id="nobody")
    assert all(rows == [] for rows in export["tables"].values())


def test_counts_per_table(alice_and_bob):
    counts = userdata_counts(user_id="alice")
    assert counts == {_label(model): model.objects.for_user("alice").count() for model in owned_models()}


def test_erase_removes_every_row_of_the_user_and_nothing_else(alice_and_bob):
    before_bob = userdata_counts(user_id="bob")
    before_alice = userdata_counts(user_id="alice")
    erasure = userdata_erase(user_id="alice")
    assert userdata_counts(user_id="alice") == {label: 0 for label in before_alice}
    assert userdata_counts(user_id="bob") == before_bob
    assert erasure.deleted == {label: count for label, count in before_alice.items() if count}
    assert erasure.total == sum(before_alice.values())
    assert erasure.account_deleted is False


def test_erase_can_delete_the_login_account_too(alice_and_bob):
    User = get_user_model()
    User.objects.create_user(username="alice", password="x-long-password")
    User.objects.create_user(username="bob", password="x-long-password")
    assert userdata_erase(user_id="alice").account_deleted is False
    assert User.objects.filter(username="alice").exists()
    assert userdata_erase(user_id="alice", delete_account=True).account_deleted is True
    assert list(User.objects.values_list("username", flat=True)) == ["bob"]
