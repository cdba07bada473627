"""EXPLAIN: a planned query as a topology, sink first, like ksqlDB's EXPLAIN / Lenses' view.

    Sink SHIPPED_ORDERS  stream -> topic SHIPPED_ORDERS  key [ORDERID]  value [ITEMID, ...]
    └─ Project  key ORDERID=o.id  value ITEMID=o.itemid, ...
       └─ StreamStreamJoin INNER  stream  key o.id  on o.id = s.id  within 2h (eager outer)
          ├─ StreamStreamJoin INNER ...
          └─ Source shipments AS s  stream  topic shipments  partitions 1  key s.id
"""

from __future__ import annotations

from streamjoin.plan import nodes as n
from streamjoin.plan.changelog_nodes import ChangelogNormalize, Deduplicate
from streamjoin.plan.lookup_nodes import LookupJoin, LookupTable
from streamjoin.plan.window_nodes import (
    WindowAggregate,
    WindowAssign,
    WindowSpec,
    WindowTvfJoin,
)


def explain(target) -> str:
    """Text topology of a PlannedQuery, of every query of a Program, or of a plan node."""
    if hasattr(target, "queries"):
        return "\n\n".join(explain(q) for q in target.queries) or "(no queries)"
    if hasattr(target, "root"):
        header = (f"Query -> {target.sink.name} ({target.sink.kind}, {target.flavour.name})\n"
                  f"  output key: [{', '.join(target.key_columns)}]\n"
                  f"  output value: [{', '.join(target.value_columns)}]\n")
        return header + "\n".join(_lines(target.root, "", ""))
    return "\n".join(_lines(target, "", ""))


def _lines(node: n.PlanNode, first: str, rest: str):
    yield first + _describe(node)
    children = [c for c in node.children if c is not None]
    for index, child in enumerate(children):
        last = index == len(children) - 1
        yield from _lines(child, rest + ("└─ " if last else "├─ "), rest + ("   " if last else "│  "))


def _sql(expressions) -> str:
    return ", ".join(e.sql() for e in expressions)


def _ms(value: int) -> str:
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if value and value % size == 0:
            return f"{value // size}{unit}"
    return f"{value}ms"


def _window(window: n.RelationWindow | None) -> str:
    if window is None:
        return "current row"
    amount = _ms(window.preceding) if window.unit == "RANGE" else f"{window.preceding} rows"
    return f"{window.unit} {amount} preceding" + (f" to {window.following}" if window.following else "")


def _group_window(window: n.GroupWindow) -> str:
    """ksqlDB's WINDOW clause of a GROUP BY: its size (a session's gap), grace and emission."""
    sizes = [_ms(window.size_ms)] + ([_ms(window.advance_ms)] if window.kind == "HOPPING" else [])
    emit = "each window once, when it closes" if window.emit_final else "every update"
    return f"{window.kind}({', '.join(sizes)}) grace {_ms(window.grace_ms)} ({emit})"


def _window_spec(window: WindowSpec) -> str:
    sizes = [_ms(window.step_ms), _ms(window.size_ms)] if window.kind != "TUMBLE" else [_ms(window.size_ms)]
    offset = f" offset {_ms(window.offset_ms)}" if window.offset_ms else ""
    return f"{window.kind}({', '.join(sizes)}){offset}"


