"""Lenses `INSERT INTO t STORE [KEY AS f] [VALUE AS f] SELECT ...`: the storage format names a
Lenses user writes, as the formats the sink writes in. A primitive name (STRING, INT, LONG,
DOUBLE, BYTES) is Kafka's serializer of that one type: the side must then be one column of that
type (checked once the result's types are known, `runtime.compiler.sink_binding`), written bare."""

from __future__ import annotations

from dataclasses import dataclass

from streamjoin.dialect.nodes import StoreFormats
from streamjoin.plan.scope import Context

# Lenses name -> (our format, the SQL type a primitive needs)
STORAGE_FORMATS: dict[str, tuple[str, str | None]] = {
    "STRING": ("KAFKA", "STRING"), "INT": ("KAFKA", "INT"), "LONG": ("KAFKA", "BIGINT"),
    "DOUBLE": ("KAFKA", "DOUBLE"), "BYTES": ("KAFKA", "BYTES"),
    "JSON": ("JSON", None), "AVRO": ("AVRO", None), "PROTOBUF": ("PROTOBUF", None),
}


@dataclass(frozen=True)
class Stored:
    """What a STORE clause asks of the sink: properties (formats) and the primitives' types."""

    properties: dict[str, str]
    key_type: str | None = None
    value_type: str | None = None


def stored(ctx: Context, clause: StoreFormats, target_declared: bool) -> Stored:
    if not ctx.flavour.store_as_clause:
        raise ctx.error("store-as", "STORE KEY|VALUE AS is Lenses' syntax: in this flavour the target's formats are "
                        "declared (KEY_FORMAT / VALUE_FORMAT, Flink 'key.format' / 'value.format')", clause)
    if target_declared:
        raise ctx.error("store-as", "the target is a declared relation, written in its declared formats: STORE ... AS "
                        "names the formats of a topic the INSERT writes without a declaration", clause)
    properties, types = {}, {}
    for side in ("key", "value"):
        name = clause.args.get(side)
        if name is None:
            continue
        if name.name not in STORAGE_FORMATS:
            raise ctx.error("store-as", f"unknown storage format {name.name!r} for the {side}: one of "
                            f"{', '.join(STORAGE_FORMATS)}", name)
        properties[f"{side}_format"], types[side] = STORAGE_FORMATS[name.name]
    if types.get("value"):
        properties["wrap_single_value"] = "false"  # a primitive value is the bare value
    return Stored(properties, types.get("key"), types.get("value"))
