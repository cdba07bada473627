"""Flink's `'scan.startup.mode'` decides where a query's first run starts reading, through the
engine (Kafka, Spark): six records on a topic before the first run; a table starting at a
timestamp reads the records from it on, one starting at specific offsets reads from the offset
listed, one starting at the latest offset reads none of them and only what comes after. A
second run goes on from its checkpoint, whatever the mode."""

from __future__ import annotations

import json
import uuid

import pytest

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord
from streamjoin.settings import Settings

pytestmark = pytest.mark.integration

# (query, the table's startup options, records its first run reads of the six, of the two that follow)
MODES = {
    "from_timestamp": ("'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '4000'", 3, 2),
    "from_offsets": ("'scan.startup.mode' = 'specific-offsets', "
                     "'scan.startup.specific-offsets' = 'partition:0,offset:1'", 5, 2),
    "from_latest": ("'scan.startup.mode' = 'latest-offset'", 0, 2),
    "from_earliest": ("'scan.startup.mode' = 'earliest-offset'", 6, 2),
}


def events(settings: Settings, topic: str, first: int, count: int) -> None:
    admin.produce(settings.kafka_bootstrap, topic, [OutRecord(None, json.dumps({"n": n}).encode(), 1000 * n)
                                                    for n in range(first, first + count)], settings=settings)


def project(tmp_path, topic: str):
    folder = tmp_path / "sql"
    folder.mkdir()
    sources = [f"CREATE TABLE {name}_events (n INT) WITH ('connector' = 'kafka', 'topic' = '{topic}', "
               f"'value.format' = 'json', {options});" for name, (options, _, _) in MODES.items()]
    (folder / "sources.sql").write_text("-- dialect: flink\n" + "\n".join(sources) + "\n")
    for name in MODES:
        (folder / f"{name}.sql").write_text(f"-- dialect: flink\nSELECT n FROM {name}_events;\n")
    return load_project(folder)


def test_where_each_first_run_starts(spark, kafka_bootstrap, tmp_path):
    topic = f"sj-startup-{uuid.uuid4().hex[:8]}"
    settings = Settings(kafka_bootstrap=kafka_bootstrap, home=tmp_path / "home")
    admin.create_topics(kafka_bootstrap, {topic: 1}, settings=settings)
    events(settings, topic, 1, 6)
    sql, engine = project(tmp_path, topic), Engine(settings, spark)
    first = {name: engine.run(sql.query(name)).input_rows for name in MODES}
    events(settings, topic, 7, 2)
    second = {name: engine.run(sql.query(name)).input_rows for name in MODES}
    assert first == {name: expected for name, (_, expected, _) in MODES.items()}
    assert second == {name: expected for name, (_, _, expected) in MODES.items()}
