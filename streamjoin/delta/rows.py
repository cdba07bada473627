"""What a query's sink records become in its Delta table, checked where the records are made.

A task holds a `TableRows` (built on the driver when the query starts, with the table's schema
fixed then) and converts its sink records before any of them is produced to Kafka: a record the
table cannot take (a value it cannot read back, a BIGINT out of range, a decimal too wide) is a
dead letter and goes to neither sink, so the topic and the table never disagree, although the
results never meet on the driver. The rows that fit travel to the Delta writer as Arrow, in the
table's schema.

    row   key columns, value columns, `__ts` (epoch ms), `__tombstone` (the record deletes its key)

The schema is the existing table's when there is one (a later batch can never clash with it),
else the declared column types. A column of type ANY (a value whose type only the run knows)
takes the type of its values: each task infers it from its rows and says so in its figures
(`schema_figure`), and the batch writer unifies the tasks' schemas (`unified_schema`) before it
writes; the rows stay on the executors.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pyarrow as pa

from streamjoin.dialect.types import SqlType
from streamjoin.serde.batches import decode_columns
from streamjoin.serde.formats import DecodeError, SerdeSpec, decode

TOMBSTONE = "__tombstone"
TS = "__ts"
SEQ = "__seq"  # a row's place in its task's results (task << 32 | index): the last per key wins
_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError)


def arrow_type(t: SqlType) -> pa.DataType:
    """The Arrow type a decoded column has (Spark maps it to the matching Spark SQL type).

    Timestamps are instants in UTC: Arrow timestamp[us, UTC] is Spark's TimestampType; a value
    of type ANY has no type until its values give it one (null here).
    """
    simple = {
        "STRING": pa.string(), "BYTES": pa.binary(), "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(),
        "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(), "FLOAT": pa.float32(),
        "DOUBLE": pa.float64(), "ANY": pa.null(),  # inferred from the values (module docstring)
    }
    if t.name in simple:
        return simple[t.name]
    if t.name == "DECIMAL":
        return pa.decimal128(t.precision, t.scale)
    if t.is_timestamp:
        return pa.timestamp("us", tz="UTC")
    if t.name == "ARRAY":
        return pa.list_(arrow_type(t.elements[0]))
    if t.name == "MAP":
        return pa.map_(arrow_type(t.elements[0]), arrow_type(t.elements[1]))
    return pa.struct([pa.field(n, arrow_type(f)) for n, f in t.fields])


def declared_schema(serde: SerdeSpec) -> pa.Schema:
    """The table's schema from the query's declared output columns."""
    columns = [*serde.key_columns, *serde.payload_columns]
    return pa.schema([*(pa.field(name, arrow_type(t)) for name, t in columns),
                      pa.field(TS, pa.int64()), pa.field(TOMBSTONE, pa.bool_())])


def decoded_row(serde: SerdeSpec, key: bytes | None, value: bytes | None, ts: int) -> dict:
    """A sink record as an output row: key columns, value columns, `__ts`, and `__tombstone` for a
    deletion."""
    decoded = decode(serde, key, value, ts)
    keys = [name for name, _ in serde.key_columns]
    row = dict(zip(keys, decoded.key or (None,) * len(keys)))
    row.update(decoded.value or {})
    return {**row, TS: ts, TOMBSTONE: decoded.value is None}


@dataclass(frozen=True)
class TableRows:
    """Converts sink records into the rows of the Delta table at `path` (for its messages), in
    `schema` (see the module docstring); a merged table stores no `__tombstone` column, but its
    rows carry it to the MERGE."""

    serde: SerdeSpec
    schema: pa.Schema
    path: str

    @property
    def row_schema(self) -> pa.Schema:
        """The rows' schema: the table's, with `__tombstone` if the table has none, and `__seq`."""
        schema = self.schema if TOMBSTONE in self.schema.names else self.schema.append(pa.field(TOMBSTONE, pa.bool_()))
        return schema.append(pa.field(SEQ, pa.int64()))

    def convert(self, records: list[tuple], task: int = 0) -> tuple[pa.Table, list[tuple[int, str]]]:
        """(rows that fit, [(record index, reason)] of those that do not) for `records`, each
        (key, value, ts)."""
        table = self._by_column(records, task)
        return (table, []) if table is not None else self._by_record(records, task)

    def _by_column(self, records: list[tuple], task: int) -> pa.Table | None:
        """The rows of `records` decoded and built a column at a time (`decode_columns`, one
        Arrow array a column), where every record decodes so and every row fits; else None
        (`_by_record` then finds the ones at fault). Not for a table with untyped columns."""
        schema = self.row_schema
        if not records or any(pa.types.is_null(field.type) for field in schema):
            return None
        keys, values, times = (list(column) for column in zip(*records))
        decoded = decode_columns(self.serde, keys, values)
        if decoded is None:
            return None
        columns = {name: [None if key is None else key[index] for key in decoded.keys]
                   for index, (name, _) in enumerate(self.serde.key_columns)}
        columns.update(zip(decoded.names, decoded.columns))  # a value column wins, as in `decoded_row`
        columns.update({TS: times, TOMBSTONE: [False] * len(records),
                        SEQ: [(task << 32) | index for index in range(len(records))]})
        try:
            return pa.Table.from_pydict({name: columns[name] for name in schema.names}, schema=schema)
        except (*_ERRORS, KeyError):
            return None

    def _by_record(self, records: list[tuple], task: int) -> tuple[pa.Table, list[tuple[int, str]]]:
        rows, rejected = [], []
        for index, record in enumerate(records):
            try:
                row = decoded_row(self.serde, *record)
            except DecodeError as error:
                rejected.append((index, f"output record cannot be read back for {self.path}: {error}"))
                continue
            rows.append((index, {**row, SEQ: (task << 32) | index}))
        schema = _inferred(self.row_schema, [row for _, row in rows])
        try:
            return pa.Table.from_pylist([row for _, row in rows], schema=schema), rejected
        except _ERRORS:
            pass  # find the rows at fault, one by one
        good = []
        for index, row in rows:
            try:
                pa.Table.from_pylist([row], schema=schema)
                good.append(row)
            except _ERRORS as error:
                rejected.append((index, f"output row does not fit the Delta table {self.path}: {error}"))
        return pa.Table.from_pylist(good, schema=schema), sorted(rejected)


def _inferred(schema: pa.Schema, rows: list[dict]) -> pa.Schema:
    """`schema` with each untyped (ANY) column typed as its values are; still null where they
    are all null or do not agree (those rows are then rejected)."""
    for index, field in enumerate(schema):
        if pa.types.is_null(field.type):
            try:
                found = pa.array([row.get(field.name) for row in rows]).type
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                continue
            schema = schema.set(index, field.with_type(found))
    return schema


def schema_figure(schema: pa.Schema) -> str:
    """A task's row schema as it reports it with its figures (text)."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def unified_schema(figures: list[str], base: pa.Schema) -> pa.Schema:
    """One schema for a batch's rows from the tasks' (`schema_figure`): an ANY column takes the
    type its values had (int and float: float); one with no value in the batch is a string."""
    schemas = [pa.ipc.read_schema(pa.py_buffer(base64.b64decode(f))) for f in figures] or [base]
    unified = pa.unify_schemas(schemas, promote_options="permissive")
    for index, field in enumerate(unified):
        if pa.types.is_null(field.type):
            unified = unified.set(index, field.with_type(pa.string()))
    return unified
