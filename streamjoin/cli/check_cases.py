"""`streamjoin check-cases FILE_OR_DIR...`: parse, plan, validate and compile conformance cases
(no Spark, no broker). A case passes when an accepted case plans (with the expected key schema, if given)
and a rejected case fails with every expected substring in the message."""

from __future__ import annotations

import argparse

from streamjoin.app.compiling import compile_program
from streamjoin.runner.cases import Case, load_cases
from streamjoin.plan.catalog import Catalog
from streamjoin.dialect import StreamJoinError
from streamjoin.plan import plan_program


def check_case(case: Case) -> str | None:
    """None when the case passes, else the reason it fails."""
    try:
        catalog = Catalog.from_case_sources(case.sources)
        for statement in case.setup:
            catalog = plan_program(statement, catalog, case.dialect, settings=case.settings).catalog
        program = plan_program(case.sql, catalog, case.dialect, settings=case.settings)
        compile_program(program)  # what fails only once compiled fails here too
    except StreamJoinError as error:
        if case.expect_error is None:
            return f"rejected: {error}"
        if case.expect_error.stage == "runtime":
            return None  # rejected earlier than required is still a rejection with no output
        missing = case.expect_error.missing(error)
        return f"error message lacks {missing}: {error}" if missing else None
    except ValueError as error:
        return f"bad case: {error}"
    if case.expect_error is not None:
        if case.expect_error.stage == "runtime":
            return None  # only the engine can reject it; planning accepted it
        return f"accepted, but the case expects an error containing {list(case.expect_error.contains)}"
    if not program.queries:
        return "no query in sql"
    if case.expected_schema and "key" in case.expected_schema:
        expected = [k.lower() for k in case.expected_schema["key"]]
        actual = [k.lower() for k in program.queries[-1].key_columns]
        if expected != actual:
            return f"key columns {actual}, expected {expected}"
    return None


def run(args: argparse.Namespace) -> int:
    try:
        cases = load_cases(args.paths)
    except (OSError, ValueError) as error:
        print(f"ERROR: {error}")
        return 2
    failed = 0
    for case in cases:
        reason = check_case(case)
        if reason is None:
            print(f"PASS {case.id}")
        else:
            failed += 1
            print(f"FAIL {case.id}: " + reason.replace("\n", "\n    "))
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 0 if failed == 0 and cases else 1


def register(subparsers) -> None:
    parser = subparsers.add_parser("check-cases", help="parse/plan/validate conformance cases (no Spark)")
    parser.add_argument("paths", nargs="+", help="case JSON files or directories of them")
    parser.set_defaults(func=run)
