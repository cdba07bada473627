"""A Flink table's `'properties.<name>'` client properties, checked against the engine's table of
them (streamjoin.kafka_properties): a property the engine's Kafka clients take is kept for the
queries that read or write the table; one they cannot honour is a positioned error saying why and
what to write instead. `properties.bootstrap.servers`, `group.id` and `auto.offset.reset` are read
where they mean something (plan.connectors: the cluster, `'group-offsets'`). A query runs on one
Kafka cluster with one set of clients per run, so the tables it reads and the one it writes (an
INSERT INTO target) may not name two clusters (`check_one_cluster`) nor give one property two
values (`check_kafka_tables`)."""

from __future__ import annotations

from typing import Iterable, Iterator

from sqlglot import exp

from streamjoin import kafka_properties as kp
from streamjoin.dialect import CreateRelation
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


def _kafka_tables(node: n.PlanNode) -> Iterator[tuple[str, str | None, tuple[tuple[str, str], ...]]]:
    """(name, bootstrap servers, client properties) of each Kafka table of a plan: those its
    Sources read and the target its Sink writes."""
    for s in walk(node):
        if isinstance(s, n.Source):
            yield s.source.name, s.source.bootstrap, s.source.client_properties
        elif isinstance(s, n.Sink):
            yield s.name, s.bootstrap, s.client_properties


def check_kafka_tables(ctx: Context, sink: n.Sink, statement: exp.Expr) -> None:
    """The tables a query reads and the one it writes name one Kafka cluster
    (`'properties.bootstrap.servers'`) or none, and give each client property one value or none:
    a run reads and writes one cluster with one set of Kafka clients."""
    target = statement.this if isinstance(statement, (exp.Insert, CreateRelation)) else statement
    _check_one_cluster(ctx, sink, statement, target)
    _check_one_client_set(ctx, sink, statement)


def _check_one_cluster(ctx: Context, sink: n.Sink, statement: exp.Expr, target: exp.Expr) -> None:
    """`target`: where the statement names the table it writes."""
    named = {servers: name for name, servers, _ in _kafka_tables(sink.child) if servers}
    if len(named) > 1:
        listed = "; ".join(f"{name}: {servers}" for servers, name in named.items())
        raise ctx.error("kafka-cluster", f"the query reads tables on different Kafka clusters ({listed}): a query "
                        "runs against one cluster; copy the topics to one (MirrorMaker) or name the same servers",
                        statement)
    read = next(iter(named.items()), None)
    if sink.bootstrap and read and read[0] != sink.bootstrap:
        raise ctx.error("kafka-cluster", f"{sink.name} is on the Kafka cluster {sink.bootstrap}, and the query "
                        f"reads {read[1]} on {read[0]}: a query reads and writes one cluster; write to a table on "
                        f"{read[0]} and copy its topic to {sink.bootstrap} (MirrorMaker), or name the same servers",
                        target)


def _check_one_client_set(ctx: Context, node: n.PlanNode, statement: exp.Expr) -> None:
    seen: dict[str, tuple[str, str]] = {}
    for table, _, properties in _kafka_tables(node):
        for name, value in properties:
            first = seen.setdefault(name, (value, table))
            if first[0] != value:
                shown = "two values" if name == "sasl.jaas.config" else f"{first[0]!r} and {value!r}"
                raise ctx.error("kafka-cluster", f"the query's tables give 'properties.{name}' {shown} "
                                f"({first[1]}, {table}): a query runs one set of Kafka clients; give the "
                                "tables the same value", statement)


def query_client_properties(nodes: Iterable[n.PlanNode]) -> dict[str, str]:
    """The client properties the tables of a query's plans give (one value each: checked above)."""
    return {name: value for node in nodes for _, _, properties in _kafka_tables(node) for name, value in properties}


def query_bootstrap(node: n.PlanNode) -> str | None:
    """The Kafka cluster the query's tables name (None: the engine's own)."""
    return next((servers for _, servers, _ in _kafka_tables(node) if servers), None)
