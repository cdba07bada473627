"""Pure-Python join operators (no Spark): records in, changelog out. See docs/semantics.md."""

from streamjoin.operators.interval import IntervalJoin, IntervalJoinConfig
from streamjoin.operators.ordering import merge_in_timestamp_order
from streamjoin.operators.stream_stream import StreamStreamJoin, StreamStreamJoinConfig
from streamjoin.operators.base import JoinType, Residual
from streamjoin.operators.stream_table import StreamTableJoin, StreamTableJoinConfig
from streamjoin.operators.window_join import (
    CURRENT_ROW,
    RangeWindow,
    RowsWindow,
    WindowJoin,
    WindowJoinConfig,
)

__all__ = [
    "CURRENT_ROW",
    "IntervalJoin",
    "IntervalJoinConfig",
    "JoinType",
    "RangeWindow",
    "Residual",
    "RowsWindow",
    "StreamStreamJoin",
    "StreamStreamJoinConfig",
    "StreamTableJoin",
    "StreamTableJoinConfig",
    "WindowJoin",
    "WindowJoinConfig",
    "merge_in_timestamp_order",
]
