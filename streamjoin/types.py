"""SQL column types as the four dialects write them, reduced to comparable families.

`SqlType.parse("DECIMAL(10, 4)")`, `SqlType.parse("TIMESTAMP_LTZ(3) PROCTIME")`,
`SqlType.parse("ARRAY<ARRAY<INT>>")`. Two types join without a CAST when their `family` is
equal (INT and INTEGER are one family, VARCHAR(8) and STRING are one family, INT and BIGINT are
not: ksqlDB rejects `INT = BIGINT` join keys).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Spelling -> family. Families follow ksqlDB's key types; the other dialects' spellings map onto them.
_FAMILIES = {
    "STRING": "STRING", "VARCHAR": "STRING", "CHAR": "STRING", "TEXT": "STRING",
    "INT": "INTEGER", "INTEGER": "INTEGER", "SMALLINT": "INTEGER", "TINYINT": "INTEGER",
    "BIGINT": "BIGINT", "LONG": "BIGINT",
    "DOUBLE": "DOUBLE", "FLOAT": "DOUBLE", "REAL": "DOUBLE",
    "DECIMAL": "DECIMAL", "NUMERIC": "DECIMAL",
    "BOOLEAN": "BOOLEAN", "BOOL": "BOOLEAN",
    "TIMESTAMP": "TIMESTAMP", "TIMESTAMP_LTZ": "TIMESTAMP", "DATE": "DATE", "TIME": "TIME",
    "BYTES": "BYTES", "VARBINARY": "BYTES",
}
_TYPE_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z_0-9]*)\s*(?:\(([^)]*)\))?\s*(.*?)\s*$", re.S)


@dataclass(frozen=True)
class SqlType:
    """A declared column type: base name, parameters, element type for ARRAY/MAP, flags."""

    name: str
    params: tuple[str, ...] = ()
    element: "SqlType | None" = None
    proctime: bool = False
    raw: str = ""

    @classmethod
    def parse(cls, text: str) -> "SqlType":
        raw = text.strip()
        body, proctime = raw, False
        if re.search(r"\bPROCTIME\s*$", body, re.I):
            body, proctime = re.sub(r"\s*\bPROCTIME\s*$", "", body, flags=re.I), True
        generic = re.match(r"^\s*(ARRAY|MAP|STRUCT)\s*<(.*)>\s*$", body, re.I | re.S)
        if generic:
            inner = generic.group(2)
            element = cls.parse(inner) if generic.group(1).upper() == "ARRAY" else None
            return cls(generic.group(1).upper(), (inner.strip(),), element, proctime, raw)
        match = _TYPE_RE.match(body)
        if not match or (match.group(3) and match.group(3).upper() not in ("", "NOT NULL", "NULL")):
            raise ValueError(f"unknown column type {text!r}")
        params = tuple(p.strip() for p in (match.group(2) or "").split(",") if p.strip())
        return cls(match.group(1).upper(), params, None, proctime, raw)

    @property
    def family(self) -> str:
        return _FAMILIES.get(self.name, self.name)

    def joinable_with(self, other: "SqlType") -> bool:
        return self.family == other.family

    def __str__(self) -> str:
        if self.name in ("ARRAY", "MAP", "STRUCT"):
            text = f"{self.name}<{self.params[0]}>"
        else:
            text = self.name + (f"({', '.join(self.params)})" if self.params else "")
        return text + (" PROCTIME" if self.proctime else "")
