"""SQL expressions compiled into Python closures with SQL semantics (see docs/functions.md).

`compile.py` resolves columns and drives compilation through the dispatch table of `core.py`;
the compilers of SQL forms (`forms`), operators (`ops`) and functions (`functions`) register
themselves in that table when imported, which this package does once, here, so every
`streamjoin.expr` import sees the full table.
"""

from streamjoin.expr import forms, functions, ops, time_functions  # noqa: F401  (register their compilers)
from streamjoin.expr.compile import ExprOptions, Scope, compile_expr, compile_predicate
from streamjoin.expr.core import ExpressionError

__all__ = ["ExprOptions", "ExpressionError", "Scope", "compile_expr", "compile_predicate"]
