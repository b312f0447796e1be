"""Everything one user owns, as a JSON export, and its erasure (data-subject requests).

Generic over ``core.tenancy.owned_models()``: a new owned model is exported and erased without
touching this module. Both go through the scoped manager (``for_user``), so they can only ever
reach that user's rows.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.core import serializers
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models, transaction
from django.dispatch import Signal
from django.utils import timezone

from core.tenancy import owned_models

logger = logging.getLogger("agno_site.userdata")

EXPORT_FORMAT = "agno-site.userdata/1"
_CHUNK = 500

# Sent by ``userdata_erase`` inside its transaction, with ``user_id``, for what an app keeps about a
# user outside the owned tables (an operator's ledger that names them, e.g. importer.erasure). A
# receiver removes or anonymises it and returns ``{"app.Model": rows changed}`` (``Erasure.anonymised``).
userdata_erasing = Signal()


def _label(model: type[models.Model]) -> str:
    return model._meta.label  # "sessions.Run"


def _models() -> list[type[models.Model]]:
    return sorted(owned_models(), key=_label)


def userdata_counts(*, user_id: str) -> dict[str, int]:
    """Rows per owned table, for the confirmation page (one COUNT per table)."""
    return {_label(model): model.objects.for_user(user_id).count() for model in _models()}


def _rows(model: type[models.Model], user_id: str) -> Iterator[dict[str, Any]]:
    queryset = model.objects.for_user(user_id).order_by("pk")
    for item in serializers.serialize("python", queryset.iterator(chunk_size=_CHUNK)):
        yield {"pk": item["pk"], **item["fields"]}


def userdata_export_chunks(*, user_id: str) -> Iterator[str]:
    """The export as JSON text, table by table and row by row, so a large account streams.

    Shape: ``{"format", "user_id", "exported_at", "tables": {"app.Model": [row, ...], ...}}``,
    each row its primary key and every field (JSON fields as JSON, datetimes as ISO 8601).
    """
    header = {"format": EXPORT_FORMAT, "user_id": user_id, "exported_at": timezone.now()}
    yield json.dumps(header, cls=DjangoJSONEncoder)[:-1] + ', "tables": {'
    for position, model in enumerate(_models()):
        yield ("" if position == 0 else ", ") + json.dumps(_label(model)) + ": ["
        for index, row in enumerate(_rows(model, user_id)):
            yield ("" if index == 0 else ", ") + json.dumps(row, cls=DjangoJSONEncoder, ensure_ascii=False)
        yield "]"
    yield "}}"


def userdata_export(*, user_id: str) -> dict[str, Any]:
    return json.loads("".join(userdata_export_chunks(user_id=user_id)))


@dataclass(frozen=True)
class Erasure:
    deleted: dict[str, int]
    account_deleted: bool
    anonymised: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.deleted.values())


def userdata_erase(*, user_id: str, delete_account: bool = False) -> Erasure:
    """Delete every row ``user_id`` owns, and (``userdata_erasing``) what other rows say of them, in
    one transaction (all or nothing).

    With ``delete_account`` the Django login of that name goes too; otherwise the person can
    still sign in, to an empty account.
    """
    deleted: dict[str, int] = {}
    with transaction.atomic():
        for model in _models():
            _, per_model = model.objects.for_user(user_id).delete()
            for label, count in per_model.items():
                deleted[label] = deleted.get(label, 0) + count
        anonymised: dict[str, int] = {}
        for _, changed in userdata_erasing.send(sender=Erasure, user_id=user_id):
            for label, count in (changed or {}).items():
                anonymised[label] = anonymised.get(label, 0) + count
        account_deleted = False
        if delete_account:
            account_deleted = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: user_id}).delete()[0] > 0
    # Counts only: the log carries no personal data.
    logger.info("userdata erased: %s rows in %s tables, account deleted: %s", sum(deleted.values()), len(deleted), account_deleted)
    return Erasure(
        deleted={label: count for label, count in deleted.items() if count}, account_deleted=account_deleted,
        anonymised={label: count for label, count in anonymised.items() if count},
    )


def userdata_reassign(*, from_user_id: str, to_user_id: str) -> dict[str, int]:
    """Give every row ``from_user_id`` owns to ``to_user_id``, in one transaction; rows moved per table.

    For operators: e.g. rows a migration could not attribute (two service accounts that shared
    one ``sa:<name>`` identity), once it is known whose they are.
    """
    if from_user_id == to_user_id:
        raise ValueError("from and to are the same user")
    moved: dict[str, int] = {}
    with transaction.atomic():
        for model in _models():
            count = model.objects.for_user(from_user_id).update(user_id=to_user_id)
            if count:
                moved[_label(model)] = count
    logger.info("userdata reassigned: %s rows in %s tables", sum(moved.values()), len(moved))
    return moved
