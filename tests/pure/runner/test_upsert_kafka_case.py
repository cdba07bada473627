"""Flink's upsert-kafka tables end to end, in process (`streamjoin.runner.local`): a table keyed by
its primary key in the JSON key format (an object, as Flink writes a row) read and written by
INSERT INTO another upsert-kafka table, a null value deleting its key. A result's value holds
every column (Flink's default 'value.fields-include' = 'ALL')."""

from __future__ import annotations

import json

import pytest

from streamjoin.runner.cases import Case, InputRecord
from streamjoin.runner.local import local_records
from streamjoin.runner.planned import plan_case


def _table(name: str, include: str) -> str:
    return (f"CREATE TABLE {name} (id STRING, v INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = "
            f"'upsert-kafka', 'topic' = '{name}', 'key.format' = 'json', 'value.format' = 'json', "
            f"'value.fields-include' = '{include}')")


@pytest.mark.parametrize("source_include", ["ALL", "EXCEPT_KEY"])  # read alike: the key column comes from the key
def test_an_upsert_kafka_table_copied_by_insert_into(source_include):
    case = Case("upsert-kafka copy", "flink", "INSERT INTO dst SELECT id, v FROM src;",
                setup=(_table("src", source_include), _table("dst", "ALL")),
                inputs=(InputRecord("src", None, 1, "a", {"v": 1}), InputRecord("src", None, 2, "a", {"v": 2}),
                        InputRecord("src", None, 3, "b", {"v": 3}), InputRecord("src", None, 4, "b", None)))
    planned = plan_case(case, "")
    written = [(json.loads(r.key), None if r.value is None else json.loads(r.value))
               for r in local_records(case, planned)["dst"]]
    # the source's key bytes are objects too (the inputs were written with its serde)
    assert json.loads(local_records(case, planned)["src"][0].key) == {"id": "a"}
    assert written[1] == ({"id": "a"}, {"id": "a", "v": 2})
    assert written[-1] == ({"id": "b"}, None)  # the deleted key's tombstone
