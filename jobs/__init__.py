"""Dagster jobs, sensors and schedules over the query assets (see each module's docstring), and
the folder of query files they are built from (`SQL_DIR`: sql/ beside definitions.py, or
STREAMJOIN_SQL_DIR)."""

import os
from pathlib import Path

SQL_DIR = Path(os.environ.get("STREAMJOIN_SQL_DIR") or Path(__file__).resolve().parents[1] / "sql")
