"""The declaration statements of the streaming dialects, as a part of their parser:
`CREATE [OR REPLACE] STREAM|TABLE name (columns) WITH (...) [AS query]` and `SET key = value`.
A column's type is read by sqlglot where it knows it, else as written (`BYTES`,
`ARRAY<STRUCT<b BYTES>>`) for SqlType.parse."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import TokenType

from streamjoin.dialect.nodes import CreateRelation, SetOption, SourceColumn, StoreFormats, Watermark
from streamjoin.dialect.types import TYPE_WORDS

# Words that may follow a column's type in a declaration.
_COLUMN_ATTRIBUTES = {"KEY", "NOT", "NULL", "METADATA", "VIRTUAL", "HEADERS", "HEADER"}
# A type's closing brackets and the opening bracket each closes.
_CLOSING = {TokenType.GT: TokenType.LT, TokenType.R_PAREN: TokenType.L_PAREN}


class DeclarationParsing:
    """Parser methods for declarations and the formats an INSERT names, mixed into the dialect's
    sqlglot Parser."""

    def _parse_insert(self):
        self._sj_store = None
        insert = super()._parse_insert()
        if isinstance(insert, exp.Insert) and self._sj_store is not None:
            insert.set("stored", self._sj_store)
        return insert

    def _parse_insert_table(self):
        """The target, then Lenses' `STORE [KEY AS format] [VALUE AS format]` (kept for _parse_insert)."""
        target = super()._parse_insert_table()
        if self._match_text_seq("STORE"):
            start, formats = self._prev, {}
            while self._match_texts(("KEY", "VALUE")):
                side = self._prev.text.lower()
                if side in formats or not self._match(TokenType.ALIAS) or not self._curr:
                    self.raise_error("Expected STORE KEY AS <format> VALUE AS <format>")
                self._advance()
                formats[side] = positioned(exp.var(self._prev.text.upper()), self._prev, self._prev)
            if not formats:
                self.raise_error("Expected STORE KEY AS <format> and/or VALUE AS <format>")
            self._sj_store = positioned(StoreFormats(**formats), start, self._prev)
        return target

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
        kind = self._try_parse(lambda: self._parse_types(check_func=False, allow_identifiers=False))
        if not kind and self._curr and self._curr.text.upper() in TYPE_WORDS:
            kind = self._parse_type_words()  # a type sqlglot does not know, e.g. BYTES or ARRAY<BYTES>
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
            elif self._match_texts(("HEADERS", "HEADER")):  # ksqlDB: the record's headers, or one of them
                header = self._parse_wrapped(self._parse_string) if self._prev.text.upper() == "HEADER" else None
                column.set("header", header or exp.Star())
            else:
                return self.expression(column)

    def _parse_type_words(self):
        """The tokens of a type up to the column's end (`,` or `)` outside brackets) or its
        attributes; SqlType.parse reads the text. A bracket closed by the other kind (`ARRAY<INT)`)
        is a syntax error at the closing one."""
        start, open_brackets = self._index, []
        while self._curr:
            token = self._curr.token_type
            if not open_brackets and (token in (TokenType.COMMA, TokenType.R_PAREN) or token == TokenType.PRIMARY_KEY
                                      or self._curr.text.upper() in _COLUMN_ATTRIBUTES):
                break
            if token in _CLOSING:
                if not open_brackets:
                    self.raise_error(f"Unexpected {self._curr.text}")
                if open_brackets[-1] != _CLOSING[token]:
                    self.raise_error(f"Expecting {'>' if open_brackets[-1] == TokenType.LT else ')'}")
                open_brackets.pop()
            elif token in (TokenType.LT, TokenType.L_PAREN):
                open_brackets.append(token)
            self._advance()
        return exp.Var(this=self._text_between(start, self._index - 1))

    def _parse_relation_properties(self):
        def parse_property():
            # any word: ksqlDB's keys include keywords (FORMAT, TIMESTAMP, PARTITIONS)
            key = self._parse_string() or self._parse_var(any_token=True)
            if key is None:
                self.raise_error("Expected a property name = value")
            while self._match(TokenType.DOT):  # unquoted Flink keys like value.format
                key = exp.Literal.string(f"{key.name}.{self._parse_var(any_token=True).name}")
            self._match(TokenType.EQ)
            sign = self._prev if self._match_set((TokenType.DASH, TokenType.PLUS)) else None
            value = self._parse_primary() or self._parse_var(any_token=True)
            if value is None:
                self.raise_error(f"Expected a value for {key.name} (e.g. {key.name}='...')")
            if sign is not None:  # a signed number is kept as written, for the planner to judge
                value = positioned(exp.Literal(this=sign.text + value.name, is_string=False), sign, self._prev)
            return self.expression(exp.Property(this=exp.Literal.string(key.name.lower()), value=value))

        return self._parse_wrapped_csv(parse_property)


def positioned(node, first, last):
    """`node` marked as spanning the tokens first..last (for positioned errors)."""
    if first is not None:
        node.meta.update(sj_start=first.start, sj_end=last.end)
    return node


def _unquote(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`" else text
