"""`python -m funes.cli` runs the `funes` command (tests and hooks use the
interpreter's absolute path instead of relying on PATH)."""

from funes.cli.main import main

main()
