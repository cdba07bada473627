"""How deeply a statement may nest, and the recursion headroom to read, plan and compile it.

sqlglot's parser spends about 25 Python frames per parenthesis, so Python's default recursion
limit (1000) ends at about 40 nested parentheses. Parsing, planning and compiling therefore run
with `recursion_headroom()`. What runs later, per record, does not: expression evaluation, the
SQL text of an error and the compile on each Spark task take up to about 5 frames per level. So
a statement nests at most MAX_NESTING levels (parentheses, operators, function calls), which
keeps all of them far below the default limit; deeper text is a positioned `too-deeply-nested`
error, never a RecursionError.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import Iterator

from sqlglot import exp

MAX_NESTING = 100
_HEADROOM = 20_000  # frames: MAX_NESTING parentheses parse in about 2,500
_lock = threading.Lock()
_holders = 0
_saved_limit = 0


@contextmanager
def recursion_headroom() -> Iterator[None]:
    """Raise Python's recursion limit while the block runs. Re-entrant and thread-safe: the
    limit is restored when the last block (of any thread) ends, never lowered under a running one."""
    global _holders, _saved_limit
    with _lock:
        if _holders == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, _HEADROOM))
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                sys.setrecursionlimit(_saved_limit)


def too_deep(tree: exp.Expr) -> exp.Expr | None:
    """The first node of `tree` more than MAX_NESTING levels below it, else None (iterative:
    the check itself never recurses)."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            return node
        stack.extend((child, depth + 1) for child in node.iter_expressions())
    return None


NESTING_HINT = (f"more than {MAX_NESTING} levels deep; split it into smaller expressions "
                "(a long OR chain of equalities is `x IN (a, b, ...)`)")
