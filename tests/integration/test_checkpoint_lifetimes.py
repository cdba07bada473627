"""A checkpoint deleted by hand while the Delta table is kept (the remedy README names besides
`reset_<query>`): the next run starts a new checkpoint lifetime whose batch ids start at 0 again.
Its Delta writes carry a new app id (`<query>@<epoch>`, as the replay ids), so Delta's idempotent
app transactions do not skip them as batches already written: the rerun's results are in the table.
With the query's name as app id, the rerun's batch 0 was skipped and the table silently kept only
the first lifetime's rows."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from streamjoin.app.engine import Engine
from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord
from streamjoin.settings import Settings
from tests.integration.test_replay_ids import project

pytestmark = pytest.mark.integration
CLICKS, MORE = 30, 12


def produce(bootstrap: str, topic: str, numbers: range) -> None:
    admin.produce(bootstrap, topic, [OutRecord(b"u%d" % n, b'{"n": %d}' % n, 1000 + n) for n in numbers])


def test_a_hand_deleted_checkpoint_is_a_new_delta_lifetime(spark, kafka_bootstrap, unique_topic, tmp_path):
    engine = Engine(Settings.from_env(), spark)
    admin.create_topics(kafka_bootstrap, {unique_topic: 1})
    produce(kafka_bootstrap, unique_topic, range(CLICKS))
    query = project(tmp_path / "sql", unique_topic, f"q_{unique_topic[-8:]}", f"{unique_topic}-out")
    assert engine.run(query).output_rows == CLICKS

    shutil.rmtree(engine.checkpoint_root(query))
    produce(kafka_bootstrap, unique_topic, range(CLICKS, CLICKS + MORE))
    assert engine.run(query).output_rows == CLICKS + MORE  # every input again, from batch 0

    table = spark.read.format("delta").load(engine.delta_path(query)).toPandas()
    once_more = {n: 2 for n in range(CLICKS)} | {n: 1 for n in range(CLICKS, CLICKS + MORE)}
    assert Counter(table["N"].tolist()) == once_more
