"""Flink's connector options of a declaration, read and checked: every table is a Kafka topic, so
an option that would make it something else, or read it otherwise than the engine does, is a
positioned error rather than a silent change of meaning.

- `'connector'`: `kafka` (the default) or `upsert-kafka` (plan.kafka_keys reads its keys);
- `'topic'`: one topic (no `;` list); `'topic-pattern'` is not supported;
- `'scan.startup.mode'`: `earliest-offset`, which is what a query does (it reads each input from
  its earliest offset, then from its checkpoint); the other modes and their companion options
  (`scan.startup.timestamp-millis`, `scan.startup.specific-offsets`) are rejected;
- `'properties.*'`: the Kafka clients are the engine's (its settings say where Kafka is and how
  to reach it), so only `properties.bootstrap.servers` and `properties.group.id`, which every
  Flink Kafka table names, are accepted; any other client property is rejected."""

from __future__ import annotations

from typing import Iterable

from sqlglot import exp

from streamjoin.plan.kafka_keys import Properties
from streamjoin.plan.scope import Context

CONNECTORS = ("kafka", "upsert-kafka")
STARTUP_MODES = ("earliest-offset", "latest-offset", "group-offsets", "timestamp", "specific-offsets")
_READ_AS_WRITTEN = "earliest-offset"
_STARTUP_COMPANIONS = {"scan.startup.timestamp-millis": "timestamp", "scan.startup.specific-offsets": "specific-offsets"}
_CLIENT_PROPERTIES = ("properties.bootstrap.servers", "properties.group.id")


def check_connector_options(ctx: Context, props: Properties, names: Iterable[str], where: exp.Expr) -> None:
    """`names`: the options given (lower case)."""
    if not ctx.flavour.connector_options:
        return
    connector = props.get("connector")
    if connector is not None and connector.lower() not in CONNECTORS:
        raise ctx.error("connector", f"connector {connector!r} is not supported: every table is a Kafka topic, "
                        f"'connector' = {' or '.join(repr(c) for c in CONNECTORS)} (a dimension table kept in "
                        "another store: publish it to a topic and read it as an upsert-kafka table)",
                        props.written("connector"))
    if props.get("topic-pattern") is not None:
        raise ctx.error("connector-option", "'topic-pattern' is not supported: name the one topic the table "
                        "reads, 'topic' = '...'", props.written("topic-pattern"))
    topic = props.get("topic")
    if topic is not None and ";" in topic:
        raise ctx.error("connector-option", "a table reads one topic: declare one table per topic", props.written("topic"))
    _check_startup(ctx, props)
    for name in names:
        if name.startswith("properties.") and name not in _CLIENT_PROPERTIES:
            raise ctx.error("connector-option", f"{name!r} would not reach the Kafka clients, which are the "
                            "engine's: set client properties in its settings (docs/operations.md); a table "
                            f"accepts {' and '.join(repr(p) for p in _CLIENT_PROPERTIES)}",
                            props.written(name) or where)


def _check_startup(ctx: Context, props: Properties) -> None:
    mode = props.get("scan.startup.mode")
    if mode is not None and mode.lower() not in STARTUP_MODES:
        raise ctx.error("connector-option", f"'scan.startup.mode' is one of {', '.join(STARTUP_MODES)}, not "
                        f"{mode!r}", props.written("scan.startup.mode"))
    if mode is not None and mode.lower() != _READ_AS_WRITTEN:
        raise ctx.error("connector-option", f"'scan.startup.mode' = {mode!r} is not supported: a query reads each "
                        f"input from its earliest offset, then from its checkpoint ('{_READ_AS_WRITTEN}'); "
                        "remove the option or write that", props.written("scan.startup.mode"))
    for option, needs in _STARTUP_COMPANIONS.items():
        if props.get(option) is not None:
            raise ctx.error("connector-option", f"{option!r} belongs to 'scan.startup.mode' = '{needs}', which is "
                            f"not supported: a query reads each input from its earliest offset", props.written(option))
