"""A stand-in for a query process at the Kafka layer, for the kill -9 loop of
test_kafka_cluster.py: micro-batches as Spark runs them (plan a batch's input ranges and note
them, produce its results, then commit the batch), with the results of each task and batch in one
Kafka transaction (`TransactionalBatchProducer`). Killed anywhere, a restart replays the planned
batch over the same ranges, as Spark replays an uncommitted batch from its offset log.

    python -m tests.integration.txn_task_loop BOOTSTRAP INPUT OUTPUT CHECKPOINT [--until-caught-up]

It prints "kafka-committed <batch>" after the Kafka commits and before its own, and waits there a
little, so kills land in that window too."""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

from streamjoin.kafka import offsets
from streamjoin.kafka.rdkafka import read_range
from streamjoin.kafka.transactions import TaskIdentity, TransactionalBatchProducer


def note(path: Path, state: dict) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(state))
    os.replace(temporary, path)


def run_batch(config: dict, topics: tuple[str, str], batch: int, starts: dict, ends: dict) -> None:
    source, sink = topics
    for task in sorted(ends):
        records = [m for chunk in read_range(config, source, int(task), starts[task], ends[task]) for m in chunk]
        values = [b"result-of-" + m.value() for m in records]
        if values:
            TransactionalBatchProducer(config, TaskIdentity("q", sink, int(task), "q@e1"), timeout_s=60).produce_columns(
                batch, [sink] * len(values), [m.key() for m in records], values,
                [m.timestamp()[1] for m in records], [None] * len(values))


def main(bootstrap: str, source: str, sink: str, checkpoint: Path, until_caught_up: bool) -> None:
    config = {"bootstrap_servers": bootstrap.split(",")}
    state = json.loads(checkpoint.read_text()) if checkpoint.exists() else {"committed": -1, "positions": None}
    while True:
        planned = state.get("planned")
        if planned is None or planned["batch"] <= state["committed"]:  # plan the next batch
            with offsets.OffsetClient(config) as client:
                ends = {str(tp.partition): end for tp, end in client.ends(client.topic_partitions([source])).items()}
            starts = state["positions"] or {task: 0 for task in ends}
            if ends == starts:
                if until_caught_up:
                    return
                time.sleep(0.05)
                continue
            planned = {"batch": state["committed"] + 1, "starts": starts, "ends": ends}
            state = {**state, "planned": planned}
            note(checkpoint, state)
        run_batch(config, (source, sink), planned["batch"], planned["starts"], planned["ends"])
        print(f"kafka-committed {planned['batch']}", flush=True)
        time.sleep(random.uniform(0, 0.3))  # between the Kafka commit and the checkpoint's
        state = {"committed": planned["batch"], "positions": planned["ends"], "planned": planned}
        note(checkpoint, state)
        print(f"committed {planned['batch']}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]), "--until-caught-up" in sys.argv)
