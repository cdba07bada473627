"""The embedded broker restarted (memory storage: every topic is new and empty) under a query's
checkpoint: the next run fails naming topic, partition, the checkpoint offset and the log range,
instead of reading nothing and exiting 0; lag says so too; on_data_loss=earliest reads the new
records. Runs its own broker (the session's is left alone)."""

from __future__ import annotations

import json
import logging

import pytest

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.kafka import admin
from streamjoin.kafka import embedded as broker
from streamjoin.kafka.offsets import DataLossError
from streamjoin.kafka.records import OutRecord
from streamjoin.settings import Settings

pytestmark = pytest.mark.integration

SOURCES = """-- dialect: ksqldb
CREATE STREAM clicks (id STRING KEY, page STRING) WITH (kafka_topic='clicks', value_format='JSON', partitions=1);
"""
QUERY = "-- dialect: ksqldb\nCREATE STREAM pages AS SELECT id, page FROM clicks EMIT CHANGES;\n"


def clicks(engine: Engine, count: int) -> None:
    admin.create_topics(engine.bootstrap, {"clicks": 1}, settings=engine.settings)
    admin.produce(engine.bootstrap, "clicks", [OutRecord(b"u", json.dumps({"page": f"p{i}"}).encode(), 1000 * i)
                                               for i in range(count)], settings=engine.settings)


def pages(tmp_path):
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "sources.sql").write_text(SOURCES)
    (tmp_path / "sql" / "pages.sql").write_text(QUERY)
    return load_project(tmp_path / "sql").query("pages")


def read_then_stop_the_broker(settings: Settings, spark, query) -> None:
    """A first run reads 100 clicks into the query's checkpoint; then the broker stops (its
    topics, in memory, are gone with it)."""
    first = Engine(settings, spark)
    clicks(first, 100)
    assert first.run(query).input_rows == 100
    broker.stop(settings)


def test_a_checkpoint_past_a_restarted_broker_is_data_loss_not_silence(spark, tmp_path, caplog):
    settings, query = Settings(home=tmp_path / "home"), pages(tmp_path)
    try:
        read_then_stop_the_broker(settings, spark, query)
        with caplog.at_level(logging.WARNING, logger="streamjoin.kafka.embedded"):
            second = Engine(settings, spark)  # starts a new, empty embedded broker
            clicks(second, 50)
        assert "checkpoints of earlier runs exist" in caplog.text

        with pytest.raises(DataLossError) as raised:
            second.run(query)
        assert "topic 'clicks' partition 0: the topic is not the one the checkpoint read" in str(raised.value)
        with pytest.raises(DataLossError):
            second.consumer_lag(query)

        recovered = second.run(query, on_data_loss="earliest")
        assert (recovered.input_rows, recovered.consumer_lag) == (50, 0)
    finally:
        broker.stop(settings)


@pytest.mark.parametrize("new_records", [300, 100], ids=["past the checkpoint", "ending at the checkpoint"])
def test_new_records_of_a_restarted_broker_are_refused_or_all_read(spark, tmp_path, new_records):
    """The broker restarted empty and new records produced past (or up to) the checkpoint's
    offsets: no offset is outside the new log, yet none of its records was read. Refused by
    default, naming topic and partition; `earliest` reads every new record, `latest` none."""
    settings, query = Settings(home=tmp_path / "home"), pages(tmp_path)
    try:
        read_then_stop_the_broker(settings, spark, query)
        second = Engine(settings, spark)
        clicks(second, new_records)
        with pytest.raises(DataLossError, match="topic 'clicks' partition 0: the topic is not the one the checkpoint "
                                                "read .*topic id"):
            second.run(query)
        recovered = second.run(query, on_data_loss="earliest")
        assert (recovered.input_rows, recovered.consumer_lag) == (new_records, 0)
        clicks(second, 5)
        assert second.run(query).input_rows == 5  # the new topic is now the one the checkpoint reads

        broker.stop(settings)
        third = Engine(settings, spark)
        clicks(third, new_records + 10)
        skipped = third.run(query, on_data_loss="latest")
        assert (skipped.input_rows, skipped.consumer_lag) == (0, 0)
    finally:
        broker.stop(settings)
