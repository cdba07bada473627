"""Co-partitioning of a keyed join's inputs: which input is re-keyed (an internal repartition),
the partition counts that must agree, and the windowed keys (ksqlDB WINDOW_TYPE) that join only
the same windowed keys and are never re-keyed."""

from __future__ import annotations

from dataclasses import replace

from streamjoin.kinds import Kind
from streamjoin.plan import nodes as n
from streamjoin.plan.inputs import Input
from streamjoin.plan.keys import KeyNaming
from streamjoin.plan.rewrites import walk
from streamjoin.plan.scope import Context


def key_matches(side: Input, expressions) -> bool:
    """Is `side` already keyed (partitioned) by these join expressions?"""
    if len(expressions) == 1:
        return expressions[0].sql() in side.key_names
    return [e.sql() for e in expressions] == [k.sql() for k in side.node.key]


def repartition(ctx: Context, side: Input, keys, partitions, reason, where=None) -> Input:
    if isinstance(side.node, n.Project) and max(partitions or 1, side.partitions or 1) > 1:
        # only a source's records are written to a repartition topic (plan.rewrites.split_repartitions)
        raise ctx.error("view-repartition", f"{side_names(side)} is a view whose rows would have to move to the "
                        f"partitions of {', '.join(k.sql() for k in keys)} ({partitions} partitions), and a view's "
                        "rows are not written to a repartition topic yet: write the view to a topic of its own "
                        "(INSERT INTO t SELECT STREAM ...), declare it keyed that way, and join that", where)
    node = n.Repartition(side.node.kind, tuple(keys), side.node, partitions, reason)
    return replace(side, node=node, key_names={k.sql() for k in keys} if len(keys) == 1 else set(),
                   partitions=partitions, naming=KeyNaming.of_key(keys))


def copartition(ctx, left: Input, right: Input, lkeys, rkeys, where=None) -> tuple[Input, Input]:
    """Repartition whichever input is not keyed by its join expressions; then the partition
    counts must agree (ksqlDB rejects a mismatch, Lenses repartitions the smaller input)."""
    moved = False
    for side_name in ("left", "right"):
        side, keys = (left, lkeys) if side_name == "left" else (right, rkeys)
        other = right if side_name == "left" else left
        if keys and not key_matches(side, keys):
            if side.kind == Kind.TABLE and not ctx.flavour.repartitions_tables:
                continue  # the rules above reject the join
            if window_of(side) is not None:
                raise ctx.error("windowed-repartition", f"{side_names(side)} has a windowed key and cannot be re-keyed "
                                f"by {', '.join(k.sql() for k in keys)}; join it on its key", where)
            side = repartition(ctx, side, keys, other.partitions or side.partitions, "join key", where)
            moved = True
            left, right = (side, right) if side_name == "left" else (left, side)
    if left.partitions and right.partitions and left.partitions != right.partitions:
        if ctx.flavour.repartitions_to_match_partitions:
            small_left = left.partitions < right.partitions
            side = left if small_left else right
            side = repartition(ctx, side, side.node.key, max(left.partitions, right.partitions), "partition count",
                               where)
            left, right = (side, right) if small_left else (left, side)
        elif not moved:
            raise ctx.error("co-partitioning", f"{side_names(left)} and {side_names(right)} have different numbers of "
                            f"partitions ({left.partitions} and {right.partitions}); a join needs co-partitioned "
                            "inputs", where)
    return left, right


def window_of(side: Input):
    """The windowed key of a side's sources (ksqlDB WINDOW_TYPE), None when unwindowed."""
    return next((e.source.window for e in side.entries if e.source is not None and e.source.window), None)


def windowed_alias(side: Input) -> str:
    return next(e.alias for e in side.entries if e.source is not None and e.source.window)


def check_windows(ctx, left: Input, right: Input, where) -> None:
    """Windowed keys join only windowed keys of the same kind and size: the window is part of the key."""
    lw, rw = window_of(left), window_of(right)
    if lw != rw:
        described = [f"{side_names(s)} ({_describe_window(w)})" for s, w in ((left, lw), (right, rw))]
        raise ctx.error("windowed-key", f"cannot join {described[0]} with {described[1]}: both inputs need the "
                        "same windowed key, or none", where)


def check_key_formats(ctx, left: Input, right: Input, where) -> None:
    """Lenses joins only inputs whose keys are in one format (the bytes of equal keys must be
    equal): a mismatch is refused with the remedy, an intermediate topic written in the other
    side's key format (`INSERT INTO t STORE KEY AS <format> ...`) read as the input instead."""
    if not ctx.flavour.join_key_formats_must_match:
        return
    formats = {side_names(side): {node.source.key_format for node in walk(side.node)  # views' sources too
                                  if isinstance(node, n.Source) and node.source and node.source.key_format != "NONE"}
               for side in (left, right)}
    if len(set().union(*formats.values())) > 1:
        described = " and ".join(f"{name} ({'/'.join(sorted(f))})" for name, f in formats.items())
        raise ctx.error("key-format", f"the keys of {described} are in different formats, so equal keys need not "
                        "be equal bytes: write one input to an intermediate topic with the other's key format "
                        "(INSERT INTO t STORE KEY AS <format> SELECT STREAM * FROM ...) and join that", where)


def _describe_window(window) -> str:
    if window is None:
        return "no windowed key"
    size = f" of {window.size_ms} ms" if window.size_ms is not None else ""
    return f"a {window.kind} windowed key{size}"


def side_names(side: Input) -> str:
    """The relations of one side, as errors name them: `A` or `A+B` for a join result."""
    return "`" + "+".join((e.source.name if e.source else e.alias).upper() for e in side.entries) + "`"
