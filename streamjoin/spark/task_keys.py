"""Grouping keys that give each task its own shuffle partition, so tasks run side by side.

A task's rows are grouped by one integer key (the grouping key of `transformWithStateInPandas`,
under which its state is kept), and Spark puts a group on shuffle partition
pmod(murmur3(key), N). With the task number as the key, tasks 0 and 1 both land on partition 1
of 2 (their hashes are both odd), so the two tasks of a 2-partition topic ran one after the
other on one core while the other idled. A task's key is therefore its number plus the smallest
multiple of STRIDE that lands it on partition task mod N; the task is the key mod STRIDE.

    N = 2:  task 0: keys 0, 65536, 131072, 196608 and 262144 all hash to partition 1;
                    327680 hashes to 0 -> task 0's key is 327680 (327680 mod 65536 = 0)
            task 1: key 1 hashes to partition 1 -> task 1's key is 1

Pure Python: the hash is Spark's `hash()` of an INT (Murmur3 x86 32-bit, seed 42), so the driver
picks keys without a Spark job.
"""

from __future__ import annotations

STRIDE = 1 << 16  # more partitions than any Kafka topic has
_SEED = 42  # Spark's hash() and HashPartitioning seed
_MASK = 0xFFFFFFFF


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def spark_hash(value: int) -> int:
    """Spark's `hash(value)` of a 32-bit INT (signed, as Spark returns it)."""
    k1 = _rotl((value & _MASK) * 0xCC9E2D51 & _MASK, 15) * 0x1B873593 & _MASK
    h1 = (_rotl(_SEED ^ k1, 13) * 5 + 0xE6546B64) & _MASK
    h1 ^= 4  # the input's length in bytes
    h1 = (h1 ^ (h1 >> 16)) * 0x85EBCA6B & _MASK
    h1 = (h1 ^ (h1 >> 13)) * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def shuffle_partition(key: int, partitions: int) -> int:
    """The shuffle partition Spark's hash partitioning gives a group with this key."""
    return spark_hash(key) % partitions  # Python's % of a positive modulus is Spark's pmod


def task_key(task: int, partitions: int) -> int:
    """The grouping key of `task` when the state has `partitions` shuffle partitions."""
    key = task
    while shuffle_partition(key, partitions) != task % partitions:
        key += STRIDE
    if key >= 1 << 31:  # not an INT: only with tens of thousands of shuffle partitions
        raise ValueError(f"no INT grouping key puts task {task} on shuffle partition {task % partitions} of {partitions}")
    return key


def task_of(key: int) -> int:
    return key % STRIDE
