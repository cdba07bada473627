"""What a task makes of one input record: the row its expressions see, and, when the record
cannot be processed, which errors are the data's fault (the record or result goes to the dead
letters, the task goes on) and how a dead letter names its cause."""

from __future__ import annotations

from typing import Any, Callable

from streamjoin.expr.compile import ROWTIME_FIELD
from streamjoin.expr.core import ExpressionError
from streamjoin.runtime.contract import InputRow
from streamjoin.serde.batches import DecodedColumns
from streamjoin.serde.formats import DecodedRecord, SerdeSpec

# What evaluating SQL over one bad value, or encoding it, can raise: the record (or result) goes to
# the dead letters. Failures of the machinery (state store, I/O: RuntimeError, OSError) are not
# among them and still fail the batch, which Spark retries from the checkpoint.
DATA_ERRORS = (ExpressionError, ArithmeticError, LookupError, TypeError, ValueError, AttributeError, RecursionError)


def describe(error: Exception) -> str:
    """A reason for a dead letter: our own errors' messages as they are, others with their kind."""
    if type(error).__module__.startswith("streamjoin."):
        return str(error)
    return f"{type(error).__name__}: {error}"


def where(row: InputRow) -> str:
    """The record a dead letter is about."""
    return f"{row.topic}[{row.partition}]@{row.offset}"


PARTITION_FIELD, OFFSET_FIELD = "ROWPARTITION", "ROWOFFSET"


def input_row(serde: SerdeSpec, record: DecodedRecord, read: InputRow) -> dict[str, Any]:
    """The columns of a decoded record with a value: key columns, value columns, then the
    pseudo-columns (`streamjoin.expr.compile.RECORD_FIELDS`)."""
    key = record.key
    names = serde.key_names  # a windowed key's bounds follow its columns (see below)
    row = ({names[0]: key[0]} if len(names) == 1 else dict(zip(names, key))) if key else {}
    row.update(record.value)
    # the pseudo-columns (streamjoin.expr.compile.RECORD_FIELDS): event time, where it was read
    row[ROWTIME_FIELD] = record.ts
    row[PARTITION_FIELD] = read.partition
    row[OFFSET_FIELD] = read.offset
    if serde.window is not None and key is not None:  # a windowed key ends with its bounds
        row["WINDOWSTART"], row["WINDOWEND"] = key[-2:]
    for name, what in serde.read_metadata:  # Flink METADATA FROM 'topic' / 'partition' / 'offset'
        row[name] = getattr(read, what)
    return row


ColumnSource = Callable[[DecodedRecord, InputRow], Any]


def column_source(serde: SerdeSpec, column: str) -> ColumnSource | None:
    """What `input_row(serde, record, read).get(column)` is, read from (record, read) without
    building the row; None where it is not worth reading so (a windowed key, or a column that is
    both a key and a value column)."""
    if column == ROWTIME_FIELD:
        return lambda record, read: record.ts
    if column == PARTITION_FIELD:
        return lambda record, read: read.partition
    if column == OFFSET_FIELD:
        return lambda record, read: read.offset
    if serde.window is not None:
        return None
    read_metadata = dict(serde.read_metadata)
    if column in read_metadata:
        what = read_metadata[column]
        return lambda record, read: getattr(read, what)
    in_value = column in {name for name, t in serde.value_columns if not t.proctime}
    if column in serde.key_names:
        if in_value:
            return None
        index = serde.key_names.index(column)
        return lambda record, read: record.key[index] if record.key else None
    if in_value:
        return lambda record, read: record.value.get(column)
    return lambda record, read: None


def column_values(serde: SerdeSpec, column: str, rows, decoded: DecodedColumns) -> list | None:
    """What `column_source(serde, column)` reads from each record of a run decoded column-wise
    (`decode_columns`), as one list; None where `column_source` is None."""
    if column == ROWTIME_FIELD:
        return [row.ts for row in rows]
    if column == PARTITION_FIELD:
        return [row.partition for row in rows]
    if column == OFFSET_FIELD:
        return [row.offset for row in rows]
    if serde.window is not None:
        return None
    read_metadata = dict(serde.read_metadata)
    if column in read_metadata:
        what = read_metadata[column]
        return [getattr(row, what) for row in rows]
    in_value = column in {name for name, t in serde.value_columns if not t.proctime}
    if column in serde.key_names:
        if in_value:
            return None
        index = serde.key_names.index(column)
        return [key[index] if key else None for key in decoded.keys]
    if in_value and column in decoded.names:
        return decoded.columns[decoded.names.index(column)]
    return [None] * len(rows)
