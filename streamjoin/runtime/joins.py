"""Which operator runs which planned join: the plan node's class names the input kinds and
semantics, its fields give the operator's configuration."""

from __future__ import annotations

from typing import Callable

from streamjoin import plan as P
from streamjoin.operators.asof import AsofCondition, AsofJoin, AsofJoinConfig
from streamjoin.operators.base import JoinProcessor
from streamjoin.operators.foreign_key import ForeignKeyJoin, ForeignKeyJoinConfig
from streamjoin.operators.lookup_join import LookupJoin, LookupJoinConfig
from streamjoin.operators.interval import IntervalJoin, IntervalJoinConfig
from streamjoin.operators.regular import InputKind, RegularJoin, RegularJoinConfig
from streamjoin.operators.stream_stream import StreamStreamJoin, StreamStreamJoinConfig
from streamjoin.operators.stream_table import StreamTableJoin, StreamTableJoinConfig
from streamjoin.operators.table_table import TableTableJoin, TableTableJoinConfig
from streamjoin.operators.temporal import (
    EventTimeTemporalJoin,
    ProcessingTimeTemporalJoin,
    TemporalJoinConfig,
)
from streamjoin.operators.window_join import (
    RangeWindow,
    RowsWindow,
    WindowJoin,
    WindowJoinConfig,
)
from streamjoin.operators.window_tvf_join import WindowTvfJoin, WindowTvfJoinConfig
from streamjoin.runtime.jdbc import PostgresConnector


def build_processor(node: P.Join, residual, foreign_key: Callable, window_ends=None) -> JoinProcessor:
    """`window_ends`: a window join's (left, right) window_end readers."""
    join_type = node.join_type
    if isinstance(node, P.WindowTvfJoin):
        return WindowTvfJoin(WindowTvfJoinConfig(*window_ends, join_type=join_type, residual=residual))
    if isinstance(node, P.StreamStreamJoin):
        w = node.window
        return StreamStreamJoin(StreamStreamJoinConfig(
            before=w.before_ms, after=w.after_ms, join_type=join_type, grace=w.grace_ms,
            eager_outer=node.eager_outer, residual=residual, store_retention=node.store_retention))
    if isinstance(node, P.StreamTableJoin):
        return StreamTableJoin(StreamTableJoinConfig(
            join_type=join_type, residual=residual,
            reemit_on_late_table_row=node.reemit_on_late_table_row, static_snapshot=node.static_snapshot))
    if isinstance(node, P.TableTableJoin):
        return TableTableJoin(TableTableJoinConfig(join_type=join_type, residual=residual))
    if isinstance(node, P.ForeignKeyJoin):
        return ForeignKeyJoin(ForeignKeyJoinConfig(foreign_key=foreign_key, join_type=join_type, residual=residual,
                                                   tombstone_without_result=node.tombstone_without_result))
    if isinstance(node, P.RegularJoin):
        return RegularJoin(RegularJoinConfig(
            join_type=join_type, left_input=_input_kind(node.left_upsert), right_input=_input_kind(node.right_upsert),
            residual=residual, state_ttl_ms=node.state_ttl_ms))
    if isinstance(node, P.LookupJoin):
        table = node.right.source
        keys = tuple(column.name for column in node.right_keys)
        return LookupJoin(LookupJoinConfig(
            PostgresConnector(table.lookup, keys, dict(table.columns)), node.right.alias, join_type=join_type,
            residual=residual, cache=table.lookup.cache, max_retries=table.lookup.max_retries))
    if isinstance(node, P.TemporalJoin):
        config = TemporalJoinConfig(join_type=join_type, left_delay=_delay(node.left),
                                    right_delay=_delay(node.right), residual=residual)
        return ProcessingTimeTemporalJoin(config) if node.processing_time else EventTimeTemporalJoin(config)
    if isinstance(node, P.AsofJoin):
        return AsofJoin(AsofJoinConfig(
            join_type=join_type, condition=AsofCondition(node.comparison), left_delay=_delay(node.left),
            right_delay=_delay(node.right), residual=residual))
    if isinstance(node, P.IntervalJoin):
        b = node.bounds
        return IntervalJoin(IntervalJoinConfig(
            lower=b.lower_ms, upper=b.upper_ms, join_type=join_type,
            watermark_delay=max(_delay(node.left), _delay(node.right)), residual=residual))
    if isinstance(node, (P.OverWindowJoin, P.CrossJoin)):
        return WindowJoin(WindowJoinConfig(
            left_window=_window(node.left_window), right_window=_window(node.right_window),
            join_type=join_type, residual=residual))
    raise NotImplementedError(f"no operator for {node.label}")


def _input_kind(upsert: bool) -> InputKind:
    return InputKind.UPSERT if upsert else InputKind.APPEND


def _delay(node: P.PlanNode) -> int:
    """The watermark delay of the source under `node` (0 when none is declared)."""
    while not isinstance(node, P.Source):
        node = node.children[0]
    return node.source.watermark_delay_ms or 0


def _window(window: P.RelationWindow | None):
    if window is None:
        return RangeWindow(0)
    if window.unit == "ROWS":
        return RowsWindow(window.preceding)
    return RangeWindow(window.preceding, window.following)