def _describe(node: n.PlanNode) -> str:
    key = f"  key [{_sql(node.key)}]" if node.key else ""
    if isinstance(node, n.Sink):
        return (f"Sink {node.name}  {node.kind} -> topic {node.topic}  partitions {node.partitions or '?'}"
                f"  format {node.key_format}/{node.value_format}")
    if isinstance(node, n.Project):
        keys = ", ".join(f"{k}={v.sql()}" for k, v in node.key_columns.items())
        values = ", ".join(f"{k}={v.sql()}" for k, v in node.value_columns.items())
        return f"Project  {node.kind}" + (f"  key {keys}" if keys else "") + f"  value {values}"
    if isinstance(node, n.Source):
        src = node.source
        window = f"  over {_window(node.window)}" if node.window else ""
        time = f"  timestamp {src.timestamp}" if src.timestamp else ""
        return (f"Source {src.name} AS {node.alias}  {src.kind}  topic {src.topic}  partitions "
                f"{src.partitions or '?'}{key}{time}{window}")
    if isinstance(node, LookupTable):
        return f"LookupTable {node.source.name} AS {node.alias}  {node.source.lookup.describe()}"
    if isinstance(node, n.Repartition):
        return f"Repartition ({node.reason})  {node.kind}{key}  partitions {node.partitions or 'same'}"
    if isinstance(node, n.Join):
        return _describe_join(node, key)
    if isinstance(node, Deduplicate):
        order = node.order_time.sql() if node.order_time is not None else "arrival"
        return f"Deduplicate  keep {'last' if node.keep_last else 'first'} by {order}  {node.kind}{key}"
    if isinstance(node, ChangelogNormalize):
        return f"ChangelogNormalize  {node.kind}{key}"
    if isinstance(node, n.Filter):
        return f"Filter  {node.predicate.sql()}"
    if isinstance(node, n.Lateral):
        return f"Lateral  {node.expression.sql()} AS {node.alias}"
    if isinstance(node, WindowAssign):
        zone = f" in {node.time_zone}" if node.time_zone else ""
        return f"WindowAssign  {_window_spec(node.window)} on {node.time.sql()}{zone}  stream"
    if isinstance(node, WindowAggregate):
        aggs = ", ".join(f"{k}={v.sql()}" for k, v in node.aggregates.items())
        return f"WindowAggregate  group by [{_sql(node.group_by)}]  {aggs}  stream (each window once, at its end)"
    if isinstance(node, n.Aggregate):
        aggs = ", ".join(f"{k}={v.sql()}" for k, v in node.aggregates.items())
        having = f"  having {node.having.sql()}" if node.having is not None else ""
        window = f"  window {_group_window(node.window)}" if node.window is not None else ""
        return f"Aggregate  group by [{_sql(node.group_by)}]  {aggs}{having}{window}  table"
    return node.label


def _describe_join(node: n.Join, key: str) -> str:
    parts = [f"{node.label} {node.join_type}  -> {node.kind}{key}"]
    if node.left_keys:
        parts.append("on " + " AND ".join(f"{l.sql()} = {r.sql()}" for l, r in zip(node.left_keys, node.right_keys)))
    if node.residual is not None:
        parts.append(f"residual {node.residual.sql()}")
    if isinstance(node, n.StreamStreamJoin) and node.window:
        w = node.window
        grace = f" grace {_ms(w.grace_ms)}" if w.grace_ms is not None else " no grace"
        parts.append(f"within before {_ms(w.before_ms)} after {_ms(w.after_ms)}{grace}")
    if isinstance(node, (n.OverWindowJoin, n.CrossJoin)):
        parts.append(f"windows left {_window(node.left_window)}, right {_window(node.right_window)}")
    if isinstance(node, n.TemporalJoin):
        parts.append(f"as of {node.time_attribute.sql()} ({'processing' if node.processing_time else 'event'} time)")
    if isinstance(node, LookupJoin):
        parts.append(f"lookup as of {node.time_attribute.sql()} (processing time, in the tasks)")
    if isinstance(node, n.AsofJoin):
        parts.append(f"match {node.left_time.sql()} {node.comparison} {node.right_time.sql()} (event time)")
    if isinstance(node, WindowTvfJoin):
        parts.append(f"window {_window_spec(node.window)} (each window once, at its end)")
    if isinstance(node, n.IntervalJoin):
        b = node.bounds
        parts.append(f"{b.left_time.sql()} - {b.right_time.sql()} in [{b.lower_ms}ms, {b.upper_ms}ms]")
    chosen = [name for name, on in _semantics(node) if on]
    if chosen:
        parts.append("flags " + ",".join(chosen))
    if node.written:
        parts.append(f"({node.written})")
    return "  ".join(parts)


def _semantics(node: n.Join):
    """(name, on) per flavour-chosen semantics of a join, under the names docs/sql-reference.md
    and the `SET 'streamjoin.<option>'` overrides use."""
    if isinstance(node, n.StreamStreamJoin):
        yield "eager_outer", node.eager_outer
        yield "window_store_retention", node.store_retention
    if isinstance(node, n.StreamTableJoin):
        yield "reemit_on_table_update", node.reemit_on_late_table_row
        yield "snapshot_table_at_start", node.static_snapshot
    if isinstance(node, n.RegularJoin):
        yield "state_ttl_ms", node.state_ttl_ms not in (None, (None, None))
