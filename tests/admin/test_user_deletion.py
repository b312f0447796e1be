"""Deleting a user in the admin (one, or "delete selected") erases their data with the account,
through the one erasure service (core.services.userdata): every owned row, and what other rows
say of them. The confirmation page says what will be erased."""
from __future__ import annotations

import html

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils.text import capfirst

from core.services.userdata import userdata_counts
from sessions.models import Run
from tests.factories import OWNED_FACTORIES

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(django_user_model):
    """Accounts for alice, bob and carol, each with a row of every owned model."""
    users = {}
    for name in ("alice", "bob", "carol"):
        users[name] = django_user_model.objects.create_user(name, password="pw-for-tests-only")
        for factory in OWNED_FACTORIES.values():
            factory(name)
    return users


@pytest.fixture
def operator_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    return client


def data_lines(user_id: str) -> list[str]:
    """What the confirmation page lists of ``user_id``'s data: each owned table with rows, counted."""
    from django.apps import apps

    return [
        f"{capfirst(apps.get_model(label)._meta.verbose_name_plural)}: {count}"
        for label, count in userdata_counts(user_id=user_id).items() if count
    ]


def test_deleting_a_user_erases_their_data_after_saying_what_goes(operator_client, people, django_user_model) -> None:
    url = reverse("admin:auth_user_delete", args=[people["alice"].pk])
    before = {name: userdata_counts(user_id=name) for name in ("alice", "bob")}
    assert sum(before["alice"].values()) > len(OWNED_FACTORIES) - 1  # a run brings its session, an event its run

    page = html.unescape(operator_client.get(url).content.decode())
    assert "The data of alice, erased with the account:" in page
    assert all(line in page for line in data_lines("alice")), data_lines("alice")
    assert "The data of bob" not in page

    response = operator_client.post(url, {"post": "yes"})
    assert response.status_code == 302
    assert userdata_counts(user_id="alice") == {label: 0 for label in before["alice"]}
    assert userdata_counts(user_id="bob") == before["bob"]
    assert not django_user_model.objects.filter(username="alice").exists()
    assert Run.objects.for_user("bob").exists()


def test_delete_selected_erases_each_selected_users_data(operator_client, people, django_user_model) -> None:
    changelist = reverse("admin:auth_user_changelist")
    selected = {"action": "delete_selected", "_selected_action": [people["alice"].pk, people["bob"].pk]}
    carol = userdata_counts(user_id="carol")

    page = html.unescape(operator_client.post(changelist, selected).content.decode())
    for name in ("alice", "bob"):
        assert f"The data of {name}, erased with the account:" in page
    assert "The data of carol" not in page
    runs = Run.objects.for_user("alice").count() + Run.objects.for_user("bob").count()
    assert f"{capfirst(Run._meta.verbose_name_plural)}: {runs}" in page  # the summary adds them up

    response = operator_client.post(changelist, {**selected, "post": "yes"})
    assert response.status_code == 302
    for name in ("alice", "bob"):
        assert sum(userdata_counts(user_id=name).values()) == 0
    assert userdata_counts(user_id="carol") == carol
    assert sorted(django_user_model.objects.values_list("username", flat=True)) == ["carol", "op"]


def test_an_operator_who_may_not_delete_the_data_may_not_delete_the_user(client, people, django_user_model) -> None:
    staff = django_user_model.objects.create_user("staff", password="pw-for-tests", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="auth", content_type__model="user"))
    client.force_login(staff)
    url = reverse("admin:auth_user_delete", args=[people["alice"].pk])
    before = userdata_counts(user_id="alice")

    page = html.unescape(client.get(url).content.decode())
    assert "permission to delete the following types of objects" in page
    assert str(Run._meta.verbose_name) in page
    assert client.post(url, {"post": "yes"}).status_code == 403
    assert userdata_counts(user_id="alice") == before
    assert django_user_model.objects.filter(username="alice").exists()
