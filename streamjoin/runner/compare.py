"""Compare a query's output records with a case's `expected`, as the conformance format defines:
column names case-insensitive, numbers by numeric value, `ts`/`key`/`headers` compared only when
the expected record has them (headers in order, the engine's replay header left out), `ordered` or `multiset`, and never an extra record.
`ordered` on an output spread over several partitions is the order Kafka keeps: each partition's
records in `expected`'s order, the partitions interleaved in any way (a reader of the topic sees
no order across partitions; a single-task test driver writes one)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from streamjoin.runner.cases import ExpectedRecord


@dataclass(frozen=True)
class OutputRecord:
    """One record read back from a sink topic, decoded."""

    topic: str
    partition: int
    offset: int
    ts: int
    key: Any
    value: Any  # a dict, a primitive, or None for a tombstone
    window: tuple[int, int] | None = None  # a windowed key's (start, end)
    window_type: str | None = None  # TIME | SESSION: how the key encodes the window
    headers: tuple[tuple[str, bytes | None], ...] = ()  # but the engine's replay header

    def describe(self) -> str:
        window = f" window={list(self.window)}" if self.window else ""
        window += f" {self.window_type}" if self.window_type else ""
        headers = f" headers={_headers(self.headers)}" if self.headers else ""
        return _describe(self.ts, self.key, self.value) + window + headers


def describe_expected(expected: ExpectedRecord) -> str:
    window = f" window={[expected.window['start'], expected.window['end']]}" if expected.window else ""
    window += f" {expected.window['type'].upper()}" if expected.window and expected.window.get("type") else ""
    headers = f" headers={_headers(expected.header_pairs)}" if expected.has_headers else ""
    return _describe(expected.ts if expected.has_ts else _ABSENT, expected.key if expected.has_key else _ABSENT,
                     expected.value) + window + headers


def _headers(pairs) -> str:
    """Headers as the case format writes them: values in base64."""
    return json.dumps([{"key": k, "value": None if v is None else base64.b64encode(v).decode()} for k, v in pairs])


_ABSENT = object()


def _describe(ts: Any, key: Any, value: Any) -> str:
    parts = [] if ts is _ABSENT else [f"ts={ts}"]
    if key is not _ABSENT:
        parts.append(f"key={json.dumps(key, default=str)}")
    parts.append(f"value={json.dumps(value, default=str)}")
    return "{" + ", ".join(parts) + "}"


def normalize(value: Any) -> Any:
    """A hashable canonical form: names folded to lower case, numbers to Decimal."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float, Decimal)):
        try:
            return Decimal(str(value)).normalize()
        except InvalidOperation:
            return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return tuple(sorted((str(k).lower(), normalize(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("[", *(normalize(v) for v in value))
    return str(value)


def matches(expected: ExpectedRecord, actual: OutputRecord) -> bool:
    if expected.has_ts and expected.ts != actual.ts:
        return False
    if expected.has_key and normalize(expected.key) != normalize(actual.key):
        return False
    if expected.window is not None and (expected.window["start"], expected.window["end"]) != actual.window:
        return False
    # a TIME and a SESSION windowed key with the same bounds are different bytes
    kind = expected.window.get("type") if expected.window is not None else None
    if kind and actual.window_type and kind.upper() != actual.window_type:
        return False
    if expected.has_headers and expected.header_pairs != actual.headers:
        return False
    return normalize(expected.value) == normalize(actual.value)


def compare(expected: list[ExpectedRecord], actual: list[OutputRecord], ordered: bool) -> str | None:
    """None when `actual` is exactly `expected`; otherwise a one-line reason."""
    if ordered and len({a.partition for a in actual}) > 1:
        return _interleaving_reason(expected, actual)
    if ordered:
        for i, (exp, act) in enumerate(zip(expected, actual)):
            if not matches(exp, act):
                return f"record {i}: expected {describe_expected(exp)}, got {act.describe()}"
        return _count_reason(expected, actual)
    pairs = _max_matching(expected, actual)
    if len(pairs) == len(expected) == len(actual):
        return None
    reasons = []
    missing = [e for i, e in enumerate(expected) if i not in pairs]
    unexpected = [a for j, a in enumerate(actual) if j not in pairs.values()]
    if missing:
        reasons.append("missing " + ", ".join(describe_expected(e) for e in missing))
    if unexpected:
        reasons.append("unexpected " + ", ".join(a.describe() for a in unexpected))
    return "; ".join(reasons)


def _interleaving_reason(expected: list[ExpectedRecord], actual: list[OutputRecord]) -> str | None:
    """None when `expected` is an interleaving of the partitions' records (each in offset order).
    Each expected record takes the next record of the first partition whose next one matches: a
    record's key decides its partition, so two partitions rarely offer a match for the same one."""
    queues: dict[int, list[OutputRecord]] = {}
    for act in sorted(actual, key=lambda a: (a.partition, a.offset)):
        queues.setdefault(act.partition, []).append(act)
    heads = dict.fromkeys(queues, 0)
    for i, exp in enumerate(expected):
        partition = next((p for p, q in queues.items() if heads[p] < len(q) and matches(exp, q[heads[p]])), None)
        if partition is None:
            nexts = ", ".join(f"partition {p}: {q[heads[p]].describe()}" for p, q in queues.items() if heads[p] < len(q))
            return f"record {i}: expected {describe_expected(exp)}, got no partition's next record matching it" + (
                f" (next: {nexts})" if nexts else f" ({len(expected) - i} missing record(s))")
        heads[partition] += 1
    extra = [a.describe() for p, q in queues.items() for a in q[heads[p]:]]
    return f"{len(extra)} unexpected record(s): {', '.join(extra)}" if extra else None


def _max_matching(expected: list[ExpectedRecord], actual: list[OutputRecord]) -> dict[int, int]:
    """Maximum bipartite matching expected -> actual (Kuhn's augmenting paths): an expected record
    that leaves ts or key open must not steal the only actual record a stricter one matches."""
    candidates = [[j for j, act in enumerate(actual) if matches(exp, act)] for exp in expected]
    owner: dict[int, int] = {}  # actual index -> expected index

    def augment(i: int, seen: set[int]) -> bool:
        for j in candidates[i]:
            if j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    for i in range(len(expected)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


def _count_reason(expected: list[ExpectedRecord], actual: list[OutputRecord]) -> str | None:
    if len(actual) > len(expected):
        extra = ", ".join(a.describe() for a in actual[len(expected):])
        return f"{len(actual) - len(expected)} unexpected record(s): {extra}"
    if len(actual) < len(expected):
        missing = ", ".join(describe_expected(e) for e in expected[len(actual):])
        return f"{len(expected) - len(actual)} missing record(s): {missing}"
    return None
