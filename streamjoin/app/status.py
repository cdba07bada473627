"""A query's figures as an operator reads them between runs, from its checkpoint and Kafka
metadata only (no Spark): the lag of each input partition, the last committed batch, the size of
its state, and how many records its output and dead-letter topics hold. The Dagster layer's
`query_status` sensor calls `query_figures` on every tick and turns successive figures into rates.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from streamjoin.app.engine import Engine
from streamjoin.app.project import Query
from streamjoin.kafka import admin


@dataclasses.dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    position: int  # the next offset the query reads
    end: int  # the log end offset

    @property
    def lag(self) -> int:
        return self.end - self.position


@dataclasses.dataclass(frozen=True)
class QueryFigures:
    partitions: tuple[PartitionLag, ...]
    state_bytes: int  # the checkpoint's state store files, all sub-topologies
    last_batch: int | None  # the last batch committed by the main sub-topology; None before any
    last_batch_ms: int | None  # when it was committed (epoch ms)
    output_records: int  # records in the output topic's log
    dead_letters: int  # records in the dead-letter topic's log

    @property
    def consumer_lag(self) -> int:
        return sum(p.lag for p in self.partitions)

    @property
    def read(self) -> int:
        """Sum of the next offsets: grows by the records the query has read."""
        return sum(p.position for p in self.partitions)


def _state_bytes(root: Path) -> int:
    return sum(f.stat().st_size for state in root.glob("*/state") for f in state.rglob("*") if f.is_file())


def _last_commit(checkpoint: Path) -> tuple[int | None, int | None]:
    commits = checkpoint / "commits"
    ids = [int(p.name) for p in commits.glob("[0-9]*")] if commits.exists() else []
    if not ids:
        return None, None
    last = max(ids)
    return last, int((commits / str(last)).stat().st_mtime * 1000)


def _records(engine: Engine, topic: str) -> int:
    begins, ends = admin.log_ranges(engine.bootstrap, [topic], settings=engine.settings)
    return sum(end - begins[tp] for tp, end in ends.items())


def query_figures(engine: Engine, query: Query) -> QueryFigures:
    """Raises DataLossError (a checkpoint offset outside a log) and ConnectionError (no broker)
    as `Engine.consumer_lag` does."""
    positions = engine.partition_positions(query)
    partitions = tuple(PartitionLag(tp.topic, tp.partition, position, end)
                       for tp, (position, end) in sorted(positions.items()))
    root = engine.checkpoint_root(query)
    batch, batch_ms = _last_commit(root / query.compiled[-1].name) if query.compiled else (None, None)
    return QueryFigures(partitions, _state_bytes(root), batch, batch_ms,
                        _records(engine, query.output_topic), _records(engine, engine.dead_letter_topic(query)))
