"""ASOF JOIN ... MATCH_CONDITION in SQL: parsing in every flavour (with round trip), the plan
node and its EXPLAIN line, and one test per rejection (rule, words, position). The data runs
are in test_asof_sql_run.py."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from sqlglot import exp

from streamjoin.plan.catalog import Catalog
from streamjoin.dialect import FLAVOURS, dialect_for, parse
from streamjoin.plan import explain, plan_program
from streamjoin.plan import nodes as n
from tests.pure.plan.rejections import Rejected, assert_rejected, source as _source



CATALOG = Catalog.from_case_sources([
    _source("trades", "stream", ["tid"], {"tid": "STRING", "sym": "STRING", "tt": "BIGINT"}, timestamp="tt"),
    _source("quotes", "stream", ["sym"], {"sym": "STRING", "bid": "INT", "qt": "BIGINT"}, timestamp="qt"),
    _source("ticks", "stream", ["sym"], {"sym": "STRING", "px": "INT"}),  # no timestamp column: ROWTIME
    _source("wide", "stream", ["sym"], {"sym": "STRING", "px": "INT"}, partitions=2),
    _source("fx", "table", ["sym"], {"sym": "STRING", "rate": "INT"}),
])
JOIN = "SELECT t.tid, q.bid FROM trades t {} quotes q {}"
MATCH = "MATCH_CONDITION (t.tt >= q.qt)"


@dataclass
class Parsed:
    sql: str
    side: str | None  # the join's side as sqlglot keeps it
    kind: str | None
    on: bool


PARSED = {
    "asof": Parsed(JOIN.format("ASOF JOIN", MATCH), None, None, False),
    "asof on": Parsed(JOIN.format("ASOF JOIN", MATCH + " ON t.sym = q.sym"), None, None, True),
    "left asof (Snowflake order)": Parsed(JOIN.format("LEFT ASOF JOIN", MATCH), "LEFT", None, False),
    "left outer asof": Parsed(JOIN.format("LEFT OUTER ASOF JOIN", MATCH + " ON t.sym = q.sym"), "LEFT", "OUTER", True),
    "asof left (DuckDB order)": Parsed(JOIN.format("ASOF LEFT JOIN", MATCH), "LEFT", None, False),
    "right asof (parses, rejected by the planner)": Parsed(JOIN.format("RIGHT ASOF JOIN", MATCH), "RIGHT", None, False),
}


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("name", PARSED)
def test_asof_parses_in_every_flavour_and_round_trips(flavour, name):
    case = PARSED[name]
    tree = parse(case.sql, flavour)[0]
    join = tree.args["joins"][0]
    assert (join.args.get("method"), join.args.get("side"), join.args.get("kind")) == ("ASOF", case.side, case.kind)
    assert isinstance(join.args["match_condition"], exp.GTE)
    assert (join.args.get("on") is not None) == case.on
    assert parse(tree.sql(dialect=dialect_for(flavour)), flavour)[0] == tree


@pytest.mark.parametrize("written, comparison", [
    ("t.tt >= q.qt", ">="), ("t.tt > q.qt", ">"), ("t.tt <= q.qt", "<="), ("t.tt < q.qt", "<"),
    ("q.qt <= t.tt", ">="), ("(q.qt > t.tt)", "<"),  # mirrored: read as left <op> right
    ("t.ROWTIME >= q.qt", ">="),  # ROWTIME is the record time the timestamp column sets
])
def test_match_condition_is_normalised_to_left_op_right(written, comparison):
    query = plan_program(JOIN.format("LEFT ASOF JOIN", f"MATCH_CONDITION ({written}) ON t.sym = q.sym"),
                         CATALOG, "flink").queries[0]
    join = query.project.child
    assert isinstance(join, n.AsofJoin) and (join.kind, join.join_type, join.comparison) == ("stream", "LEFT", comparison)
    assert join.left_time.table == "t" and join.right_time.table == "q"
    assert [k.sql() for k in join.key] == ["t.sym"]


def test_explain_shows_the_asof_join():
    sql = "SELECT t.tid, q.bid FROM trades t ASOF JOIN quotes q MATCH_CONDITION (q.qt < t.tt) ON t.sym = q.sym"
    text = explain(plan_program(sql, CATALOG, "ksqldb"))
    line = next(line for line in text.splitlines() if "AsofJoin" in line)
    assert line.endswith("AsofJoin INNER  -> stream  key [t.sym]  on t.sym = q.sym  match t.tt > q.qt (event time)"
                         "  (stream INNER ASOF JOIN stream)")
    assert "Repartition (join key)" in text  # trades are keyed by tid: re-keyed by sym


def test_no_on_joins_everything_under_one_key():
    sql = "SELECT k.px, q.bid FROM ticks k ASOF JOIN quotes q MATCH_CONDITION (k.ROWTIME >= q.ROWTIME) WHERE q.bid > 1"
    join = plan_program(sql, CATALOG, "lenses").queries[0].project.child.child  # under the WHERE filter
    assert isinstance(join, n.AsofJoin) and join.key == () and join.left_keys == () and join.residual is None


def rejected(sql: str, rule: str, words: str, highlight: str, flavour: str = "flink") -> Rejected:
    return Rejected(flavour, sql, rule, words, highlight)


REJECTED = {
    "table on the right": rejected("SELECT t.tid FROM trades t ASOF JOIN fx f MATCH_CONDITION (t.tt >= f.ROWTIME) ON t.sym = f.sym",
                                   "asof-stream-input", "f is a table", "fx f"),
    "table on the left": rejected("SELECT t.tid FROM fx f ASOF JOIN trades t MATCH_CONDITION (f.ROWTIME >= t.tt) ON f.sym = t.sym",
                                  "asof-stream-input", "f is a table", "f.ROWTIME"),
    "equality": rejected(JOIN.format("ASOF JOIN", "MATCH_CONDITION (t.tt = q.qt)"), "asof-match-condition", "one comparison", "t.tt = q.qt"),
    "one side only": rejected(JOIN.format("ASOF JOIN", "MATCH_CONDITION (t.tt >= t.tt)"), "asof-match-condition", "a column of each input", "t.tt >= t.tt"),
    "expression": rejected(JOIN.format("ASOF JOIN", "MATCH_CONDITION (t.tt - 5 >= q.qt)"), "asof-match-condition", "one comparison", "t.tt - 5"),
    "unqualified": rejected(JOIN.format("ASOF JOIN", "MATCH_CONDITION (tt >= qt)"), "asof-match-condition", "qualify", "tt >= qt"),
    "not the event time": rejected(JOIN.format("ASOF JOIN", "MATCH_CONDITION (t.tt >= q.bid)"), "asof-match-column",
                                   "its event time is q.qt", "q.bid"),
    "no timestamp column: ROWTIME": rejected("SELECT k.px FROM ticks k ASOF JOIN quotes q MATCH_CONDITION (k.px >= q.qt)",
                                            "asof-match-column", "k.ROWTIME", "k.px"),
    "left input already a join": rejected("SELECT t.tid FROM trades t JOIN ticks k ON t.sym = k.sym ASOF JOIN quotes q "
                                          "MATCH_CONDITION (t.tt >= q.qt) ON t.sym = q.sym", "asof-match-column",
                                          "write the ASOF JOIN first", "t.tt >= q.qt"),
    "right": rejected(JOIN.format("RIGHT ASOF JOIN", MATCH), "asof-join-type", "INNER and LEFT only", "quotes q"),
    "full": rejected(JOIN.format("FULL OUTER ASOF JOIN", MATCH), "asof-join-type", "FULL ASOF", "quotes q"),
    "no match condition": rejected(JOIN.format("ASOF JOIN", "ON t.sym = q.sym"), "asof-match-condition", "needs a MATCH_CONDITION", "quotes q"),
    "match condition without ASOF": rejected(JOIN.format("JOIN", MATCH), "asof-match-condition", "write ASOF JOIN", "t.tt >= q.qt"),
    "window": rejected(JOIN.format("ASOF JOIN", "WITHIN 10 SECONDS " + MATCH), "asof-clause", "no WITHIN", "quotes q", "ksqldb"),
    "no keys over partitions": rejected("SELECT w.px FROM wide w ASOF JOIN quotes q MATCH_CONDITION (w.ROWTIME >= q.qt)",
                                        "asof-partitions", "add ON", "quotes q"),
    "condition not a comparison": rejected(JOIN.format("ASOF JOIN", "MATCH_CONDITION (t.tt >= q.qt AND t.tt > 0)"),
                                           "asof-match-condition", "one comparison", "t.tt >= q.qt AND"),
}


@pytest.mark.parametrize("name", REJECTED)
def test_asof_rejections(name):
    assert_rejected(REJECTED[name], CATALOG)