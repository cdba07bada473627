"""Flink's `'scan.startup.mode'` read from a declaration (the Flink document's own options as its
first case) and turned into each partition's start of a query's first run (Spark's JSON
placeholders: -2 earliest, -1 latest)."""

from __future__ import annotations

import pytest

from streamjoin.app.startup import StartupError, start_offsets, startups
from streamjoin.kafka.offsets import TopicPartition
from streamjoin.plan import plan_program
from streamjoin.plan.startup import Startup
from streamjoin.app.compiling import compile_program

DOCUMENT = ("'connector' = 'kafka', 'topic' = 'products', 'scan.startup.mode' = 'earliest-offset', "
            "'properties.bootstrap.servers' = 'localhost:9092', 'value.format' = 'json'")
TPS = [TopicPartition("t", 0), TopicPartition("t", 1)]
T0, T1 = TPS

# (WITH options, the startup read, committed offsets, offsets the timestamp selects, expected starts)
CASES = {
    "the document's earliest-offset": (DOCUMENT, Startup("earliest-offset"), {}, {}, {T0: -2, T1: -2}),
    "no option: earliest": ("'topic' = 't'", Startup(), {}, {}, {T0: -2, T1: -2}),
    "latest-offset": ("'topic' = 't', 'scan.startup.mode' = 'latest-offset'", Startup("latest-offset"), {}, {},
                      {T0: -1, T1: -1}),
    "timestamp": ("'topic' = 't', 'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '1000'",
                  Startup("timestamp", timestamp_ms=1000), {}, {T0: 4, T1: 9}, {T0: 4, T1: 9}),
    "specific-offsets, partition 0 not listed": (
        "'topic' = 't', 'scan.startup.mode' = 'specific-offsets', 'scan.startup.specific-offsets' = "
        "'partition:1,offset:300'", Startup("specific-offsets", offsets=((1, 300),)), {}, {}, {T0: -2, T1: 300}),
    "group-offsets, a partition without a commit reset to latest": (
        "'topic' = 't', 'scan.startup.mode' = 'group-offsets', 'properties.group.id' = 'g', "
        "'properties.auto.offset.reset' = 'latest'", Startup("group-offsets", group_id="g", offset_reset="latest"),
        {T0: 42, T1: -1001}, {}, {T0: 42, T1: -1}),
}


def compiled(options: str):
    sql = f"CREATE TABLE t (v STRING) WITH ({options});\nSELECT v FROM t;"
    [query] = compile_program(plan_program(sql, dialect="flink"))
    return query


@pytest.mark.parametrize("name", CASES)
def test_where_a_first_run_starts(name):
    options, startup, committed, by_timestamp, expected = CASES[name]
    query = compiled(options)
    [(table, read)] = startups(query).values()
    assert read == startup
    assert start_offsets(table, read, TPS, committed, by_timestamp) == expected


def test_a_partition_the_group_never_committed_is_refused_without_a_reset():
    startup = Startup("group-offsets", group_id="g")
    with pytest.raises(StartupError, match="consumer group 'g' committed no offset for topic t partition 1"):
        start_offsets("t", startup, TPS, {T0: 5}, {})


def test_a_listed_partition_the_topic_lacks_is_refused():
    with pytest.raises(StartupError, match="names partition 7"):
        start_offsets("t", Startup("specific-offsets", offsets=((7, 1),)), TPS, {}, {})
