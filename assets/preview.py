"""The latest rows of what a query writes, as table metadata the UI shows: its output topic (the
last records of each partition; `EngineResource.latest_records`), its Delta table and its dead
letters (topic and table, each row with its reason). Reads only the tail: the newest records of
each partition, the Delta files whose statistics hold the newest rows."""

import json

import dagster as dg

from streamjoin.app.topics import iso_millis, letter_columns

PREVIEW_ROWS = 10
SHOWN_CHARS = 200  # a value longer than this is cut (the whole row is in the topic / table)


def as_text(value) -> str | int | float | bool:
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            value = value.hex()
    if value is None or isinstance(value, (int, float, bool)):
        return "null" if value is None else value
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


def table_metadata(rows: list[dict]) -> dg.MetadataValue:
    """Rows as a table the UI renders (every column as text but numbers and booleans)."""
    columns = list(dict.fromkeys(name for row in rows for name in row))
    cells = [{name: as_text(row.get(name)) for name in columns} for row in rows]
    kinds = {name: {type(c[name]) for c in cells} for name in columns}
    schema = dg.TableSchema(columns=[
        dg.TableColumn(name, "int" if kinds[name] == {int} else
                       "float" if kinds[name] <= {int, float} and kinds[name] else
                       "bool" if kinds[name] == {bool} else "string") for name in columns])
    return dg.MetadataValue.table([dg.TableRecord(c) for c in cells], schema=schema)


def table_tail(path: str, order_column: str, limit: int = PREVIEW_ROWS) -> list[dict]:
    """The `limit` rows of the Delta table at `path` with the largest `order_column`, newest
    first; [] when the table does not exist. Only the files whose statistics can hold them are
    read."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(path)
    except TableNotFoundError:
        return []
    files = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    newest_first = sorted(files, key=lambda f: (f.get(f"max.{order_column}") is not None,
                                                f.get(f"max.{order_column}")), reverse=True)
    chosen, count = [], 0
    for stats in newest_first:  # the newest files until they hold `limit` rows
        if count >= limit:
            break
        chosen.append(stats.get(f"min.{order_column}"))
        count += stats.get("num_records") or 0
    # No row older than the oldest of them can be among the newest `limit` (no statistics: all).
    floor = min(chosen) if chosen and None not in chosen else None
    dataset = table.to_pyarrow_dataset()
    rows = dataset.to_table(filter=ds.field(order_column) >= floor) if floor is not None \
        else dataset.to_table()
    if not rows.num_rows:
        return []
    newest = rows.take(pc.sort_indices(rows, [(order_column, "descending")])[:limit])
    return newest.to_pylist()


DEAD_LETTER_COLUMNS = ("reason", "source_topic", "partition", "offset", "timestamp")


def dead_letter_rows(rows: list[dict], formats: dict | None = None) -> list[dict]:
    """Dead-letter table rows with the reason first, the time readable, and the key and value
    decoded with the source topic's format as far as it reads them (`formats`: {topic: format})."""
    shown = []
    for row in rows:
        ts = row.get("timestamp")
        head = {name: iso_millis(ts) if name == "timestamp" and isinstance(ts, int) else row.get(name)
                for name in DEAD_LETTER_COLUMNS}
        spec = (formats or {}).get(row.get("source_topic"))
        shown.append(head | letter_columns(spec, row.get("key"), row.get("value"), ts or 0))
    return shown


def metadata_or_note(read) -> dg.MetadataValue:
    """`read()`'s rows as table metadata; a preview that cannot be read (the broker gone since
    the run ended, ...) becomes a note rather than failing the materialization."""
    try:
        return table_metadata(read())
    except Exception as error:  # noqa: BLE001 - the run succeeded; only its preview is missing
        return dg.MetadataValue.text(f"preview unavailable: {type(error).__name__}: {error}")
