"""The brokers-gone scenario shared by tests/integration/test_outage.py (one node) and
test_kafka_cluster.py (all three nodes): a one-topic query, its inputs, and the one line a run
must end with."""

from __future__ import annotations

import json

from streamjoin.kafka import rdkafka
from tests.integration.cli_runs import RunProcess

TIMEOUT_S = 5.0  # STREAMJOIN_KAFKA_TIMEOUT_S of the runs
# Past the timeout: the failed query stopping, then the process exiting; a restart's imports.
SLACK_S = 8.0
SOURCES = """-- dialect: ksqldb
CREATE STREAM clicks (id STRING KEY, page STRING) WITH (kafka_topic='clicks', value_format='JSON', partitions=2);
"""
QUERY = "-- dialect: ksqldb\nCREATE STREAM pages AS SELECT id, page FROM clicks EMIT CHANGES;\n"


def clicks(bootstrap: str, first: int, count: int) -> None:
    ids = range(first, first + count)
    sent = rdkafka.produce_columns({"bootstrap_servers": [bootstrap]}, ["clicks"] * count,
                                   [f"u{i % 7}".encode() for i in ids],
                                   [json.dumps({"page": f"p{i}"}).encode() for i in ids],
                                   [1000 * i + 1 for i in ids], [None] * count, "test", first, 0)
    assert sent == count


def the_one_line(run: RunProcess, bootstrap: str) -> str:
    """The run's stderr: its one error line (naming the servers) and the CLI's debugging hint."""
    lines = run.stderr_lines()
    errors = [line for line in lines if not line.startswith("(set STREAMJOIN_DEBUG=1")]
    assert len(errors) == 1, run.text()
    assert f"cannot reach the Kafka brokers at {bootstrap}" in errors[0], run.text()
    assert not [line for line in lines if line.startswith("%") or "Traceback" in line or "\tat " in line]
    return errors[0]
