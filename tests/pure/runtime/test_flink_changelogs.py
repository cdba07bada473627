"""Flink regular joins over updating inputs, end to end in-process: a table joined on columns
other than its key is normalized (its deletions carry their rows), an aggregate's result is a
changelog whose retractions withdraw the rows it replaces, and IN over an aggregate."""

from __future__ import annotations

from streamjoin.plan import nodes as n
from streamjoin.plan.changelog_nodes import ChangelogNormalize
from streamjoin.plan import plan_program
from streamjoin.plan.catalog import Catalog
from tests.pure.runtime.sql_case import row, run_sql, source, values

TABLES = [source("lt", {"k": "INT", "v": "STRING"}, key=["k"]), source("rt", {"k": "INT", "w": "STRING"}, key=["k"]),
          source("s", {"g": "STRING", "x": "INT"})]


def test_a_table_joined_on_a_value_column_retracts_what_its_update_replaces():
    # lt (key k) LEFT JOIN rt (key k) ON l.v = r.k: the result is keyed by l.k. lt 1 -> '10' joins
    # rt 10; lt 1 -> '11' replaces that pair by (1, eleven); deleting lt 1 deletes key 1.
    inputs = [row("rt", 1, {"w": "ten"}, key=10), row("rt", 2, {"w": "eleven"}, key=11),
              row("lt", 3, {"v": "10"}, key=1), row("lt", 4, {"v": "11"}, key=1), row("lt", 5, None, key=1)]
    sql = "SELECT l.k, r.w FROM lt l LEFT JOIN rt r ON CAST(l.v AS INT) = r.k"
    assert run_sql(sql, TABLES, inputs) == [(1, {"k": 1, "w": "ten"}), (1, None), (1, {"k": 1, "w": "eleven"}),
                                            (1, None)]


def test_the_normalized_side_is_planned_and_the_keyed_side_read_as_upserts():
    [query] = plan_program("SELECT l.k, r.w FROM lt l JOIN rt r ON l.v = r.k", Catalog.from_case_sources(TABLES),
                           "flink").queries
    join = query.project.child
    assert isinstance(join.left, ChangelogNormalize) and not join.left_upsert
    assert isinstance(join.right, n.Source) and join.right_upsert


def test_a_join_with_an_aggregate_reads_its_retractions():
    # counts per g: a 1, a 2, b 1 ; joined with rt on the count: rt 1 'one', rt 2 'two'.
    # a's count 1 -> 2 retracts (a, one) and adds (a, two); b's 1 adds (b, one).
    inputs = [row("rt", 1, {"w": "one"}, key=1), row("rt", 2, {"w": "two"}, key=2), row("s", 3, {"g": "a", "x": 0}),
              row("s", 4, {"g": "a", "x": 0}), row("s", 5, {"g": "b", "x": 0})]
    sql = "SELECT c.g, r.w FROM (SELECT g, COUNT(*) AS cnt FROM s GROUP BY g) c JOIN rt r ON c.cnt = r.k"
    out = run_sql(sql, TABLES, inputs)
    # keyed by g (the aggregate's key; each count joins one rt row). As in Flink, the -U of a's
    # count retracts (a, one): a tombstone of a, then its new row.
    assert out == [("a", {"g": "a", "w": "one"}), ("a", None), ("a", {"g": "a", "w": "two"}),
                   ("b", {"g": "b", "w": "one"})]
