"""transformWithStateInPandas's input grouped by key a column at a time, in the worker daemon.

pyspark's serializer for the step (`TransformWithStateInPandasSerializer.load_stream`) converts
each Arrow batch it receives to pandas, then turns every row into a tuple to find where the
grouping key changes, then builds each group's frame again from those tuples: ~3.3 µs of Python
a record (550,000 task rows: 2.16 CPU s, against 0.32 s to convert the same batches to pandas
alone). A streamjoin task is one group per micro-batch, so that per-row work is all this step
costs beyond the conversion ("The stateful step's rows grouped by column" in docs/operations.md).

`load_stream` here gives the same frames built from column slices: per batch, pyspark's own
conversion to pandas; the key tuples zipped from the key columns only, and their runs found with
`groupby`; a group's runs cut into frames by pyspark's limits (records, and bytes when set) at
the same rows; each frame's columns given the dtypes pyspark's rows-to-frame step infers (signed
integers as int64, floats as float64, strings and bytes as they are; any other column inferred
from its values exactly as pyspark's step does). `tests/pure/spark/test_grouped_rows.py` holds it
to pyspark's own on randomized batches (every column type, nulls, keys changing within and
across batches, both limits). `install()` puts it on pyspark's class; the daemon calls it, so the
workers it forks use it, and a worker Spark starts otherwise keeps pyspark's.
"""

from __future__ import annotations

from collections import namedtuple
from itertools import groupby
from math import ceil
from operator import itemgetter
from typing import Iterator

from pyspark.sql.conversion import ArrowBatchTransformer
from pyspark.sql.pandas.serializers import ArrowStreamSerializer, TransformWithStateInPandasSerializer

PYSPARK_LOAD_STREAM = TransformWithStateInPandasSerializer.load_stream
UNLIMITED_BYTES = 2**31 - 1  # pyspark's "no byte limit" (`arrow_max_bytes_per_batch`)


def install() -> None:
    TransformWithStateInPandasSerializer.load_stream = load_stream


def load_stream(self, stream) -> Iterator[tuple]:
    """What pyspark's `load_stream` yields: (PROCESS_DATA, key, its (key, frame) chunks) per
    group, then the timer and completion markers."""
    from pyspark.sql.streaming.stateful_processor_util import TransformWithStateInPandasFuncMode as Mode

    for key, chunks in groupby(keyed_frames(self, ArrowStreamSerializer.load_stream(self, stream)), itemgetter(0)):
        yield Mode.PROCESS_DATA, key, chunks
    yield Mode.PROCESS_TIMER, None, None
    yield Mode.COMPLETE, None, None


def keyed_frames(ser: TransformWithStateInPandasSerializer, batches) -> Iterator[tuple]:
    """(group key, frame) for each chunk of each group, in order."""
    group = None
    for batch in batches:
        ser._update_batch_size_stats(batch)
        columns = BatchColumns(ser, batch)
        for key, start, stop in columns.key_runs(ser.key_offsets):
            if group is None or not key == group.key:  # every chunk of a group carries its first key
                if group is not None:
                    yield from group.flush()
                group = Chunks(ser, key)
            yield from group.add(columns, start, stop)
    if group is not None:
        yield from group.flush()


class BatchColumns:
    """One Arrow batch as pyspark converts it to pandas, with each column as its rows' frame will
    hold it: an int64, float64 or object array, or (any other type) the values for inference."""

    def __init__(self, ser: TransformWithStateInPandasSerializer, batch) -> None:
        series = ArrowBatchTransformer.to_pandas(
            batch, timezone=ser._timezone, schema=ser._input_type, struct_in_pandas=ser._struct_in_pandas,
            ndarray_as_list=ser._ndarray_as_list, prefer_int_ext_dtype=ser._prefer_int_ext_dtype,
            df_for_struct=ser._df_for_struct)
        self.names = [s.name for s in series]
        self.count = batch.num_rows
        self.arrays = [_as_framed(s, field.type) for s, field in zip(series, batch.schema)]
        self.series = series

    def key_runs(self, offsets) -> Iterator[tuple]:
        """(key tuple, start, stop) for each run of equal keys, compared as pyspark compares them."""
        import numpy as np

        integers = [self.arrays[o] for o in offsets]
        if integers and all(isinstance(a, np.ndarray) and a.dtype == np.int64 for a in integers):
            # Integers (a task number): their runs found by numpy, their keys at the runs' starts.
            changed = np.zeros(self.count - 1, bool) if self.count else np.zeros(0, bool)
            for values in integers:
                changed |= values[1:] != values[:-1]
            bounds = [0, *(np.flatnonzero(changed) + 1).tolist(), self.count]
            keys = zip(*(values[bounds[:-1]].tolist() for values in integers)) if self.count else ()
            yield from zip(keys, bounds[:-1], bounds[1:])
            return
        keys = list(zip(*(list(self.series[o]) for o in offsets))) if offsets else [()] * self.count
        start = 0
        for key, run in groupby(keys):
            stop = start + len(list(run))
            yield key, start, stop
            start = stop


