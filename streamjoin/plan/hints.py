"""Flink's query hints on a SELECT: `/*+ STATE_TTL('o' = '1d', 'p' = '12h') */` sets the state
retention of a regular join's input, named by table or alias (Flink 1.19+); the join strategy
hints BROADCAST, SHUFFLE_HASH, SHUFFLE_MERGE and NEST_LOOP are accepted and ignored (there is one
join strategy here: keyed state per task). Any other hint is rejected."""

from __future__ import annotations

import re

from sqlglot import exp

from streamjoin.plan.scope import Context, SelectScope

JOIN_STRATEGY_HINTS = frozenset({"BROADCAST", "SHUFFLE_HASH", "SHUFFLE_MERGE", "NEST_LOOP"})
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|milli|millis|milliseconds?|s|sec|secs|seconds?|min|mins|minutes?|h|"
                       r"hours?|d|days?)?\s*$", re.I)
_UNIT_MS = {"ms": 1, "m": 60_000, "s": 1000, "h": 3_600_000, "d": 86_400_000}


def duration_ms(text: str) -> int | None:
    """Flink's duration text ('1 h', '90 s', '1d', '3600000 ms', bare ms) -> ms; None if it is not one."""
    match = _DURATION.match(str(text))
    if not match:
        return None
    unit = (match.group(2) or "ms").lower()
    key = "ms" if unit.startswith("mil") or unit == "ms" else ("m" if unit.startswith("min") else unit[0])
    return int(match.group(1)) * _UNIT_MS[key]


def state_ttl_hints(ctx: Context, select: exp.Select, scope: SelectScope) -> dict[str, int]:
    """Alias (lower case) of a relation of `select` -> its STATE_TTL in ms."""
    hint = select.args.get("hint")
    if hint is None:
        return {}
    if not ctx.flavour.join_hints:
        raise ctx.error("hint", f"query hints are not supported in {ctx.flavour.name}", hint)
    ttl: dict[str, int] = {}
    for call in hint.expressions:
        name = call.name.upper() if isinstance(call, (exp.Anonymous, exp.Func)) else ""
        if name in JOIN_STRATEGY_HINTS:
            continue
        if name != "STATE_TTL":
            raise ctx.error("hint", f"unknown hint {call.sql()}: supported are STATE_TTL and the join strategy hints "
                            f"{', '.join(sorted(JOIN_STRATEGY_HINTS))} (accepted, ignored)", call)
        for option in call.expressions:
            if not (isinstance(option, exp.EQ) and isinstance(option.this, exp.Literal)):
                raise ctx.error("hint", "STATE_TTL takes 'table or alias' = 'duration' pairs", option)
            entry = scope.find(option.this.name)
            millis = duration_ms(option.expression.name)
            if entry is None:
                raise ctx.error("hint", f"STATE_TTL names {option.this.name!r}, which this query does not read", option)
            if millis is None:
                raise ctx.error("hint", f"STATE_TTL of {option.this.name!r} must be a duration like '1d' or '12 h'",
                                option)
            ttl[entry.alias.lower()] = millis
    return ttl
