"""AST nodes the streaming dialects add to sqlglot's expression tree (each declares arg_types;
the dialect's Generator prints them back, so every node round-trips)."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.dialect.durations import WINDOW_UNITS, DurationError, to_millis


class Duration(exp.Expression):
    """`15 SECONDS`, `1 HOURS`, Lenses `5s`: a number and a unit."""

    arg_types = {"this": True, "unit": True}

    @property
    def millis(self) -> int:
        """Raises DurationError past 64-bit milliseconds, or for a fraction (ksqlDB reads a whole
        number of units, and so does Lenses)."""
        unit = self.args["unit"].name
        if not self.this.name.isdigit():
            raise DurationError(f"{self.this.name} {unit}: a join or window duration is a whole number of units: "
                                "write a smaller unit, e.g. 1500 MILLISECONDS")
        return to_millis(self.this.name, WINDOW_UNITS[unit.upper()], f"{self.this.name} {unit}")


class Within(exp.Expression):
    """`WITHIN n UNIT` (before = after = n) or `WITHIN (before, after)`; `grace` from
    `GRACE PERIOD n UNIT`. Attached to the joined relation (`SourceTable.within`); `repeated`: a
    second WITHIN of the same join (Lenses allows one before and one after ON), checked at plan time."""

    arg_types = {"before": False, "after": False, "grace": False, "symmetric": False, "repeated": False}


class SourceTable(exp.Table):
    """A relation in FROM/JOIN with the streaming clauses the dialects hang on it: s-Server
    `OVER (RANGE ... | ROWS ...)` or `OVER w` (window, an exp.WindowSpec or exp.Var name) and the
    ksqlDB/Lenses join window (within, a Within)."""

    arg_types = {**exp.Table.arg_types, "window": False, "within": False}


class WindowTableFunction(exp.Expression):
    """Flink's windowing table-valued function in FROM: `TABLE(kind(TABLE t, DESCRIPTOR(ts), ...))`
    with kind TUMBLE (size [, offset]), HOP (slide, size [, offset]) or CUMULATE (step, size
    [, offset]); arguments by position or by name (`SIZE => INTERVAL '5' SECOND`). `this` is the
    windowed relation (an exp.Table), `time_column` the DESCRIPTOR column; `step` is HOP's slide
    or CUMULATE's step."""

    arg_types = {"kind": True, "this": True, "time_column": True, "size": True, "step": False,
                 "offset": False, "alias": False}


class SourceColumn(exp.Expression):
    """A column element of CREATE STREAM/TABLE: `name type [KEY | PRIMARY KEY] [NOT NULL]
    [METADATA [FROM 'k'] [VIRTUAL] | HEADERS | HEADER('k')]`, or Flink's computed `name AS
    expr`. `type_text` keeps the type as written (a string literal) for SqlType.parse; `header`
    is the header key (a string literal), or a Star for all headers."""

    arg_types = {"this": True, "kind": False, "type_text": False, "key": False, "not_null": False,
                 "metadata": False, "metadata_from": False, "virtual": False, "computed": False,
                 "header": False}


class AggregationWindow(exp.Expression):
    """ksqlDB `WINDOW TUMBLING (SIZE d [, RETENTION d] [, GRACE PERIOD d])`, `HOPPING (SIZE d,
    ADVANCE BY d, ...)` or `SESSION (d, ...)` (the gap in `size`) for a GROUP BY: kind is the
    window type's name, the durations are Durations."""

    arg_types = {"kind": True, "size": True, "advance": False, "retention": False, "grace": False}


class Watermark(exp.Expression):
    """Flink `WATERMARK FOR col AS expr`."""

    arg_types = {"this": True, "expression": True}


class CreateRelation(exp.Expression):
    """`CREATE [OR REPLACE] STREAM|TABLE [IF NOT EXISTS] name [(columns)] [WITH (props)]
    [AS query]`: a source declaration (no query) or a persistent query (CSAS/CTAS).
    properties: list of exp.Property with a lower-cased name."""

    arg_types = {"kind": True, "this": True, "columns": False, "primary_key": False,
                 "watermarks": False, "properties": False, "expression": False, "replace": False,
                 "exists": False}


class StreamQuery(exp.Expression):
    """A query with ksqlDB's trailing clauses: `... PARTITION BY expr` and `EMIT CHANGES|FINAL`."""

    arg_types = {"this": True, "partition_by": False, "emit": False}


class ViewDefinition(exp.Expression):
    """Lenses `WITH name AS (SELECT STREAM|TABLE ...);`: a named intermediate relation."""

    arg_types = {"this": True, "expression": True}


class StoreFormats(exp.Expression):
    """Lenses `INSERT INTO t STORE [KEY AS format] [VALUE AS format] SELECT ...`: the formats the
    result is written in (each an exp.Var with the name as written), held in the Insert's
    `stored` argument."""

    arg_types = {"key": False, "value": False}


class SetOption(exp.Expression):
    """`SET key = value;` with key and value kept as text (`SET table.local-time-zone=UTC;`,
    `SET 'streamjoin.allow_multi_column_keys'='true';`)."""

    arg_types = {"this": True, "expression": True}

    @property
    def option(self) -> str:
        return self.this.name

    @property
    def value(self) -> str:
        return self.expression.name
