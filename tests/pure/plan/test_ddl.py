"""Source declarations: name folding per flavour and the WITH properties a declaration reads."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.dialect import StreamJoinError
from streamjoin.plan import plan_program
from streamjoin.plan.catalog import SourceWindow


@dataclass
class Case:
    flavour: str
    ddl: str
    expected: dict  # SourceDef attribute -> value


CASES = {
    "ksqldb folds unquoted names, keeps quoted ones": Case(
        "ksqldb", "CREATE STREAM s (id INT KEY, `the Key` STRING, name STRING) WITH (kafka_topic='t');",
        {"name": "S", "key_columns": ("ID",), "columns": ("ID", "the Key", "NAME")}),
    "flink keeps names as written": Case(
        "flink", "CREATE TABLE s (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('topic'='t');",
        {"name": "s", "key_columns": ("id",), "columns": ("id", "name")}),
    "ksqldb FORMAT sets key and value": Case(
        "ksqldb", "CREATE TABLE s (k INT PRIMARY KEY, k2 INT PRIMARY KEY, v INT) WITH (kafka_topic='t', format='json');",
        {"key_format": "JSON", "value_format": "JSON", "key_columns": ("K", "K2")}),
    "flink format is the value format": Case(
        "flink", "CREATE TABLE s (id INT, v INT) WITH ('topic'='t', 'format'='json');",
        {"key_format": "KAFKA", "value_format": "JSON"}),
    "KEY_FORMAT and VALUE_FORMAT": Case(
        "ksqldb", "CREATE STREAM s (id INT, v INT) WITH (kafka_topic='t', key_format='NONE', value_format='delimited', "
        "value_delimiter='|');", {"key_format": "NONE", "value_format": "DELIMITED", "value_delimiter": "|"}),
    "WRAP_SINGLE_VALUE, TIMESTAMP and its format": Case(
        "ksqldb", "CREATE STREAM s (id INT KEY, ts STRING) WITH (kafka_topic='t', WRAP_SINGLE_VALUE=false, "
        "timestamp='ts', timestamp_format='yyyy-MM-dd', partitions=3);",
        {"wrap_single_value": False, "timestamp": "TS", "timestamp_format": "yyyy-MM-dd", "partitions": 3}),
    "a windowed key": Case(
        "ksqldb", "CREATE STREAM s (id INT KEY, v INT) WITH (kafka_topic='t', window_type='Hopping', window_size='5 SECONDS');",
        {"window": SourceWindow("HOPPING", 5000)}),
    "header columns: read from the headers, not the value": Case(
        "ksqldb", "CREATE TABLE s (id INT PRIMARY KEY, v INT, one BYTES HEADER('k'), "
        "every ARRAY<STRUCT<key STRING, value BYTES>> HEADERS) WITH (kafka_topic='t', value_format='KAFKA');",
        {"header_columns": (("ONE", "k"), ("EVERY", None)), "columns": ("ID", "V", "ONE", "EVERY")}),
    "a session-windowed key has no size": Case(
        "ksqldb", "CREATE STREAM s (id INT KEY, v INT) WITH (kafka_topic='t', window_type='SESSION');",
        {"window": SourceWindow("SESSION", None)}),
}


@pytest.mark.parametrize("name", CASES)
def test_declaration(name):
    case = CASES[name]
    [source] = plan_program(case.ddl, dialect=case.flavour).catalog
    for attribute, value in case.expected.items():
        actual = getattr(source, attribute)
        assert (tuple(actual) if attribute == "columns" else actual) == value, attribute


@pytest.mark.parametrize("ddl, words", [
    ("CREATE STREAM s (id INT KEY) WITH (kafka_topic='t', window_type='sliding');", "WINDOW_TYPE"),
    ("CREATE STREAM s (id INT KEY) WITH (kafka_topic='t', window_type='tumbling');", "WINDOW_SIZE"),
])
def test_rejected_declarations(ddl, words):
    with pytest.raises(StreamJoinError, match=words):
        plan_program(ddl, dialect="ksqldb")
