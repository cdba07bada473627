"""murmur2 against the vectors of Kafka's UtilsTest.testMurmur2 (the Java client's values, also
used verbatim by sarama, franz-go and librdkafka ports), and against kafka-python's partitioner."""

from dataclasses import dataclass

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from streamjoin.kafka.murmur2 import default_partition, murmur2


@dataclass(frozen=True)
class Case:
    key: bytes
    expected: int


KAFKA_VECTORS = [
    Case(b"21", -973932308),
    Case(b"foobar", -790332482),
    Case(bytes([12, 42, 56, 24, 109, 111]), 274204207),
    Case(b"a-little-bit-long-string", -985981536),
    Case(b"a-little-bit-longer-string", -1486304829),
    Case(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    Case(b"abc", 479470107),
]


@pytest.mark.parametrize("case", KAFKA_VECTORS, ids=lambda c: repr(c.key))
def test_murmur2_matches_kafka_java_client(case):
    assert murmur2(case.key) == case.expected


@pytest.mark.parametrize("case", KAFKA_VECTORS, ids=lambda c: repr(c.key))
def test_default_partition_is_to_positive_mod_n(case):
    # toPositive masks the sign bit: foobar -> 1357151166, 1357151166 % 10 == 6.
    assert default_partition(case.key, 10) == (case.expected & 0x7FFFFFFF) % 10


def test_agrees_with_kafka_python_for_every_tail_length():
    keys = [f"key-{i}".encode() * (i % 5) for i in range(200)]  # lengths 0..30: all tails
    for key in keys:
        assert murmur2(key) & 0x7FFFFFFF == kafka_python_murmur2(key) & 0x7FFFFFFF, key


def test_rejects_non_positive_partition_count():
    with pytest.raises(ValueError, match="partition count"):
        default_partition(b"k", 0)
