"""Flink's connector options of a declaration, read, checked and handed on (`Connector`): what
the engine does with an option is what Flink does with it; an option it would not honour is a
positioned error, never a silent change of meaning.

- `'connector'`: `kafka` (the default), `upsert-kafka` (plan.kafka_keys reads its keys), or
  `jdbc`: a PostgreSQL table read by lookup joins (plan.jdbc_options); any other is an error
  naming these three;
- `'topic'`: one topic (no `;` list); `'topic-pattern'` is not supported;
- `'scan.startup.mode'` with `'scan.startup.timestamp-millis'` / `'scan.startup.specific-offsets'`:
  where the table's first run starts reading (plan.startup; the engine turns it into each
  partition's starting offset);
- `'properties.*'`: `bootstrap.servers` (the cluster the table's topic is on: the engine runs the
  query there; a query's tables, the one it writes too, all name the same cluster), `group.id`
  and `auto.offset.reset` (what `'group-offsets'` reads); any other is a Kafka client property
  (Kafka's Java name), which reaches the Kafka clients of each query reading the table or writing
  it (INSERT INTO), translated for librdkafka, or is an error saying why the clients cannot
  honour it (plan.client_properties, the table of them in streamjoin.kafka_properties); a
  table's security properties win over the engine's settings;
- `'sink.*'`: the engine's sink writes each result keyed by its key with Kafka's default
  partitioner, exactly once on brokers that honour transactions (the run says so at its start),
  at least once with replay ids on Tansu (docs/operations.md): `'sink.partitioner' = 'default'`
  and `'sink.delivery-guarantee' = 'exactly-once' | 'at-least-once' | 'none'` (the last two it
  exceeds) say so; any other sink option or value is an error saying what the engine does instead."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from sqlglot import exp

from streamjoin.plan.client_properties import read_client_properties
from streamjoin.plan.jdbc_options import jdbc_table
from streamjoin.plan.kafka_keys import Properties
from streamjoin.plan.lookup_spec import JdbcTable
from streamjoin.plan.scope import Context
from streamjoin.plan.startup import EARLIEST, STARTUP_MODES, Startup

CONNECTORS = ("kafka", "upsert-kafka", "jdbc")
JDBC = "jdbc"
_STARTUP_COMPANIONS = {"scan.startup.timestamp-millis": "timestamp", "scan.startup.specific-offsets": "specific-offsets"}
_SINK_VALUES = {"sink.partitioner": ("default",),
                "sink.delivery-guarantee": ("exactly-once", "at-least-once", "none")}
_OFFSET = re.compile(r"\s*partition\s*:\s*(\d+)\s*,\s*offset\s*:\s*(\d+)\s*")


@dataclass(frozen=True)
class Connector:
    """What a declaration's connector options decide: the lookup table (`jdbc`), else where its
    first run starts reading, the Kafka cluster its options name (None: the engine's) and the
    client properties they give ((Kafka's name, value))."""

    lookup: JdbcTable | None = None
    startup: Startup = EARLIEST
    bootstrap: str | None = None
    properties: tuple[tuple[str, str], ...] = ()


def read_connector_options(ctx: Context, props: Properties, names: Iterable[str], where: exp.Expr) -> Connector:
    """`names`: the options given (lower case)."""
    if not ctx.flavour.connector_options:
        return Connector()
    names = list(names)
    connector = (props.get("connector") or "kafka").lower()
    if connector not in CONNECTORS:
        raise ctx.error("connector", f"connector {props.get('connector')!r} is not supported: 'connector' = "
                        f"{', '.join(repr(c) for c in CONNECTORS)} (a Kafka topic, or a PostgreSQL table "
                        "read by lookup joins); a dimension table kept in another store: publish it to a topic "
                        "and read it as an upsert-kafka table", props.written("connector"))
    if connector == JDBC:
        return Connector(lookup=jdbc_table(ctx, props, names, where))
    if props.get("topic-pattern") is not None:
        raise ctx.error("connector-option", "'topic-pattern' is not supported: name the one topic the table "
                        "reads, 'topic' = '...'", props.written("topic-pattern"))
    topic = props.get("topic")
    if topic is not None and ";" in topic:
        raise ctx.error("connector-option", "a table reads one topic: declare one table per topic", props.written("topic"))
    properties = read_client_properties(ctx, props, names)
    for name in names:
        if name.startswith("sink."):
            _check_sink(ctx, props, name)
    return Connector(startup=_startup(ctx, props, where), bootstrap=_servers(props.get("properties.bootstrap.servers")),
                     properties=properties)


def _servers(text: str | None) -> str | None:
    """The bootstrap servers as one comparable text (spaces out, order kept)."""
    return ",".join(s.strip() for s in text.split(",") if s.strip()) if text else None


def _check_sink(ctx: Context, props: Properties, name: str) -> None:
    allowed = _SINK_VALUES.get(name)
    value = props.get(name) or ""
    if allowed is None:
        raise ctx.error("connector-option", f"{name!r} is not supported: the engine's sink writes each result "
                        "with Kafka's default partitioner (by its key), from the task that computed it, in "
                        "Kafka transactions named after the query, step and task; 'sink.partitioner' = "
                        "'default' and 'sink.delivery-guarantee' = 'exactly-once' say so", props.written(name))
    if value.lower() not in allowed:
        raise ctx.error("connector-option", f"{name!r} = {value!r} is not supported: the engine's sink writes each "
                        "result with Kafka's default partitioner (by its key), exactly once where the brokers "
                        f"honour transactions (docs/operations.md): {name!r} = "
                        f"{' or '.join(repr(a) for a in allowed)}", props.written(name))


def _startup(ctx: Context, props: Properties, where: exp.Expr) -> Startup:
    mode = (props.get("scan.startup.mode") or EARLIEST.mode).lower()
    if mode not in STARTUP_MODES:
        raise ctx.error("connector-option", f"'scan.startup.mode' is one of {', '.join(STARTUP_MODES)}, not "
                        f"{props.get('scan.startup.mode')!r}", props.written("scan.startup.mode"))
    for option, needs in _STARTUP_COMPANIONS.items():
        given = props.get(option) is not None
        if given != (mode == needs):
            raise ctx.error("connector-option", f"{option!r} goes with 'scan.startup.mode' = '{needs}'" +
                            (f", not {mode!r}" if given else f": give it with that mode"),
                            props.written(option) if given else props.written("scan.startup.mode"))
    if mode == "timestamp":
        text = props.get("scan.startup.timestamp-millis")
        if not re.fullmatch(r"\d+", text):
            raise ctx.error("connector-option", f"'scan.startup.timestamp-millis' is epoch milliseconds, not {text!r}",
                            props.written("scan.startup.timestamp-millis"))
        return Startup("timestamp", timestamp_ms=int(text))
    if mode == "specific-offsets":
        return Startup("specific-offsets", offsets=_offsets(ctx, props))
    if mode == "group-offsets":
        return _group_offsets(ctx, props, where)
    return Startup(mode)


def _offsets(ctx: Context, props: Properties) -> tuple[tuple[int, int], ...]:
    text = props.get("scan.startup.specific-offsets")
    pairs = [_OFFSET.fullmatch(part) for part in text.split(";") if part.strip()]
    if not pairs or not all(pairs):
        raise ctx.error("connector-option", "'scan.startup.specific-offsets' is written "
                        f"'partition:0,offset:42;partition:1,offset:300', not {text!r}",
                        props.written("scan.startup.specific-offsets"))
    return tuple((int(m[1]), int(m[2])) for m in pairs)


def _group_offsets(ctx: Context, props: Properties, where: exp.Expr) -> Startup:
    group = props.get("properties.group.id")
    if group is None:
        raise ctx.error("connector-option", "'scan.startup.mode' = 'group-offsets' reads the offsets a consumer "
                        "group committed: name it, 'properties.group.id' = '...'", props.written("scan.startup.mode") or where)
    reset = (props.get("properties.auto.offset.reset") or "none").lower()
    if reset not in ("earliest", "latest", "none"):
        raise ctx.error("connector-option", f"'properties.auto.offset.reset' is earliest, latest or none, not {reset!r}",
                        props.written("properties.auto.offset.reset"))
    return Startup("group-offsets", group_id=group, offset_reset=reset)
