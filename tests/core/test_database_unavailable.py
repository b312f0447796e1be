"""Only a database that cannot be reached answers 503; a statement that failed stays a 500 (a bug
or a query to fix is not something a client should retry)."""
from __future__ import annotations

import psycopg
import pytest
from django.db import OperationalError, connection, transaction

from core.api.errors import exception_handler
from core.db import database_unavailable


def _raised(sql: str, *before: str) -> OperationalError:
    with pytest.raises(OperationalError) as caught, transaction.atomic(), connection.cursor() as cursor:
        for statement in before:
            cursor.execute(statement)
        cursor.execute(sql)
    return caught.value


def test_a_refused_connection_is_unavailable_and_answers_503():
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect("host=127.0.0.1 port=1 connect_timeout=2")
    wrapped = OperationalError(str(refused.value))
    wrapped.__cause__ = refused.value
    assert database_unavailable(wrapped)
    response = exception_handler(wrapped, {})
    assert (response.status_code, response.data, response["Retry-After"]) == (503, {"detail": "The database is unavailable; try again shortly"}, "2")


@pytest.mark.django_db
@pytest.mark.postgres_only
def test_a_statement_timeout_is_not_unavailability():
    timed_out = _raised("SELECT pg_sleep(1)", "SET LOCAL statement_timeout = 1")
    assert not database_unavailable(timed_out)
    assert exception_handler(timed_out, {}) is None  # DRF re-raises it: a logged 500


@pytest.mark.django_db
def test_a_missing_table_on_sqlite_is_not_unavailability(on_postgres):
    if on_postgres:
        pytest.skip("PostgreSQL reports a missing table as a ProgrammingError")
    missing = _raised("SELECT * FROM no_such_table")
    assert not database_unavailable(missing)
    assert exception_handler(missing, {}) is None
