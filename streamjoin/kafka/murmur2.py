"""Kafka's default partitioner: murmur2 (seed 0x9747b28c) of the serialized key, made positive by
masking the sign bit (Utils.toPositive), modulo the partition count. Every producer we write uses
it so our topics co-partition with topics written by any other Kafka client; keyless records go
round-robin (`choose_partition`). Pure Python: both Kafka clients use it."""

from __future__ import annotations

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2 as a signed 32-bit int (what the Java client returns)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null serialized key."""
    if partitions <= 0:
        raise ValueError(f"partition count must be positive, got {partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def choose_partition(key: bytes | None, partitions: int, sequence: int) -> int:
    """Keyed: Kafka's default partitioner. Keyless: round-robin by the record's sequence number
    within its write (deterministic, so a replayed write lands records where they were)."""
    if key is None:
        return sequence % partitions
    return default_partition(key, partitions)
