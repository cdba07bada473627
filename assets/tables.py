"""Reading the query output tables the engine writes (at `Engine.delta_path(query)`): the current
version for materialization metadata, one time range and the latest closed window holding data
for the streaming == batch check."""

TIME_COLUMN = "__ts"  # each output row's event time (ms), as the engine writes it


def table_version(path: str) -> int | None:
    """The table's current version, or None when it does not exist yet."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(path).version()
    except TableNotFoundError:
        return None


def rows_between(path: str, start_ms: int, end_ms: int) -> list[dict]:
    """The rows with TIME_COLUMN in [start_ms, end_ms) ([] when the table does not exist)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(path)
    except TableNotFoundError:
        return []
    return table.to_pyarrow_table(filters=[(TIME_COLUMN, ">=", start_ms),
                                           (TIME_COLUMN, "<", end_ms)]).to_pylist()


def latest_time_before(path: str, before_ms: int) -> int | None:
    """The largest TIME_COLUMN below `before_ms` (None: no such row, or no table)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(path)
    except TableNotFoundError:
        return None
    times = table.to_pyarrow_dataset().to_table(columns=[TIME_COLUMN],
                                                filter=ds.field(TIME_COLUMN) < before_ms)
    return pc.max(times.column(TIME_COLUMN)).as_py() if times.num_rows else None
