"""Dagster jobs, sensors and schedules over the query assets (see each module's docstring)."""
