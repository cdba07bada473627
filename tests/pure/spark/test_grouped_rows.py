"""`grouped_rows.load_stream` against pyspark's own `load_stream` for transformWithStateInPandas:
on the same Arrow stream, the same groups, keys, chunks (where a group's frames are cut) and frames
(columns, dtypes, values). Randomized streams: columns of every kind pyspark converts (integers,
floats, booleans, strings, bytes, timestamps, dates, decimals, lists, structs), nulls in any
column, grouping keys of one or two columns changing inside a batch and across batches, batches
of one row, pyspark's record and byte limits, and integers as pandas' extension dtype."""

from __future__ import annotations

import datetime
import decimal
import io
import random
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer

from streamjoin.spark.grouped_rows import PYSPARK_LOAD_STREAM, UNLIMITED_BYTES, load_stream

# (arrow type, a random non-null value); the key-capable ones first.
KINDS = {
    "int32": (pa.int32(), lambda r: r.randint(-3, 3)),
    "int64": (pa.int64(), lambda r: r.randint(-2**40, 2**40)),
    "string": (pa.string(), lambda r: r.choice(["a", "b", "", "ü"])),
    "binary": (pa.binary(), lambda r: r.choice([b"", b"\x00", b"xy"])),
    "int8": (pa.int8(), lambda r: r.randint(-128, 127)),
    "int16": (pa.int16(), lambda r: r.randint(-5, 5)),
    "float32": (pa.float32(), lambda r: r.choice([0.5, -1.25, float("inf")])),
    "float64": (pa.float64(), lambda r: r.random()),
    "bool": (pa.bool_(), lambda r: r.random() < 0.5),
    "timestamp": (pa.timestamp("us", tz="UTC"),
                  lambda r: datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
                  + datetime.timedelta(microseconds=r.randint(0, 10**9))),
    "date": (pa.date32(), lambda r: datetime.date(2026, 1, 1) + datetime.timedelta(days=r.randint(0, 99))),
    "decimal": (pa.decimal128(10, 2), lambda r: decimal.Decimal(r.randint(-10**5, 10**5)) / 100),
    "list": (pa.list_(pa.int64()), lambda r: [r.randint(0, 9) for _ in range(r.randint(0, 2))]),
    "struct": (pa.struct([("a", pa.int64()), ("b", pa.string())]), lambda r: {"a": r.randint(0, 3), "b": "s"}),
}
KEY_KINDS = ["int32", "int64", "string", "binary"]


@dataclass(frozen=True)
class Case:
    seed: int
    max_records: int  # pyspark's maxRecordsPerBatch: 0 for none
    max_bytes: int = UNLIMITED_BYTES
    int_extension: bool = False  # spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype


CASES = [Case(seed, max_records) for seed, max_records in enumerate([0, 1, 2, 3, 7, 10_000] * 6)] + \
        [Case(100 + seed, 0, max_bytes) for seed, max_bytes in enumerate([1, 40, 300, 2_000] * 3)] + \
        [Case(200 + seed, 5, 500) for seed in range(6)] + \
        [Case(300 + seed, max_records, int_extension=True) for seed, max_records in enumerate([0, 2, 7] * 4)]


def random_stream(r: random.Random) -> tuple[bytes, list[int]]:
    """An Arrow stream of batches whose rows come in runs of equal keys; the key columns' offsets."""
    names = r.sample(sorted(KINDS), r.randint(1, 6))
    key_names = r.sample(KEY_KINDS, r.randint(1, 2))
    columns = key_names + [n for n in names if n not in key_names]
    r.shuffle(columns)
    schema = pa.schema([(f"c_{name}", KINDS[name][0]) for name in columns])
    null_share = r.choice([0.0, 0.0, 0.2, 0.6])
    rows, key = [], None
    for _ in range(r.randint(0, 60)):
        if key is None or r.random() < 0.3:  # a new key (now and then one seen before)
            key = {n: None if r.random() < null_share / 3 else KINDS[n][1](r) for n in key_names}
        rows.append({f"c_{n}": key[n] if n in key else (None if r.random() < null_share else KINDS[n][1](r))
                     for n in columns})
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, schema) as writer:
        while rows:
            size = r.choice([1, 2, 5, 20])
            writer.write_batch(pa.RecordBatch.from_pylist(rows[:size], schema=schema))
            rows = rows[size:]
    return sink.getvalue(), [columns.index(n) for n in key_names]


def serializer(case: Case, key_offsets: list[int]) -> TransformWithStateInPandasSerializer:
    ser = TransformWithStateInPandasSerializer(
        timezone="UTC", safecheck=False, assign_cols_by_name=True, prefer_int_ext_dtype=case.int_extension,
        arrow_max_records_per_batch=case.max_records, arrow_max_bytes_per_batch=case.max_bytes,
        int_to_decimal_coercion_enabled=False)
    ser.key_offsets = key_offsets
    return ser


def loaded(load, case: Case, data: bytes, key_offsets: list[int]) -> list:
    """Everything `load` yields, the groups' chunks drawn out; keys as text with their parts'
    types (a NULL integer key is NaN, unequal to itself); and the error that ended it, if any
    (pyspark cannot compare an extension dtype's NULL key with another)."""
    out = []
    try:
        for mode, key, chunks in load(serializer(case, key_offsets), io.BytesIO(data)):
            out.append((mode, _text(key), None if chunks is None else [(_text(k), frame) for k, frame in chunks]))
    except TypeError as error:
        out.append(("raised", str(error), None))
    return out


def _text(key) -> str:
    return repr(key) + repr([type(part) for part in key or ()])


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"seed{c.seed}-rec{c.max_records}-bytes{c.max_bytes}")
def test_same_groups_chunks_and_frames_as_pyspark(case: Case) -> None:
    data, key_offsets = random_stream(random.Random(case.seed))
    theirs = loaded(PYSPARK_LOAD_STREAM, case, data, key_offsets)
    ours = loaded(load_stream, case, data, key_offsets)
    assert [(mode, key) for mode, key, _ in ours] == [(mode, key) for mode, key, _ in theirs]
    for (_, _, our_chunks), (_, _, their_chunks) in zip(ours, theirs):
        if their_chunks is None:
            assert our_chunks is None
            continue
        assert [k for k, _ in our_chunks] == [k for k, _ in their_chunks]
        assert [len(f) for _, f in our_chunks] == [len(f) for _, f in their_chunks]
        for (_, our_frame), (_, their_frame) in zip(our_chunks, their_chunks):
            assert list(our_frame.dtypes) == list(their_frame.dtypes)
            pd.testing.assert_frame_equal(our_frame, their_frame, check_exact=True)


def test_the_streams_cover_what_they_claim() -> None:
    """The random streams hold keys that change inside a batch, groups cut by the limits, and
    NULLs: not a vacuous comparison."""
    within, cut, nulls, raised = 0, 0, 0, 0
    for case in CASES:
        data, key_offsets = random_stream(random.Random(case.seed))
        batches = list(pa.ipc.open_stream(io.BytesIO(data)))
        within += any(len({tuple(b.column(o)[i].as_py() for o in key_offsets) for i in range(b.num_rows)}) > 1
                      for b in batches)
        nulls += any(b.column(i).null_count for b in batches for i in range(b.num_columns))
        groups = loaded(PYSPARK_LOAD_STREAM, case, data, key_offsets)
        cut += any(len(chunks) > 1 for _, _, chunks in groups if chunks)
        raised += groups[-1][0] == "raised"
    assert within > 10 and cut > 10 and nulls > 10 and raised < len(CASES) // 10
