"""Flink SQL planning: the Flink flavour's switches, from case settings and DDL to plan nodes."""

from __future__ import annotations

from streamjoin.plan import nodes as n
from streamjoin.plan import plan_program
from streamjoin.plan.catalog import Catalog


def _stream(name, columns, timestamp=None, key=()):
    return {"name": name, "kind": "stream" if not key else "table", "topic": name, "partitions": 1,
            "key": list(key), "columns": columns, "timestamp": timestamp}


T1T2 = Catalog.from_case_sources([
    _stream("T1", {"k": "STRING", "id": "STRING", "rowtime": "TIMESTAMP(3)"}, "rowtime"),
    _stream("T2", {"k": "STRING", "id": "STRING", "rowtime": "TIMESTAMP(3)"}, "rowtime"),
])


def test_watermark_delay_setting_is_the_sources_watermark():
    # settings.watermark_delay_ms states `WATERMARK FOR rowtime AS rowtime - INTERVAL ...` per source
    program = plan_program("SELECT t1.id FROM T1 t1 JOIN T2 t2 ON t1.k = t2.k AND "
                           "t1.rowtime BETWEEN t2.rowtime - INTERVAL '1' SECOND AND t2.rowtime", T1T2, "flink",
                           settings={"watermark_delay_ms": {"T1": 1000, "t2": 5}})
    assert (program.catalog.get("T1").watermark_delay_ms, program.catalog.get("T2").watermark_delay_ms) == (1000, 5)
    join = program.queries[0].project.child
    assert isinstance(join, n.IntervalJoin) and join.left.source.watermark_delay_ms == 1000
