"""Parsing: SQL text in one of the four flavours -> sqlglot statements (see dialect.py)."""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from streamjoin.dialect import flavours
from streamjoin.dialect.depth import MAX_NESTING, NESTING_HINT, recursion_headroom, too_deep
from streamjoin.dialect.dialect import FlinkDialect, LensesDialect, StreamJoin
from streamjoin.dialect.errors import StreamJoinError, error_at, span
from streamjoin.dialect.flavours import FLAVOURS, Flavour
from streamjoin.dialect.nodes import (
    CreateRelation, Duration, SetOption, SourceColumn, SourceTable, StreamQuery, ViewDefinition,
    Watermark, WindowTableFunction, Within,
)

_FLAVOUR_COMMENT = re.compile(r"^\s*--\s*dialect\s*:\s*(\w+)", re.I)


def dialect_for(flavour: str | Flavour):
    """The sqlglot dialect that parses `flavour` (a name or a Flavour)."""
    return flavours.flavour(flavour).dialect


def declared_flavour(sql: str, default: str = "ksqldb") -> str:
    """The flavour named in a first-line comment `-- dialect: flink`, else `default`."""
    match = _FLAVOUR_COMMENT.match(sql.split("\n", 1)[0])
    return match.group(1).lower() if match else default


def parse(sql: str, flavour: str | Flavour = "ksqldb", file: str | None = None) -> list[exp.Expr]:
    """All statements of `sql` (empty statements dropped). Unreadable text, a syntax error or
    nesting deeper than MAX_NESTING is a positioned StreamJoinError, never a Python error."""
    dialect = dialect_for(flavour)
    if sql.startswith("\ufeff"):  # a byte-order mark: a blank, so that every offset stays
        sql = " " + sql[1:]
    tokens = _tokenize(dialect, sql, file)
    _check_parentheses(tokens, sql, file)
    with recursion_headroom():
        try:
            statements = [s for s in dialect.parser().parse(tokens, sql) if s is not None]
        except ParseError as error:
            raise _syntax_error(error, sql, file) from None
        except RecursionError:  # a guard: the parenthesis check keeps the parser far from it
            raise StreamJoinError(f"the statement nests {NESTING_HINT}", "too-deeply-nested",
                                  sql=sql, file=file, start=0) from None
    for statement in statements:
        deep = too_deep(statement)
        if deep is not None:
            raise error_at(f"this expression nests {NESTING_HINT}", "too-deeply-nested", deep, sql=sql, file=file,
                           fallback=statement)
    return statements


def _tokenize(dialect, sql: str, file: str | None) -> list:
    tokenizer = dialect.tokenizer()
    try:
        return tokenizer.tokenize(sql)
    except TokenError:
        # The tokenizer keeps where the token it could not finish starts.
        start = getattr(tokenizer._core, "_start", 0)
        if sql.startswith("/*", start):
            message = "this comment is never closed: end it with */"
        elif sql[start:start + 1] in tokenizer._QUOTES:
            message = f"this string is never closed: end it with {tokenizer._QUOTES[sql[start]]}"
        elif sql[start:start + 1] in tokenizer._IDENTIFIERS:
            message = f"this quoted name is never closed: end it with {tokenizer._IDENTIFIERS[sql[start]]}"
        else:
            message = "the text cannot be read from here on"
        raise StreamJoinError(message, "syntax", sql=sql, file=file, start=start, end=start) from None


def _check_parentheses(tokens: list, sql: str, file: str | None) -> None:
    depth = 0
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            if depth > MAX_NESTING:
                raise StreamJoinError(f"the parentheses nest {NESTING_HINT}", "too-deeply-nested",
                                      sql=sql, file=file, start=token.start, end=token.end)
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1


def _syntax_error(error: ParseError, sql: str, file: str | None) -> StreamJoinError:
    detail = error.errors[0] if error.errors else {}
    end = _offset(sql, detail.get("line"), detail.get("col"))  # sqlglot's column is the token's last
    start = max(0, end - len(detail.get("highlight") or "x") + 1) if end is not None else None
    message = _our_words((detail.get("description") or str(error)).split("\n")[0])
    return StreamJoinError(message, "syntax", sql=sql, file=file, start=start, end=end)


_MISSING = re.compile(r"Required keyword: '\w+' missing for <class '[\w.]*\.(\w+)'>")
_OPERATORS = {"EQ": "=", "NEQ": "<>", "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<=", "Add": "+", "Sub": "-",
              "Mul": "*", "Div": "/", "Mod": "%", "DPipe": "||"}
_GOT_TOKEN = re.compile(r" but got <Token token_type: TokenType\.(\w+), text: (.*?), line: .*>$")


def _our_words(message: str) -> str:
    """sqlglot's messages that name its internals, said in the SQL's terms."""
    missing = _MISSING.fullmatch(message)
    if missing:
        name = missing.group(1)
        return f"an incomplete {_OPERATORS.get(name, name.upper())}: something is missing here"
    got = _GOT_TOKEN.search(message)
    if got:
        found = "the statement ends" if got.group(1) == "SENTINEL" else f"found {got.group(2)}"
        return message[:got.start()] + f", but {found}"
    return message


def _offset(sql: str, line: int | None, col: int | None) -> int | None:
    if not line or not col:
        return None
    lines = sql.split("\n")
    return sum(len(l) + 1 for l in lines[: line - 1]) + col - 1


__all__ = [
    "FLAVOURS", "CreateRelation", "Duration", "FlinkDialect", "Flavour", "LensesDialect", "SetOption", "SourceColumn",
    "SourceTable", "StreamJoin", "StreamJoinError", "StreamQuery", "ViewDefinition",
    "Watermark", "WindowTableFunction", "Within", "declared_flavour", "dialect_for", "parse", "span",
]
