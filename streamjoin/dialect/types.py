"""SQL column types as the dialects write them, parsed once into `SqlType`.

`parse_type` reads ksqlDB / Flink / Lenses / s-Server type strings: "STRING", "VARCHAR(32)",
"INTEGER", "DECIMAL(10, 4)", "ARRAY<ARRAY<INT>>", "MAP<STRING, INT>", "STRUCT<a INT, b STRING>",
"ROW<a INT>", "TIMESTAMP(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP_LTZ(3) PROCTIME".
Aliases collapse to one canonical name (INTEGER -> INT, VARCHAR/CHAR -> STRING, ROW -> STRUCT,
...) so formats and evaluation switch on a small closed set: `SqlType.name in TYPE_NAMES`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


# Canonical names. Parameters: STRING (max length, informational), DECIMAL (precision, scale),
# TIMESTAMP / TIMESTAMP_LTZ (fractional-second precision, default 3 as in ksqlDB).
TYPE_NAMES = frozenset({
    "STRING", "BYTES", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
    "DECIMAL", "TIMESTAMP", "TIMESTAMP_LTZ", "ARRAY", "MAP", "STRUCT",
    "ANY",  # a value whose type is only known at run time (a compiler's result type): JSON as is
})
_FAMILIES = {"TINYINT": "INTEGER", "SMALLINT": "INTEGER", "INT": "INTEGER", "FLOAT": "DOUBLE",
             "TIMESTAMP_LTZ": "TIMESTAMP"}
_ALIASES = {
    "VARCHAR": "STRING", "CHAR": "STRING", "TEXT": "STRING", "INTEGER": "INT", "LONG": "BIGINT",
    "BOOL": "BOOLEAN", "REAL": "FLOAT", "NUMERIC": "DECIMAL", "DEC": "DECIMAL", "ROW": "STRUCT",
    "VARBINARY": "BYTES", "BINARY": "BYTES",
}
TYPE_WORDS = TYPE_NAMES | set(_ALIASES)  # every type name a column declaration may use
INTEGER_RANGES = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}  # two's complement bits
TIMESTAMP_NAMES = frozenset({"TIMESTAMP", "TIMESTAMP_LTZ"})
_DEFAULT_PARAMS = {"DECIMAL": (10, 0), "TIMESTAMP": (3,), "TIMESTAMP_LTZ": (3,)}
MAX_DECIMAL_PRECISION = 38  # what a 128-bit decimal (Arrow, Spark, Kafka Connect) holds


class TypeSyntaxError(ValueError):
    """A type string that does not parse; the message names the position."""


@dataclass(frozen=True)
class SqlType:
    """A parsed column type.

    `params` holds the numbers in parentheses; `elements` the element type (ARRAY) or key and
    value types (MAP); `fields` the (name, type) pairs of a STRUCT, names as written.
    `proctime` marks a Flink processing-time attribute (`... PROCTIME`): computed on arrival,
    never read from a record.
    """

    name: str
    params: tuple[int, ...] = ()
    elements: tuple["SqlType", ...] = ()
    fields: tuple[tuple[str, "SqlType"], ...] = ()
    proctime: bool = False

    @property
    def precision(self) -> int:
        return self.params[0]

    @property
    def scale(self) -> int:
        return self.params[1]

    @property
    def is_timestamp(self) -> bool:
        return self.name in TIMESTAMP_NAMES

    @property
    def is_nested(self) -> bool:
        return self.name in ("ARRAY", "MAP", "STRUCT")

    @classmethod
    def parse(cls, text: str) -> "SqlType":
        return parse_type(text)

    @property
    def family(self) -> str:
        """What join keys must share to join without a CAST: ksqlDB rejects `INT = BIGINT` but
        INT and INTEGER, or VARCHAR(8) and STRING, are one family."""
        return _FAMILIES.get(self.name, self.name)

    def joinable_with(self, other: "SqlType") -> bool:
        return self.family == other.family

    def __str__(self) -> str:
        if self.name == "ARRAY":
            text = f"ARRAY<{self.elements[0]}>"
        elif self.name == "MAP":
            text = f"MAP<{self.elements[0]}, {self.elements[1]}>"
        elif self.name == "STRUCT":
            text = "STRUCT<" + ", ".join(f"{_quote(n)} {t}" for n, t in self.fields) + ">"
        elif self.params:
            text = f"{self.name}({', '.join(map(str, self.params))})"
        else:
            text = self.name
        return text + (" PROCTIME" if self.proctime else "")


# parse_type of the bare names: a value whose type is only known at run time (encoded as it is,
# JSON), and the plain TIMESTAMP(3) an expression yielding a timestamp has.
ANY = SqlType("ANY")
TIMESTAMP = SqlType("TIMESTAMP", (3,))


def _quote(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else f"`{name}`"


_TOKEN = re.compile(r"\s*(?:(?P<word>[A-Za-z_][A-Za-z0-9_]*|`[^`]+`|\"[^\"]+\")|(?P<num>\d+)|(?P<sym>[<>(),]))")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []  # (kind, text, position)
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            match = _TOKEN.match(text, pos)
            if not match:
                raise TypeSyntaxError(f"unexpected character {text[pos:].lstrip()[0]!r} at position {pos} in type {text!r}")
            kind = match.lastgroup
            self.tokens.append((kind, match.group(kind), match.start(kind)))
            pos = match.end()
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i][1].upper() if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None, kind: str | None = None) -> str:
        if self.i >= len(self.tokens):
            raise TypeSyntaxError(f"type {self.text!r} ends early" + (f": expected {expected!r}" if expected else ""))
        tok_kind, tok, pos = self.tokens[self.i]
        if (expected and tok.upper() != expected) or (kind and tok_kind != kind):
            want = repr(expected) if expected else f"a {kind}"
            raise TypeSyntaxError(f"expected {want} at position {pos} in type {self.text!r}, found {tok!r}")
        self.i += 1
        return tok

    def words(self, *words: str) -> bool:
        """Consume the keyword sequence if it is next."""
        upcoming = [t[1].upper() for t in self.tokens[self.i:self.i + len(words)]]
        if upcoming == list(words):
            self.i += len(words)
            return True
        return False

    def parse_type(self) -> SqlType:
        word = self.take(kind="word").upper()
        name = _ALIASES.get(word, word)
        if name not in TYPE_NAMES:
            raise TypeSyntaxError(f"unknown type {word!r} in {self.text!r}; supported: {', '.join(sorted(TYPE_NAMES))}")
        if name == "ARRAY":
            return SqlType(name, elements=(self.bracketed(1)[0],))
        if name == "MAP":
            return SqlType(name, elements=tuple(self.bracketed(2)))
        if name == "STRUCT":
            return SqlType(name, fields=self.struct_fields())
        params: tuple[int, ...] = ()
        if self.peek() == "(":
            self.take("(")
            params = (int(self.take(kind="num")),)
            while self.peek() == ",":
                self.take(",")
                params += (int(self.take(kind="num")),)
            self.take(")")
        if name == "TIMESTAMP" and self.words("WITH", "LOCAL", "TIME", "ZONE"):
            name = "TIMESTAMP_LTZ"
        self.words("NOT", "NULL")
        if name == "DECIMAL" and len(params) == 1:
            params += (0,)
        if name == "DECIMAL" and params:
            check_decimal(*params[:2])
        return SqlType(name, params or _DEFAULT_PARAMS.get(name, ()))

    def bracketed(self, count: int) -> list[SqlType]:
        self.take("<")
        types = [self.parse_type()]
        for _ in range(count - 1):
            self.take(",")
            types.append(self.parse_type())
        self.take(">")
        return types

    def struct_fields(self) -> tuple[tuple[str, SqlType], ...]:
        # ksqlDB writes STRUCT<a INT>, Flink ROW<a INT> or ROW(a INT).
        close = ")" if self.peek() == "(" else ">"
        self.take("(" if close == ")" else "<")
        fields: list[tuple[str, SqlType]] = []
        while self.peek() != close:
            if fields:
                self.take(",")
            field_name = self.take(kind="word").strip("`\"")
            fields.append((field_name, self.parse_type()))
        self.take(close)
        return tuple(fields)


def check_decimal(precision: int, scale: int = 0) -> None:
    """DECIMAL(p, s) holds p digits, s of them after the point: 1 <= p <= 38 and 0 <= s <= p."""
    if not 1 <= precision <= MAX_DECIMAL_PRECISION or not 0 <= scale <= precision:
        raise TypeSyntaxError(f"DECIMAL({precision}, {scale}) cannot hold a value: the precision is 1 to "
                              f"{MAX_DECIMAL_PRECISION} and the scale 0 to the precision, e.g. DECIMAL(10, 2)")


def parse_type(text: str) -> SqlType:
    """Parse one column type string; raise TypeSyntaxError with the position on bad input."""
    parser = _Parser(text)
    parsed = parser.parse_type()
    if parser.words("PROCTIME"):
        parsed = SqlType(parsed.name, parsed.params, parsed.elements, parsed.fields, proctime=True)
    if parser.i != len(parser.tokens):
        _, tok, pos = parser.tokens[parser.i]
        raise TypeSyntaxError(f"unexpected {tok!r} at position {pos} in type {text!r}")
    return parsed
