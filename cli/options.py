"""Options that several commands take with the same meaning: the reading filters of
`recall`, `sessions` and `scan`, and the memory they read.  One definition each, so
their help texts and flags cannot drift apart."""

from __future__ import annotations

import typer

HARNESS = typer.Option(None, "--harness", help="Only this agent's sessions (funes status names the agents).")
BLOCK_TYPE = typer.Option(None, "--type", help="text, thinking, tool_use or tool_result.")
WORKDIR = typer.Option(None, "--workdir", help="Project directory (or its workdir facet): a prefix match.")
REPO = typer.Option(None, "--repo", help="owner/name of the git repository.")
BRANCH = typer.Option(None, "--branch", help="Git branch the session ran on.")
SESSION = typer.Option(None, "--session", help="One session: its id or a unique prefix (8+ characters).")
SINCE = typer.Option(None, "--since", help="ISO date or span (7d, 2w, 12h).")
UNTIL = typer.Option(None, "--until", help="ISO date or span.")
FILE = typer.Option(None, "--file", help="Only turns that touched this file (read, edit, write, delete): a path "
                    "relative to the repo root, or a local path; a prefix match, so a folder names its files.")
COMMAND = typer.Option(None, "--command", help="Only turns that ran a shell command containing this text.")
READ_MEMORY = typer.Option(None, "--memory", help="local (default), a folder, org/repo, hf://datasets/…, s3://…")
