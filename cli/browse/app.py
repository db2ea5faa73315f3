"""The `funes browse` server: a Starlette app over one memory, and what guards it.

Safe by construction, for a page that shows months of transcripts:

* it listens on 127.0.0.1 only (:func:`bind`);
* every request needs this run's secret: the URL printed carries it once as
  ``?token=``, which answers with a cookie (HttpOnly, SameSite=Strict, named after
  the port) and a redirect to the same page without it, so the secret leaves the
  address bar and never reaches a Referer;
* the Host header must name the loopback address and port served (a DNS-rebinding
  page's requests carry its own host name), and an Origin or Sec-Fetch-Site header,
  when sent, must say the request comes from this page (cross-site requests refused);
* only GET and HEAD are answered: nothing here writes;
* every response forbids scripts, frames and outside resources (Content-Security-Policy),
  and the pages escape every recalled character (pages.h) anyway.
"""

from __future__ import annotations

import hmac
import socket
from collections.abc import Awaitable, Callable
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from funes.cli.browse import pages
from funes.errors import FunesError, UsageError

TOKEN_PARAMETER = "token"
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                 b"frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
]
READ_METHODS = ("GET", "HEAD")
SAME_SITE = ("same-origin", "none")  # Sec-Fetch-Site of this page's own links and of a typed or opened URL

Scope = dict[str, Any]
ASGI = Callable[[Scope, Callable, Callable], Awaitable[None]]


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (0: one the system picks); a usage
    error naming the port when it cannot be had."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise UsageError(f"--port {port}: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    return sock


class Guard:
    """ASGI middleware refusing whatever is not a GET of this page by the person who
    ran `funes browse` (see the module's docstring)."""

    def __init__(self, app: ASGI, *, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.cookie = f"funes_browse_{port}"
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.origins = {f"http://{host}" for host in self.hosts}

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # a websocket: nothing here speaks it
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, text, extra = refusal
            await _plain(send, status, text, extra)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [value for name, value in query if name == TOKEN_PARAMETER]
        if given:  # the printed URL: trade the token for the cookie, and drop it from the address
            rest = urlencode([(name, value) for name, value in query if name != TOKEN_PARAMETER])
            location = scope.get("path", "/") + (f"?{rest}" if rest else "")
            cookie = f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict"
            await _plain(send, 303, "signed in", [(b"location", location.encode("latin-1")),
                                                  (b"set-cookie", cookie.encode("latin-1"))])
            return

        async def secured(message: dict) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, secured)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str, list] | None:
        """(status, reason, headers) when the request is refused; None when it may pass."""
        if scope["method"] not in READ_METHODS:
            return 405, "funes browse is read-only: GET only", [(b"allow", b"GET, HEAD")]
        if headers.get("host", "").lower() not in self.hosts:
            return 421, "wrong Host: this page answers only at the address funes browse printed", []
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return 403, "cross-origin request refused", []
        if headers.get("sec-fetch-site", "none") not in SAME_SITE:
            return 403, "cross-site request refused", []
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [value for name, value in query if name == TOKEN_PARAMETER]
        if given:
            return None if hmac.compare_digest(given[-1], self.token) else (403, "wrong token", [])
        jar = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:  # http.cookies raises its own CookieError on a malformed header
            jar = SimpleCookie()
        held = jar.get(self.cookie)
        if held is None or not hmac.compare_digest(held.value, self.token):
            return 403, "no token: open the URL funes browse printed", []
        return None


async def _plain(send: Callable, status: int, text: str, extra: list) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *SECURITY_HEADERS, *extra]})
    await send({"type": "http.response.body", "body": body})


def create_app(browser: Any, *, token: str, port: int) -> ASGI:
    """The guarded app serving ``browser`` (a :class:`funes.cli.browse.site.Site`)."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    def endpoint(render: Callable) -> Callable:
        # Pages render synchronously on the event loop: one person reads one memory,
        # and Lance and the query models are then never used from two threads at once.
        async def handle(request) -> HTMLResponse:
            try:
                title, body = render(request)
                status = 200
            except FunesError as exc:
                title, body, status = "Not answered", pages.error_box(str(exc)), 400
            return HTMLResponse(pages.page(title, body, label=browser.label), status_code=status)

        return handle

    routes = [Route("/", endpoint(browser.overview_page)),
              Route("/search", endpoint(browser.search_page)),
              Route("/sessions", endpoint(browser.sessions_page)),
              Route("/session/{session_id:path}", endpoint(browser.session_page)),
              Route("/history", endpoint(browser.history_page))]
    return Guard(Starlette(routes=routes), token=token, port=port)


def server(site: Any, sock: socket.socket, token: str) -> Any:
    """A uvicorn server of ``site`` for the socket :func:`bind` gave (its ``run(sockets=[sock])``
    serves until Ctrl-C or ``should_exit``)."""
    import uvicorn

    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(site, token=token, port=port), log_level="warning", access_log=False,
                            lifespan="off", proxy_headers=False, server_header=False)
    return uvicorn.Server(config)
