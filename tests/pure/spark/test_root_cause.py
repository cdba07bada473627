"""A failed Spark query is reported by its root cause in one line, not Spark's wrapped trace."""

import pytest

from streamjoin.spark.query import root_cause

CASES = [
    ("[STREAM_FAILED] Query [id = 1] terminated with exception: Traceback (most recent call last):\n"
     '  File "x.py", line 3, in latestOffset\n'
     "streamjoin.kafka.offsets.DataLossError: topic 'a' partition 0: the checkpoint's next offset 1000 is past "
     "the log end (the log holds offsets 0..50). Nothing was read.\nJVM stacktrace:\norg.apache.spark.SparkException: x",
     "DataLossError: topic 'a' partition 0: the checkpoint's next offset 1000 is past the log end"),
    ("org.apache.spark.SparkException: Job aborted\nCaused by: java.io.IOException\nValueError: bad thing",
     "ValueError: bad thing"),
    ("something odd happened", "something odd happened"),
]


@pytest.mark.parametrize("message, expected", CASES)
def test_root_cause(message, expected):
    assert root_cause(message).startswith(expected)
