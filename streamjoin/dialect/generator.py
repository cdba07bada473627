"""SQL printing for the streaming nodes (the dialect's Generator.TRANSFORMS), so parsed
statements print back to text the parser reads again."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.dialect.nodes import (
    AggregationWindow, CreateRelation, Duration, SetOption, SourceColumn, SourceTable, StoreFormats, StreamQuery,
    ViewDefinition,
    Watermark, WindowTableFunction, Within,
)


def _duration_sql(self, e: Duration) -> str:
    return f"{self.sql(e, 'this')} {e.args['unit'].name}"


def _within_sql(self, e: Within) -> str:
    parts = []
    if e.args.get("before"):
        body = self.sql(e, "before")
        parts.append(f"WITHIN {body}" if e.args.get("symmetric") else f"WITHIN ({body}, {self.sql(e, 'after')})")
    if e.args.get("grace"):
        parts.append(f"GRACE PERIOD {self.sql(e, 'grace')}")
    if e.args.get("repeated"):
        parts.append(self.sql(e, "repeated"))
    return " ".join(parts)


def _source_table_sql(self, e: SourceTable) -> str:
    plain = exp.Table(**{k: v.copy() if isinstance(v, exp.Expr) else v for k, v in e.args.items()
                         if k not in ("window", "within", "alias") and v is not None})
    text = self.table_sql(plain)
    window = e.args.get("window")
    if window is not None:
        if isinstance(window, exp.Window):  # with ORDER BY / PARTITION BY: prints its own OVER (...)
            text += f" {self.sql(window)}"
        else:
            text += f" OVER {window.name}" if isinstance(window, exp.Var) else f" OVER ({self.sql(window)})"
    if e.args.get("alias"):
        text += f" AS {self.sql(e, 'alias')}"
    if e.args.get("within"):
        text += f" {self.sql(e, 'within')}"
    return text


def _aggregation_window_sql(self, e: AggregationWindow) -> str:
    kind = e.args["kind"]
    parts = [self.sql(e, "size") if kind == "SESSION" else f"SIZE {self.sql(e, 'size')}"]
    for arg, word in (("advance", "ADVANCE BY"), ("retention", "RETENTION"), ("grace", "GRACE PERIOD")):
        if e.args.get(arg):
            parts.append(f"{word} {self.sql(e, arg)}")
    return f"{kind} ({', '.join(parts)})"


def _window_function_sql(self, e: WindowTableFunction) -> str:
    kind = e.args["kind"]
    sizes = [self.sql(e, "step"), self.sql(e, "size")] if e.args.get("step") else [self.sql(e, "size")]
    args = [f"TABLE {self.sql(e, 'this')}", f"DESCRIPTOR({self.sql(e, 'time_column')})", *sizes]
    if e.args.get("offset"):
        args.append(self.sql(e, "offset"))
    alias = f" AS {self.sql(e, 'alias')}" if e.args.get("alias") else ""
    return f"TABLE({kind}({', '.join(args)})){alias}"


def _source_column_sql(self, e: SourceColumn) -> str:
    if e.args.get("computed"):
        return f"{self.sql(e, 'this')} AS {self.sql(e, 'computed')}"
    parts = [self.sql(e, "this"), e.args["type_text"].name]
    if e.args.get("key"):
        parts.append(e.args["key"])
    if e.args.get("not_null"):
        parts.append("NOT NULL")
    if e.args.get("metadata"):
        parts.append("METADATA" + (f" FROM {self.sql(e, 'metadata_from')}" if e.args.get("metadata_from") else ""))
    if e.args.get("virtual"):
        parts.append("VIRTUAL")
    header = e.args.get("header")
    if header is not None:
        parts.append("HEADERS" if isinstance(header, exp.Star) else f"HEADER({self.sql(header)})")
    return " ".join(parts)


def _create_relation_sql(self, e: CreateRelation) -> str:
    head = "CREATE " + ("OR REPLACE " if e.args.get("replace") else "") + e.args["kind"]
    head += (" IF NOT EXISTS " if e.args.get("exists") else " ") + self.sql(e, "this")
    elements = [self.sql(c) for c in e.args.get("columns") or []]
    if e.args.get("primary_key"):
        elements.append(f"PRIMARY KEY ({self.expressions(e, key='primary_key', flat=True)}) NOT ENFORCED")
    elements += [f"WATERMARK FOR {self.sql(w, 'this')} AS {self.sql(w, 'expression')}"
                 for w in e.args.get("watermarks") or []]
    if elements:
        head += f" ({', '.join(elements)})"
    if e.args.get("properties"):
        props = ", ".join(f"{self.sql(p, 'this')}={self.sql(p, 'value')}" for p in e.args["properties"])
        head += f" WITH ({props})"
    if e.args.get("expression"):
        head += f" AS {self.sql(e, 'expression')}"
    return head


def _stream_query_sql(self, e: StreamQuery) -> str:
    text = self.sql(e, "this")
    if e.args.get("partition_by"):
        text += f" PARTITION BY {self.expressions(e, key='partition_by', flat=True)}"
    if e.args.get("emit"):
        text += f" EMIT {e.args['emit'].name}"
    return text


def _store_formats_sql(self, e: StoreFormats) -> str:
    return "STORE" + "".join(f" {side.upper()} AS {e.args[side].name}" for side in ("key", "value") if e.args.get(side))


def _lateral_sql(self, e: exp.Lateral) -> str:
    if e.args.get("view") or e.args.get("cross_apply") is not None:
        return self.lateral_sql(e)
    return f" LATERAL {self.sql(e, 'this')}" + (f" AS {self.sql(e, 'alias')}" if e.args.get("alias") else "")


TRANSFORMS = {
    Duration: _duration_sql,
    AggregationWindow: _aggregation_window_sql,
    exp.Lateral: _lateral_sql,
    exp.Array: lambda self, e: f"[{self.expressions(e, flat=True)}]",
    Within: _within_sql,
    SourceTable: _source_table_sql,
    SourceColumn: _source_column_sql,
    WindowTableFunction: _window_function_sql,
    CreateRelation: _create_relation_sql,
    StreamQuery: _stream_query_sql,
    StoreFormats: _store_formats_sql,
    ViewDefinition: lambda self, e: f"WITH {self.sql(e, 'this')} AS ({self.sql(e, 'expression')})",
    SetOption: lambda self, e: f"SET '{e.option}'='{e.value}'",
    Watermark: lambda self, e: f"WATERMARK FOR {self.sql(e, 'this')} AS {self.sql(e, 'expression')}",
    # a struct field (ksqlDB `s->f`); the parser makes `->` a Dot, and Dots print back as `->`
    exp.Dot: lambda self, e: f"{self.sql(e, 'this')}->{self.sql(e, 'expression')}",
}
