"""A failed Spark query is reported by its root cause in one line, not Spark's wrapped trace."""

import pytest

from streamjoin.spark.query import QueryFailed, root_cause

CASES = [
    ("[STREAM_FAILED] Query [id = 1] terminated with exception: Traceback (most recent call last):\n"
     '  File "x.py", line 3, in latestOffset\n'
     "streamjoin.kafka.offsets.DataLossError: topic 'a' partition 0: the checkpoint's next offset 1000 is past "
     "the log end (the log holds offsets 0..50). Nothing was read.\nJVM stacktrace:\norg.apache.spark.SparkException: x",
     "DataLossError: topic 'a' partition 0: the checkpoint's next offset 1000 is past the log end"),
    # a checkpoint written by an engine with another state layout, raised inside a task
    ("org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 1.0 failed\n"
     "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
     '  File "paged_state.py", line 190, in load_runtime\n'
     "streamjoin.spark.paged_state.CheckpointIncompatible: the checkpoint holds task state of format 1; this "
     "streamjoin reads and writes format 2. Reset the query and backfill it\n\tat org.apache.spark.x",
     "CheckpointIncompatible: the checkpoint holds task state of format 1; this streamjoin reads and writes format 2. "
     "Reset the query and backfill it"),
    # a task that produces its own results (TaskSink) and misses an acknowledgement
    ("org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 3.0 failed\n"
     "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
     '  File "rdkafka.py", line 99, in _send\n'
     "streamjoin.kafka.rdkafka.ProduceFailed: 1 of 5 records were not acknowledged, e.g. out[1]: Broker: "
     "Message size too large\nRuntimeError: an unrelated later line",
     "ProduceFailed: 1 of 5 records were not acknowledged, e.g. out[1]: Broker: Message size too large"),
    ("org.apache.spark.SparkException: Job aborted\nCaused by: java.io.IOException\nValueError: bad thing",
     "ValueError: bad thing"),
    ("something odd happened", "something odd happened"),
]


@pytest.mark.parametrize("message, expected", CASES)
def test_root_cause(message, expected):
    assert root_cause(message).startswith(expected)


# Brokers gone under Spark's Kafka connector: it gave up within the broker timeout (Engine.run
# then asks the brokers for a second only); our own one-line errors are not that.
TIMED_OUT = [
    ("py4j.protocol.Py4JJavaError: An error occurred while calling o181.collectToPython.\n"
     ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 failed 1 times\n"
     "Caused by: org.apache.kafka.common.errors.TimeoutException: Timeout of 2500ms expired before the position "
     "for partition clicks-1 could be determined", True),
    ("org.apache.spark.SparkException: Job aborted\nCaused by: java.util.concurrent.TimeoutException: Cannot fetch "
     "record for offset 5 in 2500 milliseconds", True),  # the task's poll
    ("org.apache.spark.SparkException: Job aborted\nCaused by: java.util.concurrent.TimeoutException: a Spark wait",
     False),
    (CASES[2][0], False),
]


@pytest.mark.parametrize("message, expected", TIMED_OUT)
def test_the_java_kafka_client_timing_out_is_told_apart(message, expected):
    assert QueryFailed("q", message).java_client_timed_out() is expected
