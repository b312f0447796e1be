"""The framework internals we copy, override or lean on are the ones we read.

docs/decisions/framework-internals.md lists each place and why it stays. An upgrade of Django,
asgiref, DRF, WhiteNoise or drf-spectacular that changes one of these functions fails here, naming it: re-read
the entry, re-measure, then update the hash below (or drop the entry).
"""
from __future__ import annotations

import hashlib
import inspect
from importlib import import_module
from pathlib import Path

import pytest

# upstream function: (hash of its source, the entry of docs/decisions/framework-internals.md)
PINNED: dict[str, tuple[str, str]] = {
    # core/asgi.py: a fork of the handler that lends kept request threads.
    "django.core.handlers.asgi:ASGIHandler.handle": ("98faeb5bef800331", "Request threads kept"),
    "django.core.handlers.asgi:ASGIHandler.__call__": ("f756809e9c9308dc", "Request threads kept"),
    "django.core.handlers.asgi:ASGIHandler.send_response": ("77eda2b08689b44e", "Request threads kept"),
    "asgiref.sync:ThreadSensitiveContext.__init__": ("588b5c0a4d8d60f3", "Request threads kept"),
    # core/middleware.py: Django's middleware hooks run on the event loop.
    "django.utils.deprecation:MiddlewareMixin.__acall__": ("adf8cbcaf9f11e45", "Middleware on the event loop"),
    "django.contrib.sessions.middleware:SessionMiddleware.process_response": ("fbaf5503c20d7dd0", "Middleware on the event loop"),
    "django.contrib.messages.middleware:MessageMiddleware.process_response": ("04469c9493c90e26", "Middleware on the event loop"),
    "django.middleware.csrf:CsrfViewMiddleware.process_view": ("cdbdabe04318fc2f", "Middleware on the event loop"),
    # core/statements.py: statements compiled once.
    "django.db.models.sql.subqueries:InsertQuery.insert_values": ("c1a5f2f916964c6e", "Statements compiled once"),
    "django.db.models.sql.compiler:SQLCompiler.get_converters": ("c6c8c1b71882ee8b", "Statements compiled once"),
    "django.db.models.sql.compiler:SQLCompiler.results_iter": ("d279d61b80a3a115", "Statements compiled once"),
    "django.db.models.query:get_related_populators": ("979430eb75b93969", "Statements compiled once"),
    # core/statements.py: a dict or list goes straight to ops.adapt_json_value (what these come to for one).
    "django.db.models.fields.json:JSONField.get_db_prep_save": ("e34659f215304d6d", "Statements compiled once"),
    "django.db.models.fields.json:JSONField.get_db_prep_value": ("5cbcc7e26018069c", "Statements compiled once"),
    "django.db.models.fields:Field.get_prep_value": ("7aa16ded6e6eb1fb", "Statements compiled once"),
    # core/db/sqlite3/base.py: writers take turns on a lock.
    "django.db.backends.sqlite3.base:DatabaseWrapper._start_transaction_under_autocommit": ("7315cfc61c1dde12", "SQLite writers take turns on a lock"),
    # core/db/sqlite3/base.py: placeholders converted once per SQL text.
    "django.db.backends.sqlite3.base:SQLiteCursorWrapper.convert_query": ("183a4b3544fb854a", "SQLite placeholders converted once"),
    "django.db.backends.sqlite3.base:SQLiteCursorWrapper.execute": ("0b4a43882cc88942", "SQLite placeholders converted once"),
    "django.db.backends.sqlite3.base:SQLiteCursorWrapper.executemany": ("52fa6c310dee4219", "SQLite placeholders converted once"),
    "django.db.backends.sqlite3.base:DatabaseWrapper.create_cursor": ("9e8198be0a5d41e9", "SQLite placeholders converted once"),
    # core/tenancy.py: the queryset's ways to the database, owner-keyed saves and FK reads.
    "django.db.models.query:QuerySet._fetch_all": ("42566f1ae6d2e8e6", "Tenancy: owner-keyed saves, reloads and FK reads"),
    "django.db.models.query:QuerySet._update": ("60f14ca75f73ef73", "Tenancy: owner-keyed saves, reloads and FK reads"),
    "django.db.models.query:QuerySet._raw_delete": ("e878941754cb71ab", "Tenancy: owner-keyed saves, reloads and FK reads"),
    "django.db.models.query:QuerySet.iterator": ("a9ee0ddc811e1a86", "Tenancy: owner-keyed saves, reloads and FK reads"),
    "django.db.models.base:Model._do_update": ("cf249d2906d14339", "Tenancy: owner-keyed saves, reloads and FK reads"),
    "django.db.models.base:Model.refresh_from_db": ("b30116005da707c3", "Tenancy: owner-keyed saves, reloads and FK reads"),
    "django.db.models.base:Model.from_db": ("eba347895d11fa79", "Tenancy: owner-keyed saves, reloads and FK reads"),
    "django.db.models.fields.related_descriptors:ForwardManyToOneDescriptor.get_object": ("de2821c02770755c", "Tenancy: owner-keyed saves, reloads and FK reads"),
    "django.db.models.fields.related_descriptors:ForwardManyToOneDescriptor.__get__": ("890c75fee249ace7", "Tenancy: owner-keyed saves, reloads and FK reads"),
    # sessions/api/base.py: documented request bodies.
    "drf_spectacular.openapi:AutoSchema._get_request_body": ("0d33ca17af0e7a1d", "Documented request bodies"),
    # core/api/views.py: DRF's request cycle with async handlers (AsyncAgentOSView.dispatch is a
    # copy of APIView.dispatch; its options() calls DRF's sync one on the loop); AgentOSView
    # answers every error through our one exception handler, whatever the settings say.
    "rest_framework.views:APIView.dispatch": ("3472ce1459213705", "DRF's request cycle with async handlers"),
    "rest_framework.views:APIView.options": ("0a12b395b775487b", "DRF's request cycle with async handlers"),
    "rest_framework.views:APIView.get_exception_handler": ("ec5deca5b55589fd", "DRF's request cycle with async handlers"),
    # core/api/views.py: JSON rendered in the view's own thread (rendered_here reads the
    # accepted_renderer that finalize_response sets).
    "rest_framework.views:APIView.finalize_response": ("cbcaead2dd2d71f6", "JSON rendered in the view's thread"),
    # core/api/views.py: never a 406 (LenientNegotiation catches select_renderer's NotAcceptable).
    "rest_framework.negotiation:DefaultContentNegotiation.select_renderer": ("72af66a971aff0d3", "Never a 406"),
    # core/api/parsers.py: StrictMultiPartParser.parse is DRF's with a bounded upload handler.
    "rest_framework.parsers:MultiPartParser.parse": ("1b88fac616c982aa", "Bounded multipart uploads"),
    # core/api/authentication.py: BrowserSessionAuthentication replaces DRF's authenticate and
    # asks Django's CSRF middleware whether an Origin is this site's (a private method).
    "rest_framework.authentication:SessionAuthentication.authenticate": ("09ed6cd8c2f1085e", "The login cookie only from this site"),
    "django.middleware.csrf:CsrfViewMiddleware._origin_verified": ("c244e21ccaaa9f6f", "The login cookie only from this site"),
    # core/middleware.py: the policy headers the settings give, built once (the rest is django-csp's).
    "csp.middleware:CSPMiddleware.process_response": ("fa72a0cd0d633c49", "CSP headers built once"),
    "csp.middleware:CSPMiddleware.get_policy_parts": ("835e17fa636ab681", "CSP headers built once"),
    # core/middleware.py: StaticFilesMiddleware looks files up as WhiteNoise's __call__ does.
    "whitenoise.middleware:WhiteNoiseMiddleware.__call__": ("538b06958308b801", "Middleware on the event loop"),
}


def _source_hash(target: str) -> str:
    module, _, path = target.partition(":")
    obj = import_module(module)
    for part in path.split("."):
        obj = getattr(obj, part)
    return hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()[:16]


@pytest.mark.parametrize("target", sorted(PINNED))
def test_the_upstream_code_we_lean_on_is_the_code_we_read(target: str) -> None:
    pinned, entry = PINNED[target]
    assert _source_hash(target) == pinned, (
        f"{target} changed upstream: re-read the entry {entry!r} in docs/decisions/framework-internals.md "
        "against the new code (what it copies or relies on), re-measure it with bench.internals, then "
        "update the pinned hash here (or remove the entry and go back to the plain path)"
    )


def test_every_entry_pinned_here_is_in_the_decision_record() -> None:
    record = (Path(__file__).resolve().parents[2] / "docs/decisions/framework-internals.md").read_text()
    rows = [line for line in record.splitlines() if line.startswith("| ")]
    missing = sorted({entry for _, entry in PINNED.values() if not any(row.startswith(f"| {entry}") for row in rows)})
    assert not missing, f"entries pinned here but not rows of the decision record: {missing}"
