"""Positioned errors for everything between SQL text and a validated plan."""

from __future__ import annotations

from sqlglot import exp


class StreamJoinError(Exception):
    """A rejected statement: which rule, where (file, 1-based line and column), and the source
    line with the offending text underlined, formatted like sqlglot's parse errors:

        query.sql:1:37: [stream-stream-window] Stream-Stream joins must have a WITHIN clause
          SELECT ... FROM l JOIN r ON l.id = r.id
                                ^^^^^^
    """

    def __init__(self, message: str, rule: str, *, sql: str = "", file: str | None = None,
                 start: int | None = None, end: int | None = None) -> None:
        self.rule, self.file, self.sql, self.reason = rule, file, sql, message
        self.start, self.end = start, end
        self.line, self.col = _line_col(sql, start) if start is not None else (None, None)
        super().__init__(self._format())

    @property
    def snippet(self) -> str:
        if self.start is None or not self.sql:
            return ""
        line_start = self.sql.rfind("\n", 0, self.start) + 1
        line_end = self.sql.find("\n", self.start)
        line_end = len(self.sql) if line_end < 0 else line_end
        width = max(1, min(self.end if self.end is not None else self.start, line_end - 1) - self.start + 1)
        return f"  {self.sql[line_start:line_end]}\n  {' ' * (self.start - line_start)}{'^' * width}"

    def _format(self) -> str:
        where = ":".join(str(p) for p in (self.file, self.line, self.col) if p is not None)
        head = f"{where + ': ' if where else ''}[{self.rule}] {self.reason}"
        return head + ("\n" + self.snippet if self.snippet else "")


def error_at(message: str, rule: str, node: exp.Expr | None, *, sql: str, file: str | None,
             fallback: exp.Expr | None = None) -> StreamJoinError:
    """The error at `node`. A node that holds no position of its own (a keyword, a generated
    node) points at its nearest enclosing node that does, at worst at `fallback`."""
    start, end = span(node)
    while start is None and node is not None and node.parent is not None:
        node = node.parent
        start, end = span(node)
    if start is None:
        start, end = span(fallback)
    return StreamJoinError(message, rule, sql=sql, file=file, start=start, end=end)


def _line_col(sql: str, offset: int) -> tuple[int, int]:
    line = sql.count("\n", 0, offset) + 1
    return line, offset - (sql.rfind("\n", 0, offset) + 1) + 1


def span(node: exp.Expr | None) -> tuple[int | None, int | None]:
    """The character range [start, end] of a parsed node, from the token positions sqlglot keeps
    on identifiers and literals inside it (None when the node was not parsed from text)."""
    if node is None:
        return None, None
    starts, ends = [], []
    for child in node.walk():
        meta = getattr(child, "_meta", None) or {}
        if "start" in meta:
            starts.append(meta["start"])
            ends.append(meta["end"])
    own = getattr(node, "_meta", None) or {}
    if "sj_start" in own:
        starts.append(own["sj_start"])
        ends.append(own["sj_end"])
    return (min(starts), max(ends)) if starts else (None, None)
