"""Sub-commands of the `streamjoin` CLI: one module per feature, each with `register(subparsers)`
that adds its parsers and sets `func` (called with the parsed args, returns the exit code)."""
