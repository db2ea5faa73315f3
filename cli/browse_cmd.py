"""`funes browse`: a read-only web page over the memory, on this machine only."""

from __future__ import annotations

import typer

from funes.cli.main import app
from funes.cli.options import READ_MEMORY


@app.command("browse")
def browse_command(
    memory: str = READ_MEMORY,
    port: int = typer.Option(0, "--port", help="Port on 127.0.0.1 (0: a free one)."),
    no_open: bool = typer.Option(False, "--no-open", help="Print the URL without opening a browser."),
) -> None:
    """Search, sessions, file histories and the memory's status as a local web page
    (127.0.0.1 only, a secret token in the URL printed, read-only); Ctrl-C stops it."""
    import secrets
    import webbrowser

    from funes.cli.browse.app import bind, server
    from funes.cli.browse.site import Site
    from funes.errors import bounded_int

    bounded_int("--port", port, 0, 65535)
    site = Site.open(memory)
    sock = bind(port)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    url = f"http://127.0.0.1:{port}/?token={token}"
    typer.echo(f"funes browse: {site.label} at {url}  (Ctrl-C stops it)")
    if not no_open:
        try:
            webbrowser.open(url)
        except Exception:  # no browser here: the URL printed is the way in  # noqa: BLE001
            pass
    server(site, sock, token).run(sockets=[sock])
