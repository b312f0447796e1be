"""The framework internals we copy, override or lean on are the ones we read.

docs/decisions/framework-internals.md lists each place and why it stays. An upgrade of Django,
asgiref or drf-spectacular that changes one of these functions fails here, naming it: re-read
the entry, re-measure, then update the hash below (or drop the entry).
"""
from __future__ import annotations

import hashlib
import inspect
from importlib import import_module

import pytest

PINNED = {
    # core/asgi.py: a fork of the handler that lends kept request threads.
    "django.core.handlers.asgi:ASGIHandler.handle": "98faeb5bef800331",
    "django.core.handlers.asgi:ASGIHandler.__call__": "f756809e9c9308dc",
    "django.core.handlers.asgi:ASGIHandler.send_response": "77eda2b08689b44e",
    "asgiref.sync:ThreadSensitiveContext.__init__": "588b5c0a4d8d60f3",
    # core/middleware.py: Django's middleware hooks run on the event loop.
    "django.utils.deprecation:MiddlewareMixin.__acall__": "adf8cbcaf9f11e45",
    "django.contrib.sessions.middleware:SessionMiddleware.process_response": "fbaf5503c20d7dd0",
    "django.contrib.messages.middleware:MessageMiddleware.process_response": "04469c9493c90e26",
    "django.middleware.csrf:CsrfViewMiddleware.process_view": "cdbdabe04318fc2f",
    # core/statements.py: statements compiled once.
    "django.db.models.sql.subqueries:InsertQuery.insert_values": "c1a5f2f916964c6e",
    "django.db.models.sql.compiler:SQLCompiler.get_converters": "c6c8c1b71882ee8b",
    "django.db.models.sql.compiler:SQLCompiler.results_iter": "d279d61b80a3a115",
    "django.db.models.query:get_related_populators": "979430eb75b93969",
    # core/db/sqlite3/base.py: writers take turns on a lock.
    "django.db.backends.sqlite3.base:DatabaseWrapper._start_transaction_under_autocommit": "7315cfc61c1dde12",
    # core/tenancy.py: the queryset's ways to the database, owner-keyed saves and FK reads.
    "django.db.models.query:QuerySet._fetch_all": "42566f1ae6d2e8e6",
    "django.db.models.query:QuerySet._update": "60f14ca75f73ef73",
    "django.db.models.query:QuerySet._raw_delete": "e878941754cb71ab",
    "django.db.models.query:QuerySet.iterator": "a9ee0ddc811e1a86",
    "django.db.models.base:Model._do_update": "cf249d2906d14339",
    "django.db.models.base:Model.refresh_from_db": "b30116005da707c3",
    "django.db.models.base:Model.from_db": "eba347895d11fa79",
    "django.db.models.fields.related_descriptors:ForwardManyToOneDescriptor.get_object": "de2821c02770755c",
    "django.db.models.fields.related_descriptors:ForwardManyToOneDescriptor.__get__": "890c75fee249ace7",
    # sessions/api/base.py: documented request bodies.
    "drf_spectacular.openapi:AutoSchema._get_request_body": "0d33ca17af0e7a1d",
}


def _source_hash(target: str) -> str:
    module, _, path = target.partition(":")
    obj = import_module(module)
    for part in path.split("."):
        obj = getattr(obj, part)
    return hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()[:16]


@pytest.mark.parametrize("target", sorted(PINNED))
def test_the_upstream_code_we_lean_on_is_the_code_we_read(target: str) -> None:
    assert _source_hash(target) == PINNED[target], (
        f"{target} changed upstream: re-read its entry in docs/decisions/framework-internals.md, "
        "re-measure, then update the pinned hash"
    )
