"""INSERT and UPDATE statements compiled once, for the rows every run writes.

``Model.save()``, ``bulk_create()`` and ``QuerySet.update()`` compile their SQL on every call:
Django's compilers walk every field of every row, preparing each value through the field's
``get_db_prep_save``, and resolve every filter. For the session, run, event and job rows of a run
that walk cost more than the statements themselves (bench/README.md). ``Insert`` asks Django's
compiler for its statement once per database, so the SQL (quoting, placeholders) is Django's own;
``Update`` writes ``SET`` and ``WHERE`` lists of plain columns. Both bind values with only the
conversions they need: JSON and datetime values through Django's adapters, strings and numbers as
they are.

They bypass ``save()``: no signals, no field defaults (Django's defaults are not the database's: a
column left out of an INSERT must be nullable). Callers give every column's value.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db import connections, models
from django.db.models.sql import InsertQuery

# Values of these fields go to the driver as they are (a str subclass, such as a TextChoices
# member, is turned into a plain str first: drivers adapt by exact type).
_TEXT = {"CharField", "TextField", "SlugField", "EmailField", "URLField", "UUIDField"}
_PLAIN = {
    "IntegerField", "BigIntegerField", "SmallIntegerField", "PositiveIntegerField",
    "PositiveBigIntegerField", "PositiveSmallIntegerField", "FloatField", "BooleanField",
}


def _text(value: Any) -> Any:
    return value if value is None or type(value) is str else str(value)


def _adapter(field: models.Field, connection: Any) -> Callable[[Any], Any] | None:
    kind = field.get_internal_type()
    if field.is_relation:
        kind = field.target_field.get_internal_type()
    if kind in _TEXT:
        return _text
    if kind in _PLAIN:
        return None
    if kind == "DateTimeField":
        return connection.ops.adapt_datetimefield_value
    return lambda value: field.get_db_prep_save(value, connection)


def _columns(model: type[models.Model], names: Sequence[str]) -> list[models.Field]:
    by_attname = {field.attname: field for field in model._meta.concrete_fields}
    unknown = [name for name in names if name not in by_attname]
    if unknown:
        raise ValueError(f"{model.__name__} has no column(s) {', '.join(unknown)}")
    return [by_attname[name] for name in names]


def _bind(values: Sequence[Any], adapters: Sequence[Callable[[Any], Any] | None]) -> list[Any]:
    return [value if adapt is None else adapt(value) for value, adapt in zip(values, adapters)]


class Insert:
    """``INSERT INTO <model's table> (<fields>) VALUES (...)``, optionally skipping a taken key.

    ``fields`` are attribute names (``session_id`` for a foreign key ``session``), every column by
    default; values are given in that order. With ``skip_conflict=True`` a row whose primary key exists is not inserted and
    ``row()`` returns 0 (``ON CONFLICT (pk) DO NOTHING``, the same on SQLite and PostgreSQL): no
    savepoint, no IntegrityError to catch. Any other constraint violation still raises.
    """

    def __init__(self, model: type[models.Model], fields: Sequence[str] | None = None, *, skip_conflict: bool = False) -> None:
        self.model = model
        if fields is None:
            fields = [field.attname for field in model._meta.concrete_fields]
        self.fields = _columns(model, fields)
        self.skip_conflict = skip_conflict
        self._compiled: dict[str, tuple[str, list[Callable[[Any], Any] | None]]] = {}

    def row(self, values: Sequence[Any], *, using: str = "default") -> int:
        """Insert one row; the number of rows inserted (0 only when skipping a taken key)."""
        self._check(values)
        sql, adapters = self._statement(using)
        with connections[using].cursor() as cursor:
            cursor.execute(sql, _bind(values, adapters))
            return cursor.rowcount

    def instance(self, obj: models.Model, *, using: str = "default") -> bool:
        """Insert a model instance (its values for this statement's fields), as ``save()`` would
        have; True if inserted. The instance then counts as saved to ``using``."""
        inserted = self.row([getattr(obj, field.attname) for field in self.fields], using=using) == 1
        if inserted:
            obj._state.adding = False
            obj._state.db = using
        return inserted

    def rows(self, rows: Iterable[Sequence[Any]], *, using: str = "default") -> None:
        """Insert many rows with one statement (the driver's executemany)."""
        rows = list(rows)
        for values in rows:
            self._check(values)
        if not rows:
            return
        sql, adapters = self._statement(using)
        params = [_bind(values, adapters) for values in rows]
        with connections[using].cursor() as cursor:
            cursor.executemany(sql, params)

    def _check(self, values: Sequence[Any]) -> None:
        if len(values) != len(self.fields):
            raise ValueError(f"expected {len(self.fields)} values for {self.model.__name__}, got {len(values)}")

    def _statement(self, using: str) -> tuple[str, list[Callable[[Any], Any] | None]]:
        compiled = self._compiled.get(using)
        if compiled is None:
            compiled = self._compiled[using] = self._compile(using)
        return compiled

    def _compile(self, using: str) -> tuple[str, list[Callable[[Any], Any] | None]]:
        connection = connections[using]
        query = InsertQuery(self.model)
        # A throw-away instance: only the SQL is kept; its values are never sent.
        query.insert_values(self.fields, [self.model()], raw=False)
        [(sql, _params)] = query.get_compiler(using=using).as_sql()
        if self.skip_conflict:
            sql += f" ON CONFLICT ({connection.ops.quote_name(self.model._meta.pk.column)}) DO NOTHING"
        return sql, [_adapter(field, connection) for field in self.fields]


class Update:
    """``UPDATE <model's table> SET <fields> WHERE <key> = %s AND <where...> = %s``: rows changed.

    ``fields`` and ``where`` are attribute names; the row is found by primary key and, with
    ``where``, only while those columns hold the given values (a fence: 0 rows when they do not).
    A condition given a tuple of values is ``IN (...)``.
    """

    def __init__(self, model: type[models.Model], fields: Sequence[str], *, where: Sequence[str] = ()) -> None:
        self.model = model
        self.fields = _columns(model, fields)
        self.where = [model._meta.pk, *_columns(model, where)]
        self._compiled: dict[tuple[str, tuple[int | None, ...]], tuple[str, list[Callable[[Any], Any] | None]]] = {}

    def row(self, key: Any, values: Sequence[Any], where: Sequence[Any] = (), *, using: str = "default") -> int:
        if len(values) != len(self.fields) or len(where) != len(self.where) - 1:
            raise ValueError(f"expected {len(self.fields)} values and {len(self.where) - 1} conditions for {self.model.__name__}")
        shape = tuple(len(value) if isinstance(value, tuple) else None for value in where)
        compiled = self._compiled.get((using, shape))
        if compiled is None:
            compiled = self._compiled[using, shape] = self._compile(using, shape)
        sql, adapters = compiled
        flat = [item for value in where for item in (value if isinstance(value, tuple) else (value,))]
        with connections[using].cursor() as cursor:
            cursor.execute(sql, _bind([*values, key, *flat], adapters))
            return cursor.rowcount

    def _compile(self, using: str, shape: tuple[int | None, ...]) -> tuple[str, list[Callable[[Any], Any] | None]]:
        connection = connections[using]
        quote = connection.ops.quote_name
        assignments = ", ".join(f"{quote(field.column)} = %s" for field in self.fields)
        conditions, condition_fields = [], []
        for field, arity in zip(self.where, (None, *shape)):
            if arity is None:
                conditions.append(f"{quote(field.column)} = %s")
                condition_fields.append(field)
            else:
                conditions.append(f"{quote(field.column)} IN ({', '.join(['%s'] * arity)})")
                condition_fields.extend([field] * arity)
        sql = f"UPDATE {quote(self.model._meta.db_table)} SET {assignments} WHERE {' AND '.join(conditions)}"
        return sql, [_adapter(field, connection) for field in (*self.fields, *condition_fields)]
