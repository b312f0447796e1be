"""INSERT, UPDATE and SELECT statements compiled once, for the rows every run writes and reads.

``Model.save()``, ``bulk_create()`` and ``QuerySet.update()`` compile their SQL on every call:
Django's compilers walk every field of every row, preparing each value through the field's
``get_db_prep_save``, and resolve every filter. For the session, run, event and job rows of a run
that walk cost more than the statements themselves (bench/README.md). ``Insert`` asks Django's
compiler for its statement once per database, so the SQL (quoting, placeholders) is Django's own;
``Update`` writes ``SET`` and ``WHERE`` lists of plain columns. Both bind values with only the
conversions they need: JSON and datetime values through Django's adapters, strings and numbers as
they are.

``pipelined()`` sends the statements of a block to PostgreSQL without waiting for each answer.
``Select`` does the same for a read that runs for every run (a queryset compiled once, its values
swapped per call, rows turned into instances the way the queryset would).

They bypass ``save()``: no signals, no field defaults (Django's defaults are not the database's: a
column left out of an INSERT must be nullable). Callers give every column's value.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from datetime import timezone as dt_timezone
from typing import Any

from django.db import connections, models
from django.db.models.query import get_related_populators
from django.db.models.sql import InsertQuery, Query

from .tenancy import marked, queryset_sql_reason

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
        return _datetimes(connection)
    if type(field) is models.JSONField:
        return _json(field, connection)
    return lambda value: field.get_db_prep_save(value, connection)


def _json(field: models.JSONField, connection: Any) -> Callable[[Any], Any]:
    """A dict or a list goes straight to the backend's JSON adapter, which is what
    ``JSONField.get_db_prep_save`` comes to for one, without its checks for expressions (two
    missed ``hasattr``, each an exception made and caught): ~8,000 instructions a value, and a run
    binds about 15 (its events, input, output, state)."""
    adapt, encoder = connection.ops.adapt_json_value, field.encoder

    def adapted(value: Any) -> Any:
        if type(value) is dict or type(value) is list:
            return adapt(value, encoder)
        return field.get_db_prep_save(value, connection)

    return adapted


# Per database alias: the driver's form of the UTC datetimes bound lately. A run writes the same
# few instants (its start, its end, "now") into many columns of several statements: 15 values, 5
# distinct. Django's conversion (made naive in the connection's time zone, then str()) costs
# about 15,000 instructions a value; equal instants convert alike, so each is converted once.
# Only UTC ones (timezone.now()'s): two datetimes of one other zone compare equal by their wall
# clock, even an hour apart in a DST fold.
_DATETIMES: dict[str, dict[datetime, Any]] = {}
_DATETIMES_KEPT = 64


def _datetimes(connection: Any) -> Callable[[Any], Any]:
    adapt = connection.ops.adapt_datetimefield_value
    kept = _DATETIMES.setdefault(connection.alias, {})

    def adapted(value: Any) -> Any:
        if type(value) is not datetime or value.tzinfo is not dt_timezone.utc:
            return adapt(value)
        try:
            return kept[value]
        except KeyError:
            pass
        if len(kept) >= _DATETIMES_KEPT:
            kept.clear()
        kept[value] = converted = adapt(value)
        return converted

    return adapted


def _columns(model: type[models.Model], names: Sequence[str]) -> list[models.Field]:
    by_attname = {field.attname: field for field in model._meta.concrete_fields}
    unknown = [name for name in names if name not in by_attname]
    if unknown:
        raise ValueError(f"{model.__name__} has no column(s) {', '.join(unknown)}")
    return [by_attname[name] for name in names]


def _bind(values: Sequence[Any], adapters: Sequence[Callable[[Any], Any] | None]) -> list[Any]:
    return [value if adapt is None else adapt(value) for value, adapt in zip(values, adapters)]


class Pending:
    """The row count of a statement that may still be on its way (see ``pipelined()``)."""

    def __init__(self, connection: Any, cursor: Any, count: int | None = None) -> None:
        self.connection, self.cursor, self._count = connection, cursor, count

    def count(self) -> int:
        if self._count is None:
            try:
                if self.cursor.rowcount < 0:  # not answered yet: the pipeline is still open
                    with self.connection.wrap_database_errors:
                        self.connection.agno_pipeline.sync()
                self._count = self.cursor.rowcount
            finally:
                self.cursor.close()
        return self._count


def _send(using: str, sql: str, params: Sequence[Any]) -> Pending:
    connection = connections[using]
    if getattr(connection, "agno_pipeline", None) is None:  # the answer comes with the statement
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return Pending(None, None, cursor.rowcount)
    cursor = connection.cursor()  # kept open until its answer is read
    try:
        cursor.execute(sql, params)
    except BaseException:
        cursor.close()
        raise
    return Pending(connection, cursor)


@contextmanager
def pipelined(using: str = "default") -> Iterator[None]:
    """Send the block's statements without waiting for each answer (PostgreSQL's pipeline mode).

    psycopg sends each statement at once and reads the answers when one is needed: a fetch,
    ``Pending.count()``, or the block's end, which waits for them all. The server still runs them
    one after another, in order, each with a snapshot taken when it starts; only the waits go.
    Inside ``transaction.atomic()`` the BEGIN travels with the first statement, so a transaction
    of five statements costs two round trips (the block's end, then the COMMIT) instead of seven.
    An error surfaces, as Django's exception, where the answers are read: so code that catches a
    statement's error at the statement (an IntegrityError around a savepoint, say) must not run
    inside. Elsewhere than on PostgreSQL, and when already pipelined, the block runs as it is.
    """
    connection = connections[using]
    if connection.vendor != "postgresql" or getattr(connection, "agno_pipeline", None) is not None:
        yield
        return
    connection.ensure_connection()
    with connection.wrap_database_errors:
        with connection.connection.pipeline() as pipeline:
            connection.agno_pipeline = pipeline
            try:
                yield
            finally:
                connection.agno_pipeline = None


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
        """Insert one row; the number of rows inserted (0 only when skipping a taken key). Inside
        ``pipelined()``, waits for the answer."""
        return self.send(values, using=using).count()

    def send(self, values: Sequence[Any], *, using: str = "default") -> Pending:
        """Insert one row; inside ``pipelined()``, without waiting for the answer."""
        self._check(values)
        sql, adapters = self._statement(using)
        return _send(using, sql, _bind(values, adapters))

    def instance(self, obj: models.Model, *, using: str = "default", wait: bool = True) -> bool:
        """Insert a model instance (its values for this statement's fields), as ``save()`` would
        have; True if inserted. The instance then counts as saved to ``using``.

        ``wait=False`` (a statement that skips no conflict): inside ``pipelined()`` the answer is
        not waited for; an error surfaces where the block's answers are read."""
        if not wait and self.skip_conflict:
            raise ValueError("an insert that may skip its row must wait for its answer")
        pending = self.send([getattr(obj, field.attname) for field in self.fields], using=using)
        inserted = not wait or pending.count() == 1
        if inserted:
            obj._state.adding = False
            obj._state.db = using
        return inserted

    def rows(self, rows: Iterable[Sequence[Any]], *, using: str = "default", converted: bool = False) -> None:
        """Insert many rows with one statement (the driver's executemany).

        ``converted=True``: every value is already what the driver takes, as the field's own
        conversion would give it for this database (a JSON value encoded by
        ``connection.ops.adapt_json_value``, a datetime as the backend stores it: text on
        SQLite), and is bound as it is. For a writer that makes its values in that form to begin
        with, such as the span writer's timestamps (traces.exporter)."""
        rows = list(rows)
        for values in rows:
            self._check(values)
        if not rows:
            return
        sql, adapters = self._statement(using)
        params = rows if converted else [_bind(values, adapters) for values in rows]
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
    A condition given a tuple of values is ``IN (...)``, given None ``IS NULL``. On an owned
    model (core.tenancy) ``where`` names ``user_id``: the row's owner is part of its key.
    """

    def __init__(self, model: type[models.Model], fields: Sequence[str], *, where: Sequence[str] = ()) -> None:
        from .tenancy import OwnedModel

        if issubclass(model, OwnedModel) and "user_id" not in where:
            raise ValueError(f"Update({model.__name__}): an owned row is keyed by its owner too; add 'user_id' to where")
        self.model = model
        self.fields = _columns(model, fields)
        self.where = [model._meta.pk, *_columns(model, where)]
        self._compiled: dict[tuple[str, tuple[int | str | None, ...]], tuple[str, list[Callable[[Any], Any] | None]]] = {}

    def row(self, key: Any, values: Sequence[Any], where: Sequence[Any] = (), *, using: str = "default") -> int:
        """Update the row; the number of rows changed (inside ``pipelined()``, waits for it)."""
        return self.send(key, values, where, using=using).count()

    def send(self, key: Any, values: Sequence[Any], where: Sequence[Any] = (), *, using: str = "default") -> Pending:
        """Update the row; inside ``pipelined()``, without waiting for the answer."""
        if len(values) != len(self.fields) or len(where) != len(self.where) - 1:
            raise ValueError(f"expected {len(self.fields)} values and {len(self.where) - 1} conditions for {self.model.__name__}")
        shape = tuple(len(value) if isinstance(value, tuple) else "null" if value is None else None for value in where)
        compiled = self._compiled.get((using, shape))
        if compiled is None:
            compiled = self._compiled[using, shape] = self._compile(using, shape)
        sql, adapters = compiled
        flat = [item for value in where if value is not None for item in (value if isinstance(value, tuple) else (value,))]
        return _send(using, sql, _bind([*values, key, *flat], adapters))

    def _compile(self, using: str, shape: tuple[int | str | None, ...]) -> tuple[str, list[Callable[[Any], Any] | None]]:
        connection = connections[using]
        quote = connection.ops.quote_name
        assignments = ", ".join(f"{quote(field.column)} = %s" for field in self.fields)
        conditions, condition_fields = [], []
        for field, arity in zip(self.where, (None, *shape)):
            if arity == "null":
                conditions.append(f"{quote(field.column)} IS NULL")
            elif arity is None:
                conditions.append(f"{quote(field.column)} = %s")
                condition_fields.append(field)
            else:
                conditions.append(f"{quote(field.column)} IN ({', '.join(['%s'] * arity)})")
                condition_fields.extend([field] * arity)
        sql = f"UPDATE {quote(self.model._meta.db_table)} SET {assignments} WHERE {' AND '.join(conditions)}"
        return sql, [_adapter(field, connection) for field in (*self.fields, *condition_fields)]


class Select:
    """A queryset's ``SELECT``, compiled once per database and shape, its values swapped per call.

    ``build(*args)`` returns the queryset, filtered (and scoped, for an owned model) as the
    caller needs; ``Select`` calls it with stand-ins for the arguments, once per database and per
    pattern of None arguments (``user_id IS NULL`` is not ``user_id = %s``), and finds where each
    stand-in went in the statement's parameters. Arguments are strings or None. Rows become
    instances as the queryset would make them: converters applied, ``select_related`` objects
    attached. What the queryset evaluates lazily (``prefetch_related``, known related objects)
    is refused at compile time.
    """

    def __init__(self, build: Callable[..., models.QuerySet]) -> None:
        self.build = build
        self._compiled: dict[tuple[str, tuple[bool, ...]], _CompiledSelect] = {}

    def all(self, *args: str | None, using: str = "default") -> list[models.Model]:
        return self._statement(args, using).fetch(args)

    def one(self, *args: str | None, using: str = "default") -> models.Model:
        """The single row; the model's DoesNotExist (or MultipleObjectsReturned) otherwise."""
        compiled = self._statement(args, using)
        rows = compiled.fetch(args)
        if len(rows) == 1:
            return rows[0]
        model = compiled.model
        if not rows:
            raise model.DoesNotExist(f"{model.__name__} matching query does not exist.")
        raise model.MultipleObjectsReturned(f"get() returned more than one {model.__name__}")

    def _statement(self, args: Sequence[str | None], using: str) -> _CompiledSelect:
        key = (using, tuple(arg is None for arg in args))
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = _CompiledSelect(self.build, args, using)
        return compiled


class _CompiledSelect:
    def __init__(self, build: Callable[..., models.QuerySet], args: Sequence[str | None], using: str) -> None:
        stand_ins = [None if arg is None else f"\x00agno-select-{i}\x00" for i, arg in enumerate(args)]
        queryset = build(*stand_ins)
        # An owned model's read says whose rows it wants, as any other; an unscoped() one's SQL
        # runs marked with its reason.
        self.unscoped_reason = queryset_sql_reason(queryset)
        if queryset._prefetch_related_lookups or queryset._known_related_objects:
            raise ValueError("Select compiles one statement: no prefetch_related, no related managers")
        compiler = queryset.query.get_compiler(using=using)
        self.sql, params = compiler.as_sql()
        position = {stand_in: i for i, stand_in in enumerate(stand_ins) if stand_in is not None}
        # Each parameter: the index of the argument it stands for, or a constant of the query.
        self.params: list[tuple[int | None, Any]] = [(position.get(param) if isinstance(param, str) else None, param) for param in params]
        missing = set(position.values()) - {index for index, _ in self.params}
        if missing:
            raise ValueError(f"Select: argument(s) {sorted(missing)} did not reach the statement's parameters")
        self.compiler, self.using = compiler, using
        fields = [column[0] for column in compiler.select[: compiler.col_count]]
        self.converters = compiler.get_converters(fields)
        klass_info = compiler.klass_info
        self.model = klass_info["model"]
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        self.span = slice(start, end)
        self.init_list = [column[0].target.attname for column in compiler.select[self.span]]
        self.related = get_related_populators(klass_info, compiler.select, using)
        self.annotations = list(compiler.annotation_col_map.items())

    def fetch(self, args: Sequence[str | None]) -> list[models.Model]:
        params = [value if index is None else args[index] for index, value in self.params]
        with connections[self.using].cursor() as cursor, marked(self.unscoped_reason):
            cursor.execute(self.sql, params)
            rows = cursor.fetchall()
        if self.converters:
            rows = self.compiler.apply_converters(rows, self.converters)
        objects = []
        for row in rows:
            obj = self.model.from_db(self.using, self.init_list, row[self.span])
            for populator in self.related:
                populator.populate(row, obj)
            for name, position in self.annotations:
                setattr(obj, name, row[position])
            objects.append(obj)
        return objects


_readers: dict[tuple[type[models.Model], str, tuple[str, ...]], tuple[list[str], list[int], dict[int, Any], Any]] = {}


def instances(model: type[models.Model], cursor: Any, *, using: str = "default") -> list[models.Model]:
    """The rows a cursor holds (``SELECT *``, ``RETURNING *``) as instances of ``model``, with the
    conversions Django applies to a queryset's rows; what ``raw()`` does, prepared once per shape.
    A table's column order need not be the model's field order (``from_db`` wants the latter)."""
    names = tuple(column[0] for column in cursor.description)
    reader = _readers.get((model, using, names))
    if reader is None:
        by_column = {field.column: field for field in model._meta.concrete_fields}
        unknown = [name for name in names if name not in by_column]
        if unknown:
            raise ValueError(f"{model.__name__} has no column(s) {', '.join(unknown)}")
        position = {name: i for i, name in enumerate(names)}
        present = [field for field in model._meta.concrete_fields if field.column in position]
        compiler = Query(model).get_compiler(using=using)  # for its converters only
        converters = compiler.get_converters([by_column[name].get_col(model._meta.db_table) for name in names])
        order = [position[field.column] for field in present]
        reader = _readers[model, using, names] = ([field.attname for field in present], order, converters, compiler)
    attnames, order, converters, compiler = reader
    rows = cursor.fetchall()
    if converters:
        rows = compiler.apply_converters(rows, converters)
    return [model.from_db(using, attnames, [row[i] for i in order]) for row in rows]
