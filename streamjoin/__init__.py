"""streamjoin: streaming joins as code. The engine package; it never imports dagster."""

__version__ = "0.1.0"
