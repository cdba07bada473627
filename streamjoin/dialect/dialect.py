"""The streaming-join SQL dialect: sqlglot's tokenizer, parser and generator extended with the
statements and clauses of ksqlDB, Flink SQL, Lenses SQL and SQLstream s-Server, plus the
`[LEFT] ASOF JOIN ... MATCH_CONDITION (...)` of RisingWave/Snowflake in every flavour.

One grammar serves every flavour; `Lenses` only differs in the tokenizer (double quotes delimit
strings there: `substr(name, 1) = "J"`). What the flavours mean differently is decided in
streamjoin.plan, not here. Declarations (CREATE STREAM|TABLE, SET) are parsed in declarations.py.
"""

from __future__ import annotations

from sqlglot import exp, generator, parser, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from streamjoin.dialect.declarations import DeclarationParsing, positioned
from streamjoin.dialect.durations import WINDOW_UNITS
from streamjoin.dialect.generator import TRANSFORMS as STREAM_TRANSFORMS
from streamjoin.dialect.nodes import (
    AggregationWindow, Duration, SourceTable, StreamQuery, ViewDefinition, WindowTableFunction, Within,
)

# Flink's windowing table functions and the names of their arguments in positional order.
WINDOW_FUNCTIONS = {"TUMBLE": ("SIZE", "OFFSET"), "HOP": ("SLIDE", "SIZE", "OFFSET"),
                    "CUMULATE": ("STEP", "SIZE", "OFFSET")}

# Words that end a relation reference instead of aliasing it (`JOIN B WITHIN 10 SECONDS`).
_NOT_ALIASES = {"WITHIN", "GRACE", "OVER", "EMIT", "LATERAL", "WINDOW", "PARTITION", "MATCH_CONDITION"}


def _dereference(self, this, path):
    """ksqlDB `struct->field` / `struct->*`: a struct field access (an exp.Dot), not JSON extraction."""
    field = path if isinstance(path, exp.Star) else exp.to_identifier(path.name, quoted=_quoted(path))
    return self.expression(exp.Dot(this=this, expression=field))


def _quoted(path) -> bool:
    identifier = path.this if isinstance(path, exp.Column) else path
    return isinstance(identifier, exp.Identifier) and identifier.quoted


