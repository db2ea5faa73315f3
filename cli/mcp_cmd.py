"""`funes mcp [memory]`: serve recall/get/status to an agent over stdio."""

from __future__ import annotations

import typer

from funes.cli.main import app


@app.command("mcp")
def mcp_command(
    memory: str = typer.Argument(None, help="Memory the tools read by default: local, a folder, org/repo, hf://…, s3://…"),
) -> None:
    """Run the MCP server on stdin/stdout (registered by `funes add`)."""
    from funes.cli.mcp_server import build_server

    build_server(memory).run("stdio")
