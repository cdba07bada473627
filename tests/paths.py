"""Where the tests find the repository and the shared cases beside it (read at test time, never
copied into the project)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CONFORMANCE = SHARED / "conformance"
SUITES = SHARED / "suites"
