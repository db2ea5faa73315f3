"""The `funes` command line: one module per command."""