class _Parser(DeclarationParsing, parser.Parser):
    OPERATION_MODIFIERS = {*parser.Parser.OPERATION_MODIFIERS, "STREAM", "TABLE"}
    QUERY_MODIFIER_PARSERS = {**parser.Parser.QUERY_MODIFIER_PARSERS,
                              TokenType.WINDOW: lambda self: ("windows", self._parse_windows())}
    COLUMN_OPERATORS = {**parser.Parser.COLUMN_OPERATORS, TokenType.ARROW: _dereference}
    STATEMENT_PARSERS = {
        **parser.Parser.STATEMENT_PARSERS,
        TokenType.CREATE: lambda self: self._parse_create_relation(),
        TokenType.SET: lambda self: self._parse_set_option(),
    }

    # -- statements ---------------------------------------------------------------------------
    def _parse_statement(self):
        first = self._curr
        if self._curr and self._curr.token_type == TokenType.WITH:
            view = self._try_parse(self._parse_view_definition)
            if view:
                return view
        statement = self._parse_stream_query_tail(super()._parse_statement())
        if statement is not None and first is not None:  # a statement is pointed at from its first word
            statement.meta.setdefault("sj_start", first.start)
            statement.meta.setdefault("sj_end", first.end)
        return statement

    def _warn_unsupported(self):
        pass  # the planner rejects a statement the grammar does not know (a Command), positioned

    def _parse_stream_query_tail(self, query):
        partition_by = self._parse_csv(self._parse_disjunction) if self._match(TokenType.PARTITION_BY) else None
        if partition_by == []:
            self.raise_error("Expected the expressions to PARTITION BY")
        emit = None
        if self._match_text_seq("EMIT"):
            start = self._prev
            if not self._match_texts(("CHANGES", "FINAL")):
                self.raise_error("Expected EMIT CHANGES")
            emit = positioned(exp.var(self._prev.text.upper()), start, self._prev)
        if (partition_by or emit) and isinstance(query, exp.Insert):  # the clauses of its SELECT
            query.set("expression", self.expression(StreamQuery(this=query.expression, partition_by=partition_by,
                                                                emit=emit)))
        elif partition_by or emit:
            return self.expression(StreamQuery(this=query, partition_by=partition_by, emit=emit))
        return query

    def _parse_view_definition(self):
        self._match(TokenType.WITH)
        name = self._parse_id_var(any_token=False)
        if not name or not self._match(TokenType.ALIAS):
            self.raise_error("Expected WITH name AS (query)")
        query = self._parse_wrapped(self._parse_select)
        if self._curr and self._curr.token_type != TokenType.SEMICOLON:
            self.raise_error("Expected ';' after a WITH view definition")
        return self.expression(ViewDefinition(this=name, expression=query))

    def _parse_windows(self):
        """`WINDOW w AS (...)` (named windows), or ksqlDB's aggregation window."""
        if not self._match(TokenType.WINDOW):
            return None
        if self._curr and self._curr.text.upper() in ("TUMBLING", "HOPPING", "SESSION"):
            return [self._parse_aggregation_window()]
        return self._parse_csv(self._parse_named_window)

    def _parse_aggregation_window(self):
        self._advance()
        kind = self._prev.text.upper()
        args = {}
        self._match_l_paren()
        while True:
            if self._match_text_seq("SIZE"):
                args["size"] = self._parse_duration()
            elif self._match_text_seq("ADVANCE", "BY"):
                args["advance"] = self._parse_duration()
            elif self._match_text_seq("RETENTION"):
                args["retention"] = self._parse_duration()
            elif self._match_text_seq("GRACE", "PERIOD"):
                args["grace"] = self._parse_duration()
            elif kind == "SESSION" and "size" not in args:
                args["size"] = self._parse_duration()  # the inactivity gap
            else:
                self.raise_error("Expected SIZE, ADVANCE BY, RETENTION or GRACE PERIOD")
            if not self._match(TokenType.COMMA):
                break
        self._match_r_paren()
        if "size" not in args or (kind == "HOPPING") != ("advance" in args):
            self.raise_error(f"a {kind} window needs SIZE" + (" and ADVANCE BY" if kind == "HOPPING" else ""))
        return self.expression(AggregationWindow(kind=kind, **args))

    # -- relations ----------------------------------------------------------------------------
    def _parse_table_alias(self, alias_tokens=None):
        if self._curr and self._curr.text.upper() in _NOT_ALIASES:
            return None
        return super()._parse_table_alias(alias_tokens=alias_tokens)

    def _parse_table(self, schema=False, *args, **kwargs):
        if not schema and self._curr and self._curr.token_type == TokenType.TABLE and self._next \
                and self._next.token_type == TokenType.L_PAREN:
            return self._parse_window_function()
        this = super()._parse_table(schema, *args, **kwargs)
        if schema or type(this) is not exp.Table:
            return this
        window = within = None
        if self._curr and self._curr.token_type == TokenType.OVER:
            name = self._next if self._next and self._next.token_type != TokenType.L_PAREN else None
            over = self._parse_window(exp.var("relation"))
            if not over.args.get("spec") and not over.alias:
                self.raise_error("Expected OVER (RANGE ...) or OVER window_name")
            window = over.args.get("spec") or positioned(exp.var(over.alias), name, name)
            if over.args.get("order") or over.args.get("partition_by"):
                over.set("this", None)
                window = over  # kept whole so that planning rejects its ORDER BY / PARTITION BY
            if not this.args.get("alias"):
                this.set("alias", super()._parse_table_alias())
        within = self._parse_within()
        if window is None and within is None:
            return this
        return SourceTable(**this.args, window=window, within=within)

    def _parse_window_function(self):
        """`TABLE(TUMBLE|HOP|CUMULATE(TABLE t, DESCRIPTOR(col), interval...)) [AS] alias`."""
        self._advance()  # TABLE
        self._match_l_paren()
        if not self._curr or self._curr.text.upper() not in WINDOW_FUNCTIONS:
            self.raise_error("Expected TUMBLE, HOP or CUMULATE in TABLE(...)")
        kind = self._curr.text.upper()
        self._advance()
        self._match_l_paren()
        args = {}
        positional = ("DATA", "TIMECOL", *WINDOW_FUNCTIONS[kind])
        for index in range(len(positional)):
            name = positional[index]
            if self._curr and self._next and self._next.token_type == TokenType.FARROW:
                name = self._curr.text.upper()
                self._advance(2)
            if name == "DATA":
                self._match(TokenType.TABLE)
                args[name] = self._parse_table_parts()
            elif name == "TIMECOL":
                if not self._match_text_seq("DESCRIPTOR"):
                    self.raise_error("Expected DESCRIPTOR(time column)")
                args[name] = self._parse_wrapped(self._parse_column)
            else:
                args[name] = self._parse_disjunction()
            if not self._match(TokenType.COMMA):
                break
        self._match_r_paren()
        self._match_r_paren()
        missing = [n for n in ("DATA", "TIMECOL", *WINDOW_FUNCTIONS[kind][:-1]) if n not in args]
        if missing:
            self.raise_error(f"{kind} needs {', '.join(missing)}")
        step = args.get("SLIDE") or args.get("STEP")
        node = self.expression(WindowTableFunction(
            kind=kind, this=args["DATA"], time_column=args["TIMECOL"], size=args["SIZE"], step=step,
            offset=args.get("OFFSET")))
        node.set("alias", self._parse_table_alias())
        return node

    def _parse_within(self):
        before = after = grace = None
        symmetric = None
        start = self._curr
        if self._match_text_seq("WITHIN"):
            if self._match(TokenType.L_PAREN):
                before = self._parse_duration()
                self._match(TokenType.COMMA)
                after = self._parse_duration()
                self._match_r_paren()
            else:
                before, symmetric = self._parse_duration(), True
        if self._match_text_seq("GRACE", "PERIOD"):
            grace = self._parse_duration()
        if before is None and grace is None:
            return None
        within = Within(before=before, after=after, grace=grace, symmetric=symmetric)
        return self.expression(positioned(within, start, start))

    def _parse_duration(self):
        number = self._parse_number()
        if not number or not self._curr or self._curr.text.upper() not in WINDOW_UNITS:
            self.raise_error("Expected a duration like 10 SECONDS or 10s")
        self._advance()
        return self.expression(Duration(this=number, unit=exp.var(self._prev.text.upper())))

    def _parse_join_parts(self):
        # sqlglot reads ASOF as a join method before the side (`ASOF LEFT JOIN`, DuckDB);
        # Snowflake writes it after (`LEFT [OUTER] ASOF JOIN`): accept both orders.
        method, side, kind = super()._parse_join_parts()
        if method is None and (side or kind) and self._match(TokenType.ASOF):
            method = self._prev
        return method, side, kind

    def _parse_join(self, skip_join_token=False, parse_bracket=False, alias_tokens=None):
        join = super()._parse_join(skip_join_token, parse_bracket, alias_tokens)
        if join is not None and self._match_text_seq("MATCH_CONDITION"):
            # Snowflake's tokenizer makes MATCH_CONDITION a keyword and sqlglot then reads one
            # comparison only; read any condition (into the same exp.Join arg, printed by
            # sqlglot) so that `=` or AND get the planner's asof-match-condition error.
            join.set("match_condition", self._parse_wrapped(self._parse_disjunction))
            if join.args.get("on") is None and self._match(TokenType.ON):
                join.set("on", self._parse_disjunction())
        if join is not None:
            within = self._parse_within()  # Lenses writes WITHIN after ON
            if within is not None:
                table = join.this
                if type(table) is exp.Table:
                    table = SourceTable(**table.args)
                    join.set("this", table)
                earlier = table.args.get("within")
                if earlier is not None:
                    earlier.set("repeated", within)
                else:
                    table.set("within", within)
        return join


class StreamJoin(Dialect):
    """The dialect for the ksqlDB, Flink and s-Server flavours."""

    ALIAS_POST_VERSION = True  # Flink: `t FOR SYSTEM_TIME AS OF o.ts AS alias`

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS = ['"', "`"]  # ksqlDB and Flink quote names with back-quotes

    Parser = _Parser

    class Generator(generator.Generator):
        TRANSFORMS = {**generator.Generator.TRANSFORMS, **STREAM_TRANSFORMS}


class FlinkDialect(StreamJoin):
    """Flink SQL: back-quoted identifiers (`int`, `timestamp`)."""

    class Tokenizer(StreamJoin.Tokenizer):
        IDENTIFIERS = ["`", '"']


class LensesDialect(StreamJoin):
    """Lenses SQL: double quotes delimit string literals."""

    class Tokenizer(StreamJoin.Tokenizer):
        QUOTES = ["'", '"']
        IDENTIFIERS = ["`"]
