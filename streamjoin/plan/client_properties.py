"""A Flink table's `'properties.<name>'` client properties, checked against the engine's table of
them (streamjoin.kafka_properties): a property the engine's Kafka clients take is kept for the
queries that read the table; one they cannot honour is a positioned error saying why and what to
write instead. `properties.bootstrap.servers`, `group.id` and `auto.offset.reset` are read where
they mean something (plan.connectors: the cluster, `'group-offsets'`). A query has one set of
clients per run, so its tables may not give one property two values (`check_one_client_set`)."""

from __future__ import annotations

from typing import Iterable

from sqlglot import exp

from streamjoin import kafka_properties as kp
from streamjoin.plan import nodes as n
from streamjoin.plan.kafka_keys import Properties
from streamjoin.plan.rewrites import walk
from streamjoin.plan.scope import Context

PREFIX = "properties."
READ_ELSEWHERE = ("bootstrap.servers", "group.id", "auto.offset.reset")
_ACCEPTED = (*kp.PASSED, *kp.SECURITY)


def read_client_properties(ctx: Context, props: Properties, names: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """The table's client properties, checked: (Kafka's name, value), security values upper case."""
    given = {name[len(PREFIX):]: props.get(name) for name in names
             if name.startswith(PREFIX) and name[len(PREFIX):] not in READ_ELSEWHERE}
    for name, value in given.items():
        _check(ctx, name, value, props.written(PREFIX + name))
    truststore = given.get("ssl.truststore.location")
    if truststore is not None and (given.get("ssl.truststore.type") or "").upper() != "PEM":
        raise ctx.error("connector-option", "'properties.ssl.truststore.location' is read as a PEM file of the CA "
                        "the brokers' certificates chain to: say so, 'properties.ssl.truststore.type' = 'PEM' (a "
                        "JKS or PKCS12 truststore: export its CA certificate as PEM)",
                        props.written(PREFIX + "ssl.truststore.location"))
    upper = ("security.protocol", "sasl.mechanism", "ssl.truststore.type")
    return tuple(sorted((name, value.upper() if name in upper else value) for name, value in given.items()))


def _check(ctx: Context, name: str, value: str, where: exp.Expr | None) -> None:
    written = f"'{PREFIX}{name}'"
    if name in kp.REFUSED:
        raise ctx.error("connector-option", f"{written} is not passed to the Kafka clients: {kp.REFUSED[name]}", where)
    if name not in _ACCEPTED:
        raise ctx.error("connector-option", f"{written} is not a client property the engine's Kafka clients take; "
                        f"a table may give {', '.join(repr(PREFIX + p) for p in _ACCEPTED)} (docs/sql-reference.md)",
                        where)
    allowed = {"security.protocol": kp.PROTOCOLS, "sasl.mechanism": kp.MECHANISMS, "ssl.truststore.type": ("PEM",)}
    if name in allowed and value.upper() not in allowed[name]:
        raise ctx.error("connector-option", f"{written} is one of {', '.join(allowed[name])}, not {value!r}", where)
    if name == "sasl.jaas.config" and kp.jaas_credentials(value) is None:
        raise ctx.error("connector-option", f"{written} is read for a PLAIN or SCRAM login: write "
                        "'org.apache.kafka.common.security.plain.PlainLoginModule required username=\"...\" "
                        "password=\"...\";' (or scram.ScramLoginModule)", where)


def check_one_client_set(ctx: Context, node: n.PlanNode, statement: exp.Expr) -> None:
    """The tables a query reads give each client property one value, or none: a run has one set
    of Kafka clients (as it has one cluster, plan.lookup_join.check_one_cluster)."""
    seen: dict[str, tuple[str, str]] = {}
    for source in (s.source for s in walk(node) if isinstance(s, n.Source)):
        for name, value in source.client_properties:
            first = seen.setdefault(name, (value, source.name))
            if first[0] != value:
                shown = "two values" if name == "sasl.jaas.config" else f"{first[0]!r} and {value!r}"
                raise ctx.error("kafka-cluster", f"the query's tables give 'properties.{name}' {shown} "
                                f"({first[1]}, {source.name}): a query runs one set of Kafka clients; give the "
                                "tables the same value", statement)


def query_client_properties(nodes: Iterable[n.PlanNode]) -> dict[str, str]:
    """The client properties the tables of a query's plans give (one value each: checked above)."""
    return {name: value for node in nodes for s in walk(node) if isinstance(s, n.Source)
            for name, value in s.source.client_properties}
