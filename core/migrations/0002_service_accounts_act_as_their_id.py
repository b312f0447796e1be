"""Service accounts act as ``sa:<id>`` instead of ``sa:<name>``: move what each one owns.

A name is unique only per owner, so before this, alice's and bob's ``bot`` were one identity.
Every owned row (``core.tenancy.owned_models()``) held by ``sa:<name>`` moves to ``sa:<id>`` when
exactly one service account ever had that name: its rows are certainly its own.

Where two or more accounts shared a name, the rows under ``sa:<name>`` could have been written by
any of them, and giving them to one (or copying them to each) would hand one owner's data to
another. They stay under ``sa:<name>``, which no credential acts as any more (JWT subjects
``sa:…`` are refused), so nobody sees them but operators: the migration lists them, and
``manage.py reassign_owner --from sa:<name> --to sa:<id>`` hands them over once an operator
knows whose they are.
"""
from __future__ import annotations

import logging
from collections import defaultdict

from django.db import migrations

logger = logging.getLogger("agno_site.migrations")


def _owned_models(apps):
    from core.tenancy import owned_models

    for model in owned_models():
        try:
            yield apps.get_model(model._meta.app_label, model.__name__)
        except LookupError:
            continue  # created by a later migration: it has no rows yet


def _accounts_by_name(apps) -> dict[str, list[int]]:
    AccessToken = apps.get_model("core", "AccessToken")
    accounts: dict[str, list[int]] = defaultdict(list)
    for pk, name in AccessToken.objects.filter(kind="service").order_by("pk").values_list("pk", "name"):
        accounts[name].append(pk)
    return accounts


def _move(apps, moves: dict[str, str]) -> None:
    for model in _owned_models(apps):
        for old, new in moves.items():
            model.objects.filter(user_id=old).update(user_id=new)


def forward(apps, schema_editor) -> None:
    accounts = _accounts_by_name(apps)
    _move(apps, {f"sa:{name}": f"sa:{ids[0]}" for name, ids in accounts.items() if len(ids) == 1})
    for name, ids in accounts.items():
        if len(ids) < 2:
            continue
        held = {
            model._meta.label: count
            for model in _owned_models(apps)
            if (count := model.objects.filter(user_id=f"sa:{name}").count())
        }
        if held:
            logger.warning(
                "service accounts %s share the name %r: rows owned by sa:%s (%s) are left to an operator; "
                "hand them over with manage.py reassign_owner --from sa:%s --to sa:<id>",
                ids, name, name, held, name,
            )


def backward(apps, schema_editor) -> None:
    # The old code knows only sa:<name>: every account's rows go back under it (merged, as then).
    accounts = _accounts_by_name(apps)
    _move(apps, {f"sa:{pk}": f"sa:{name}" for name, ids in accounts.items() for pk in ids})


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0001_initial"),
        ("agents", "0005_queue_lock_is_an_advisory_lock"),
        ("agno_sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(forward, backward)]
