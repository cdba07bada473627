"""Nesting is bounded where it is read, never by Python's recursion limit: the deepest statement
that plans also compiles and evaluates per record under the default limit (as a Spark task
does), the headroom for reading and planning is given back, and a RecursionError that still
happens is a positioned error."""

from __future__ import annotations

import inspect
import json
import pickle
import sys
import threading

import pytest

from streamjoin.app import compiling
from streamjoin.app.compiling import compile_program
from streamjoin.dialect import StreamJoinError
from streamjoin.dialect.depth import MAX_NESTING, recursion_headroom
from streamjoin.plan import plan_program, planner
from streamjoin.runner.cases import Case as SqlCase
from streamjoin.runner.planned import plan_case
from streamjoin.runtime.compiled import CompiledQuery
from streamjoin.runtime.contract import Emitted, InputRow

SETUP = ["CREATE STREAM views (id STRING KEY, pageid STRING, viewtime BIGINT) "
         "WITH (kafka_topic='views', value_format='JSON', partitions=1);"]
# Forms that nest: each level is one parenthesis, operator, function call or CASE.
NESTED = {
    "parentheses": lambda n: "SELECT id FROM views WHERE viewtime > " + "(" * n + "0" + ")" * n,
    "OR chain": lambda n: "SELECT id FROM views WHERE " + " OR ".join(["viewtime = 1"] * n),
    "function calls": lambda n: "SELECT " + "concat(" * n + "pageid" + ", 'a')" * n + " AS c FROM views",
    "CASE": lambda n: "SELECT " + "CASE WHEN viewtime = 1 THEN " * n + "1" + " END" * n + " AS c FROM views",
}
SPARK_FRAMES = 400  # a generous allowance for the frames below ours on a Spark Python worker


def planned(form, n: int) -> CompiledQuery | None:
    case = SqlCase.from_json({"id": "deep", "dialect": "ksqldb", "setup": SETUP, "sql": form(n) + ";",
                              "inputs": [], "expected": []})
    try:
        (query,) = plan_case(case, "").queries
        return query
    except StreamJoinError as error:
        assert error.rule == "too-deeply-nested", str(error)
        return None


def deepest(form) -> CompiledQuery:
    """The compiled query of the deepest `form` that plans (a bisection: nesting n plans for every
    n up to some depth, and for none beyond)."""
    low, high = 1, MAX_NESTING + 1  # planned(low) plans, planned(high) does not
    assert planned(form, low) is not None and planned(form, high) is None
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if planned(form, middle) is not None else (low, middle)
    return planned(form, low)


@pytest.mark.parametrize("form", NESTED)
def test_the_deepest_statement_that_plans_runs_under_the_default_limit(form):
    query = deepest(NESTED[form])
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(min(limit, 1000 - SPARK_FRAMES + len(inspect.stack())))
    try:  # what a Spark task does with it: unpickle the factory, compile, run a record
        runtime = pickle.loads(pickle.dumps(query.factory))(0)
        value = json.dumps({"pageid": "p", "viewtime": 1}).encode()
        results = list(runtime.process(InputRow("views", 0, 0, 0, b"k", value)))
    finally:
        sys.setrecursionlimit(limit)
    assert results and all(isinstance(r, Emitted) for r in results), results


def test_headroom_is_reentrant_and_given_back():
    limit = sys.getrecursionlimit()
    with recursion_headroom():
        raised = sys.getrecursionlimit()
        with recursion_headroom():
            assert sys.getrecursionlimit() == raised > limit
        assert sys.getrecursionlimit() == raised  # the outer block still runs
    assert sys.getrecursionlimit() == limit


def test_headroom_stays_while_another_thread_still_needs_it():
    limit, inside, leave = sys.getrecursionlimit(), threading.Event(), threading.Event()

    def hold():
        with recursion_headroom():
            inside.set()
            leave.wait(5)

    other = threading.Thread(target=hold)
    other.start()
    inside.wait(5)
    with recursion_headroom():
        pass
    assert sys.getrecursionlimit() > limit  # the other thread's block is still open
    leave.set()
    other.join(5)
    assert sys.getrecursionlimit() == limit


def overflow(*args, **kwargs):
    raise RecursionError("maximum recursion depth exceeded")


def test_a_recursion_error_while_planning_points_at_its_statement(monkeypatch):
    monkeypatch.setattr(planner, "_plan_statement", overflow)
    with pytest.raises(StreamJoinError) as caught:
        plan_program("SET a = 1;\n  SELECT * FROM t;", None, "flink", file="q.sql")
    assert (caught.value.rule, caught.value.line, caught.value.col) == ("too-deeply-nested", 1, 1)


def test_a_recursion_error_while_compiling_points_at_its_statement(monkeypatch):
    program = plan_program("CREATE STREAM s (id STRING KEY, v INT) WITH (kafka_topic='s');\n"
                           "  SELECT id, v FROM s;", None, "ksqldb", file="q.sql")

    class Overflowing(CompiledQuery):
        sink_serde = property(overflow)

    monkeypatch.setattr(compiling, "CompiledQuery", Overflowing)
    with pytest.raises(StreamJoinError) as caught:
        compile_program(program)
    assert (caught.value.rule, caught.value.file, caught.value.line, caught.value.col) == \
        ("too-deeply-nested", "q.sql", 2, 3)
