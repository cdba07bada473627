"""Run SQL end to end in-process (plan, compile, decode, operators, project, encode; no Spark, no
broker) from compact sources and inputs, for the runtime tests of one construct at a time."""

from __future__ import annotations

from streamjoin.runner.cases import Case
from streamjoin.runner.local import run_locally
from streamjoin.runner.planned import plan_case


def source(name: str, columns: dict, key=(), kind: str | None = None, timestamp: str | None = None) -> dict:
    return {"name": name, "kind": kind or ("table" if key else "stream"), "topic": name, "partitions": 1,
            "key": list(key), "columns": columns, "timestamp": timestamp}


def row(name: str, ts: int, value: dict | None, key=None) -> dict:
    return {"source": name, "ts": ts, "key": key, "value": value}


def run_sql(sql: str, sources: list[dict], inputs: list[dict], *, dialect: str = "flink", setup=(),
            settings: dict | None = None) -> list[tuple]:
    """(key, value) of every output record, in output order; end of input flushes (bounded)."""
    case = Case.from_json({"id": "sql", "dialect": dialect, "sql": sql, "sources": sources, "inputs": inputs,
                           "setup": list(setup), "settings": {"flush_at_end": True, **(settings or {})}})
    planned = plan_case(case, topic_prefix="t.")
    [records] = run_locally(case, planned).values()
    return [(r.key, r.value) for r in records]


def values(records: list[tuple]) -> list:
    return [value for _, value in records]
