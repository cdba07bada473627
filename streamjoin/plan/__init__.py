"""Logical planning: SQL text + catalog -> Program (source declarations, settings, planned
queries); validation errors are StreamJoinError with rule, file, line and column."""

from streamjoin.plan.explain import explain
from streamjoin.plan.nodes import *  # noqa: F403 - the node classes are this package's API
from streamjoin.plan.changelog_nodes import *  # noqa: F403
from streamjoin.plan.window_nodes import *  # noqa: F403
from streamjoin.plan.lookup_nodes import *  # noqa: F403
from streamjoin.plan.planner import (
    PlannedQuery, PlannedView, Program, Setting, SourceDeclaration, plan_program,
)
from streamjoin.plan.scope import ScopeEntry

__all__ = [
    "PlannedQuery", "PlannedView", "Program", "ScopeEntry", "Setting", "SourceDeclaration",
    "explain", "plan_program",
]
