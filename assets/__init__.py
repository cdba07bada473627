"""Dagster assets built from a `streamjoin.app.project.SqlProject`: one asset per query file, its
source, repartition and output topics and its Delta table (lineage), and the asset checks."""

from assets.checks import build_checks
from assets.factory import QueryAssets, build_assets

__all__ = ["QueryAssets", "build_assets", "build_checks"]