def _as_framed(series, arrow_type):
    """A column's slice-able form: a numpy array where its frame's dtype is known from its own
    (pyspark's rows hold Python ints, floats, strings and bytes, which a frame holds as int64,
    float64 and objects), else its values as a list."""
    import numpy as np
    import pyarrow as pa

    kind = series.dtype.kind if isinstance(series.dtype, np.dtype) else None
    if kind == "i":
        return series.to_numpy(np.int64)
    if kind == "f":
        return series.to_numpy(np.float64)
    if kind == "O" and (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
                        or pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type)):
        return series.to_numpy()
    return list(series)  # the items pyspark's rows hold; inferred per frame, as pyspark infers them


class Chunks:
    """One group's rows gathered as slices of batches, released as frames at pyspark's limits."""

    def __init__(self, ser: TransformWithStateInPandasSerializer, key: tuple) -> None:
        self.ser = ser
        self.key = key
        self.pieces: list[tuple] = []
        self.count = 0

    def add(self, columns: BatchColumns, start: int, stop: int) -> Iterator[tuple]:
        while start < stop:
            room = self._room()
            take = min(room, stop - start)
            self.pieces.append((columns, start, start + take))
            self.count += take
            start += take
            if take == room:
                yield from self.flush()

    def _room(self) -> int:
        """Rows until pyspark would release the chunk: it checks after each row it adds whether
        the chunk holds the most records, or (with a byte limit) its rows' estimated bytes reach it."""
        ser, count = self.ser, self.count
        room = ser.arrow_max_records_per_batch - count
        size, limit = ser.average_arrow_row_size, ser.arrow_max_bytes_per_batch
        if size > 0:  # the fewest rows whose estimate reaches the limit, in pyspark's float arithmetic
            by_bytes = max(1, ceil(limit / size) - count)
            while by_bytes > 1 and (count + by_bytes - 1) * size >= limit:
                by_bytes -= 1
            while (count + by_bytes) * size < limit:
                by_bytes += 1
            room = min(room, by_bytes)
        return max(room, 1)

    def flush(self) -> Iterator[tuple]:
        if self.pieces:
            yield self.key, framed(self.pieces)
        self.pieces, self.count = [], 0


def framed(pieces: list[tuple]):
    """The frame pyspark builds from these rows' tuples: same columns, dtypes and values."""
    import numpy as np
    import pandas as pd

    first = pieces[0][0]
    columns, inferred = {}, []
    for index in range(len(first.names)):
        parts = [batch.arrays[index][start:stop] for batch, start, stop in pieces]
        if isinstance(parts[0], list):  # a column's form follows from its Arrow type alone
            inferred.append(index)
            columns[index] = [v for part in parts for v in part]
        else:
            columns[index] = parts[0] if len(parts) == 1 else np.concatenate(parts)
    if inferred:  # pandas' own inference from rows, one column at a time as in pyspark's frames
        rows = pd.DataFrame(list(zip(*(columns[i] for i in inferred))))
        columns.update((i, rows.iloc[:, n]._values) for n, i in enumerate(inferred))
    frame = pd.DataFrame(columns, copy=False)
    frame.columns = list(namedtuple("Pandas", first.names, rename=True)._fields)
    return frame
