"""AsyncAgentOSView's blocking work (``in_thread``) runs in a pooled thread that looks after its
database connections as a request thread does: a connection it opened is closed (a pooled one
handed back to the pool) when the work is done and CONN_MAX_AGE=0 says so, whether the work
answered or raised. Before, a view using the default ``in_thread`` left each pooled thread
holding the connection it opened, never checked again: with the PostgreSQL pool, a connection
taken out of it for good per thread."""
from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.test import AsyncClient
from django.urls import path

from core.api.errors import NotFound
from core.api.views import AsyncAgentOSView, json_response
from tests.conftest import run_async

pytestmark = [pytest.mark.urls(__name__), pytest.mark.django_db(transaction=True)]

# The connection (Django's wrapper, one per thread) each prepare_get used, in the order they ran.
used: list = []


class ReadsTheDatabase(AsyncAgentOSView):
    """A view with the default ``in_thread``: its preparation queries, then answers or raises."""

    public = True

    def prepare_get(self, request):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        used.append(connections["default"])  # this thread's own
        if request.GET.get("fail"):
            raise NotFound("Nothing here")
        return {"thread": threading.get_ident()}

    async def get(self, request):
        return json_response(self.prepared)


urlpatterns = [path("reads", ReadsTheDatabase.as_view())]


@pytest.fixture(autouse=True)
def _fresh():
    used.clear()
    yield
    used.clear()


@pytest.mark.parametrize(("query", "status"), [({}, 200), ({"fail": "1"}, 404)])
def test_a_connection_opened_in_the_views_thread_is_closed_when_its_work_ends(query, status) -> None:
    async def request():
        return await AsyncClient().get("/reads", query)

    response = run_async(request)
    assert response.status_code == status, response.content
    assert len(used) == 1
    wrapper = used[0]
    assert wrapper is not connections["default"]  # the work ran off the test's thread
    # CONN_MAX_AGE=0 (the test settings; always so with the PostgreSQL pool): closed once done.
    assert wrapper.connection is None
