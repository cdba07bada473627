"""Flink's Kafka METADATA columns (`SerdeSpec.metadata_columns`): `headers` is decoded from the
record (each key's last value), `topic`, `partition` and `offset` are filled where the record is
read (`streamjoin.runtime.records`), on both the row and the column-at-a-time paths. A key or type
Flink's Kafka connector does not have is a planning error (tests/pure/plan/bad_sql.py)."""

from __future__ import annotations

import pytest

from streamjoin.plan import plan_program
from streamjoin.plan.catalog import Catalog
from streamjoin.runtime.compiler import source_serde
from streamjoin.runtime.contract import InputRow
from streamjoin.runtime.records import column_source, input_row
from streamjoin.serde.formats import decode

DDL = """CREATE TABLE clicks (
  id STRING, url STRING,
  part INT METADATA FROM 'partition' VIRTUAL,
  off BIGINT METADATA FROM 'offset' VIRTUAL,
  src STRING METADATA FROM 'topic' VIRTUAL,
  hdrs MAP<STRING, BYTES> METADATA FROM 'headers' VIRTUAL
) WITH ('connector' = 'kafka', 'topic' = 'clicks', 'value.format' = 'json')"""
SPEC = source_serde(plan_program(DDL, Catalog(), "flink").catalog.get("clicks"))
READ = InputRow("clicks", 3, 41, 1_000, None, b'{"id": "c1", "url": "/a", "part": 9, "off": 9}',
                (("trace", b"1"), ("user", None), ("trace", b"2")))
ROW = {"id": "c1", "url": "/a", "part": 3, "off": 41, "src": "clicks", "hdrs": {"trace": b"2", "user": None}}


def test_the_metadata_columns_of_a_read_record():
    record = decode(SPEC, READ.key, READ.value, READ.ts, READ.headers)
    row = input_row(SPEC, record, READ)
    assert {name: row[name] for name in ROW} == ROW  # value fields named like them are not read


@pytest.mark.parametrize("column", ["part", "off", "src", "url"])
def test_the_column_path_reads_the_same(column):
    record = decode(SPEC, READ.key, READ.value, READ.ts, READ.headers)
    assert column_source(SPEC, column)(record, READ) == ROW[column]
