"""The suite's flush between transactional tests (tests/conftest.py) leaves the rows post_migrate
wrote, with their ids: every model's content type and its default permissions."""
from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType

pytestmark = pytest.mark.django_db(transaction=True)


def _static_rows() -> tuple[set, set]:
    content_types = set(ContentType.objects.values_list("id", "app_label", "model"))
    permissions = set(Permission.objects.values_list("id", "content_type_id", "codename"))
    return content_types, permissions


def test_a_transactional_test_empties_the_tables_it_wrote(django_user_model) -> None:
    django_user_model.objects.create_user(username="left-behind")
    ContentType.objects.clear_cache()
    test_a_transactional_test_empties_the_tables_it_wrote.rows = _static_rows()


def test_the_next_one_starts_with_every_content_type_and_permission_and_none_of_its_rows(django_user_model) -> None:
    assert not django_user_model.objects.exists()
    models = list(apps.get_models())
    content_types = ContentType.objects.get_for_models(*models, for_concrete_models=False)
    assert set(content_types) == set(models)
    for model in models:
        for action in model._meta.default_permissions:
            assert Permission.objects.filter(content_type=content_types[model], codename=f"{action}_{model._meta.model_name}").exists(), (model, action)
    before = getattr(test_a_transactional_test_empties_the_tables_it_wrote, "rows", None)
    if before is not None:  # run after the first test, as in the suite: the same rows, the same ids
        assert _static_rows() == before
