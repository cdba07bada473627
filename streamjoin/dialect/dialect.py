"""The streaming-join SQL dialect: sqlglot's tokenizer, parser and generator extended with the
statements and clauses of ksqlDB, Flink SQL, Lenses SQL and SQLstream s-Server, plus the
`[LEFT] ASOF JOIN ... MATCH_CONDITION (...)` of RisingWave/Snowflake in every flavour.

One grammar serves every flavour; `Lenses` only differs in the tokenizer (double quotes delimit
strings there: `substr(name, 1) = "J"`). What the flavours mean differently is decided in
streamjoin.plan, not here.
"""

from __future__ import annotations

from sqlglot import exp, generator, parser, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from streamjoin.dialect.generator import TRANSFORMS as STREAM_TRANSFORMS
from streamjoin.dialect.nodes import (
    UNIT_MS, CreateRelation, Duration, SetOption, SourceColumn, SourceTable, StreamQuery,
    ViewDefinition, Watermark, WindowTableFunction, Within,
)

# Flink's windowing table functions and the names of their arguments in positional order.
WINDOW_FUNCTIONS = {"TUMBLE": ("SIZE", "OFFSET"), "HOP": ("SLIDE", "SIZE", "OFFSET"),
                    "CUMULATE": ("STEP", "SIZE", "OFFSET")}

# Words that end a relation reference instead of aliasing it (`JOIN B WITHIN 10 SECONDS`).
_NOT_ALIASES = {"WITHIN", "GRACE", "OVER", "EMIT", "LATERAL", "WINDOW", "PARTITION", "MATCH_CONDITION"}


class _Parser(parser.Parser):
    OPERATION_MODIFIERS = {*parser.Parser.OPERATION_MODIFIERS, "STREAM", "TABLE"}
    STATEMENT_PARSERS = {
        **parser.Parser.STATEMENT_PARSERS,
        TokenType.CREATE: lambda self: self._parse_create_relation(),
        TokenType.SET: lambda self: self._parse_set_option(),
    }

    # -- statements ---------------------------------------------------------------------------
    def _parse_statement(self):
        if self._curr and self._curr.token_type == TokenType.WITH:
            view = self._try_parse(self._parse_view_definition)
            if view:
                return view
        statement = super()._parse_statement()
        return self._parse_stream_query_tail(statement)

    def _parse_stream_query_tail(self, query):
        partition_by = self._parse_csv(self._parse_disjunction) if self._match(TokenType.PARTITION_BY) else None
        emit = self._prev.text.upper() if self._match_text_seq("EMIT") and self._match_texts(("CHANGES", "FINAL")) else None
        if partition_by or emit:
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

    def _parse_set_option(self):
        first = self._index
        while self._curr and self._curr.token_type not in (TokenType.SEMICOLON, TokenType.EQ):
            self._advance()
        if not self._match(TokenType.EQ) or self._index - 1 == first:
            self.raise_error("Expected SET key = value")
        key_text = self._text_between(first, self._index - 2)
        value_start = self._index
        while self._curr and self._curr.token_type != TokenType.SEMICOLON:
            self._advance()
        value_text = self._text_between(value_start, self._index - 1)
        return self.expression(SetOption(this=exp.Literal.string(_unquote(key_text)),
                                         expression=exp.Literal.string(_unquote(value_text))))

    def _text_between(self, first: int, last: int) -> str:
        if last < first:
            self.raise_error("Expected a value")
            return ""
        return self.sql[self._tokens[first].start:self._tokens[last].end + 1].strip()

    def _parse_create_relation(self):
        index = self._index
        replace = self._match_pair(TokenType.OR, TokenType.REPLACE)
        if not self._match_texts(("STREAM", "TABLE")):
            self._retreat(index)
            return self._parse_create()
        kind = self._prev.text.upper()
        exists = self._match_text_seq("IF", "NOT", "EXISTS")
        name = self._parse_table_parts(schema=True)
        columns, primary_key, watermarks = [], None, []
        if self._match(TokenType.L_PAREN):
            while True:
                if self._match(TokenType.PRIMARY_KEY):
                    primary_key = self._parse_wrapped_csv(self._parse_id_var)
                    self._match_text_seq("NOT", "ENFORCED")
                elif self._match_text_seq("WATERMARK", "FOR"):
                    column = self._parse_id_var()
                    self._match(TokenType.ALIAS)
                    watermarks.append(self.expression(Watermark(this=column, expression=self._parse_disjunction())))
                else:
                    columns.append(self._parse_source_column())
                if not self._match(TokenType.COMMA):
                    break
            self._match_r_paren()
        properties = self._parse_relation_properties() if self._match(TokenType.WITH) else None
        query = None
        if self._match(TokenType.ALIAS):
            query = self._parse_stream_query_tail(self._parse_select())
        return self.expression(CreateRelation(
            kind=kind, this=name, columns=columns or None, primary_key=primary_key,
            watermarks=watermarks or None, properties=properties, expression=query,
            replace=replace or None, exists=exists or None))

    def _parse_source_column(self):
        name = self._parse_id_var(any_token=True)
        if not name:
            self.raise_error("Expected a column definition")
        if self._match(TokenType.ALIAS):
            return self.expression(SourceColumn(this=name, computed=self._parse_disjunction()))
        start = self._index
        kind = self._parse_types(check_func=False, allow_identifiers=False)
        if not kind:
            self.raise_error(f"Expected a type for column {name.name}")
        type_text = self._text_between(start, self._index - 1)
        column = SourceColumn(this=name, kind=kind, type_text=exp.Literal.string(type_text))
        while True:
            if self._match(TokenType.PRIMARY_KEY):
                column.set("key", "PRIMARY KEY")
                self._match_text_seq("NOT", "ENFORCED")
            elif self._match_text_seq("KEY"):
                column.set("key", "KEY")
            elif self._match_text_seq("NOT", "NULL"):
                column.set("not_null", True)
            elif self._match(TokenType.NULL):
                continue
            elif self._match_text_seq("METADATA"):
                column.set("metadata", True)
                if self._match(TokenType.FROM):
                    column.set("metadata_from", self._parse_string())
            elif self._match_text_seq("VIRTUAL"):
                column.set("virtual", True)
            else:
                return self.expression(column)

    def _parse_relation_properties(self):
        def parse_property():
            key = self._parse_string() or self._parse_var(any_token=False)
            if key is None:
                self.raise_error("Expected a property name = value")
            while self._match(TokenType.DOT):  # unquoted Flink keys like value.format
                key = exp.Literal.string(f"{key.name}.{self._parse_var(any_token=True).name}")
            self._match(TokenType.EQ)
            value = self._parse_primary() or self._parse_var(any_token=True)
            return self.expression(exp.Property(this=exp.Literal.string(key.name.lower()), value=value))

        return self._parse_wrapped_csv(parse_property)

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
            over = self._parse_window(exp.var("relation"))
            window = over.args.get("spec") or exp.var(over.alias)
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
        return self.expression(Within(before=before, after=after, grace=grace, symmetric=symmetric))

    def _parse_duration(self):
        number = self._parse_number()
        if not number or not self._curr or self._curr.text.upper() not in UNIT_MS:
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
                table.set("within", within)
        return join


def _unquote(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`" else text


class StreamJoin(Dialect):
    """The dialect for the ksqlDB, Flink and s-Server flavours."""

    ALIAS_POST_VERSION = True  # Flink: `t FOR SYSTEM_TIME AS OF o.ts AS alias`

    class Tokenizer(tokens.Tokenizer):
        pass

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
