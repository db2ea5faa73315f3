"""`funes browse`: the read-only web page over a memory.

The default suite drives the app in-process (Starlette's TestClient) over the memory
built from the fixture transcripts: the token, Host, Origin and method refusals, each
page's answer, and escaping of hostile transcript text.  The ``slow`` tests start
the real server and Debian's chromium, headless, and use the pages as a person does
(tests/helpers/cdp.py)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
from agent_helpers import funes, wait_for
from cdp import chromium, needs_chromium
from memory_helpers import LONG_SESSION, append_user_turn, build_memory
from paths import REAL

from funes.cli.browse import pages
from funes.retrieval.get import BlockView, TurnView

PORT = 5555
TOKEN = "test-token-0123456789"
BASE = f"http://127.0.0.1:{PORT}"
HOSTILE = "<script>window.pwned = 1; document.title = 'pwned'</script><img src=x onerror=\"window.pwned = 2\">"


@pytest.fixture
def client(memory_home):
    from starlette.testclient import TestClient

    from funes.cli.browse.app import create_app
    from funes.cli.browse.site import Site

    return TestClient(create_app(Site.open(None), token=TOKEN, port=PORT), base_url=BASE)


@pytest.fixture
def signed_in(client):
    client.cookies.set(f"funes_browse_{PORT}", TOKEN)
    return client


def test_the_printed_url_trades_its_token_for_a_cookie_and_leaves_the_address(client):
    answer = client.get(f"/search?q=tests&token={TOKEN}", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/search?q=tests"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"funes_browse_{PORT}={TOKEN};") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert client.get("/sessions").status_code == 200  # the cookie now opens every page


@pytest.mark.parametrize("how", ["none", "wrong token", "wrong cookie"])
def test_a_request_without_this_runs_token_is_refused(client, how):
    if how == "wrong cookie":
        client.cookies.set(f"funes_browse_{PORT}", "guessed")
    answer = client.get("/?token=guessed" if how == "wrong token" else "/sessions", follow_redirects=False)
    assert answer.status_code == 403
    assert "Session" not in answer.text and "set-cookie" not in answer.headers


def test_another_host_name_is_refused_even_with_the_cookie(signed_in):
    """DNS rebinding: a page at evil.example whose name now points at 127.0.0.1 sends its own Host."""
    assert signed_in.get("/sessions", headers={"host": f"evil.example:{PORT}"}).status_code == 421
    assert signed_in.get("/sessions", headers={"host": "127.0.0.1:1"}).status_code == 421
    assert signed_in.get("/sessions", headers={"host": f"localhost:{PORT}"}).status_code == 200


@pytest.mark.parametrize("headers", [{"origin": "https://evil.example"}, {"origin": "null"},
                                     {"sec-fetch-site": "cross-site"}, {"sec-fetch-site": "same-site"}])
def test_cross_site_requests_are_refused(signed_in, headers):
    assert signed_in.get("/sessions", headers=headers).status_code == 403


def test_the_pages_own_requests_pass(signed_in):
    own = {"origin": BASE, "sec-fetch-site": "same-origin"}
    assert signed_in.get("/sessions", headers=own).status_code == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_nothing_is_written(signed_in, method):
    answer = signed_in.request(method, "/sessions")
    assert answer.status_code == 405
    assert answer.headers["allow"] == "GET, HEAD"


def test_every_answer_forbids_scripts_and_frames(signed_in):
    policy = signed_in.get("/").headers["content-security-policy"]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy and "script-src" not in policy


def test_hostile_transcript_text_is_shown_as_characters():
    turn = TurnView(seq=3, turn_uuid="u", role="user", ts="2026-05-01T00:00:00Z",
                    blocks=[BlockView("text", None, HOSTILE), BlockView("tool_use", "Bash</summary><script>", HOSTILE)])
    shown = pages.turn_html(turn)
    assert "<script" not in shown and "<img" not in shown
    assert "&lt;script&gt;window.pwned = 1;" in shown and "Bash&lt;/summary&gt;" in shown


def test_search_shows_hits_with_provenance_and_a_link_to_the_turn(signed_in):
    answer = signed_in.get("/search", params={"q": "package.json write", "harness": "claude_code", "k": "5"})
    assert answer.status_code == 200
    assert answer.text.count("class=hit") == 5
    assert f"/session/{LONG_SESSION}?from=" in answer.text and "#turn-" in answer.text
    assert "<option value='claude_code' selected>" in answer.text  # the filter kept as chosen


def test_a_tool_calls_hit_shows_its_result(signed_in):
    answer = signed_in.get("/search", params={"q": "Get-ChildItem list files in working directory", "k": "5"})
    assert answer.status_code == 200
    assert "⇒ what came of it: " in answer.text and "<pre>(PowerShell completed with no output)</pre>" in answer.text


def test_a_bad_filter_is_an_error_on_the_page(signed_in):
    answer = signed_in.get("/search", params={"q": "tests", "since": "bogus"})
    assert answer.status_code == 400
    assert "--since &#x27;bogus&#x27;: expected an ISO date" in answer.text


def test_a_session_pages_like_get_from_to(signed_in):
    first = signed_in.get(f"/session/{LONG_SESSION[:8]}")
    assert first.status_code == 200 and "id=turn-0" in first.text
    assert f"/session/{LONG_SESSION}?from=" in first.text and "later →" in first.text
    later = signed_in.get(f"/session/{LONG_SESSION}", params={"from": 240})
    assert "id=turn-240" in later.text and "id=turn-0" not in later.text and "← earlier" in later.text
    assert "<details" in later.text  # tool calls and results collapsed
    assert "<summary>tool_result Bash · exit 0: " in signed_in.get(f"/session/{LONG_SESSION}", params={"from": 140}).text


def test_file_history_and_overview(signed_in):
    history = signed_in.get("/history", params={"file": "package.json", "here": "false"})
    assert "1 turn(s) in 1 session(s) touched <code>package.json</code>" in history.text
    assert f"/session/{LONG_SESSION}?from=99#turn-99" in history.text
    overview = signed_in.get("/")
    assert "Sessions per agent" in overview.text and "claude_code" in overview.text and "-W" in overview.text


def test_a_port_in_use_is_a_one_line_error(memory_home):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = funes("browse", "--no-open", "--port", str(port))
    assert result.code != 0
    assert result.err.startswith(f"funes: --port {port}: cannot listen on 127.0.0.1:{port}")
    assert result.err.count("\n") == 1


def test_a_memory_that_cannot_be_read_is_a_one_line_error(tmp_path):
    result = funes("browse", "--no-open", "--memory", str(tmp_path / "nothing-here"))
    assert result.code != 0 and result.err.startswith("funes: ") and result.err.count("\n") == 1


# --- in a real browser --------------------------------------------------------------------------


@contextmanager
def serving(spec: str | None = None):
    """`funes browse`'s server of ``spec`` on a free loopback port, in a thread: (its URL, the token)."""
    from funes.cli.browse.app import bind, server
    from funes.cli.browse.site import Site

    sock = bind(0)
    running = server(Site.open(spec), sock, TOKEN)
    thread = threading.Thread(target=running.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: running.started)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", TOKEN
    finally:
        running.should_exit = True
        thread.join(timeout=30)


def _submit(page, values: dict[str, str], form: str = "form.filters") -> None:
    """Fill the form's controls and press its button, as a person would."""
    for name, value in values.items():
        page.evaluate(f"document.querySelector({json.dumps(form)}).elements[{json.dumps(name)}].value = "
                      f"{json.dumps(value)}")
    page.click(f"{form} button")


SHOTS = os.environ.get("FUNES_BROWSE_SCREENSHOTS")  # a folder: the pages' screenshots land there (docs/browse)


def _shot(page, name: str) -> None:
    if SHOTS:
        page.screenshot(Path(SHOTS) / f"{name}.png")


@pytest.mark.slow
@needs_chromium
def test_in_a_browser_search_open_a_hit_page_a_session_and_a_files_history(memory_home, tmp_path):
    with serving() as (base, token), chromium(tmp_path / "profile") as page:
        page.open(f"{base}/?token={token}")
        assert page.evaluate("location.search") == ""  # the token left the address bar
        assert page.evaluate("document.title").startswith("Memory")
        _shot(page, "overview")

        page.open(f"{base}/search")
        _submit(page, {"q": "package.json write", "harness": "claude_code"})
        assert page.evaluate("document.querySelectorAll('.hit').length") >= 5
        assert "claude_code" in page.evaluate("document.querySelector('.hit .meta').innerText")
        _shot(page, "search")
        page.click(".hit a")
        target = page.evaluate("location.hash")
        assert target.startswith("#turn-")
        assert page.evaluate("document.querySelector(':target').id") == target[1:]

        page.open(f"{base}/session/{LONG_SESSION}")
        assert page.evaluate("document.querySelector('.turn').id") == "turn-0"
        assert page.evaluate("document.querySelectorAll('details[open]').length") == 0  # tool calls collapsed
        _shot(page, "session")
        page.click(".pager a.later")
        assert page.evaluate("document.querySelector('.turn').id") != "turn-0"
        page.click(".pager a.earlier")
        assert page.evaluate("document.querySelector('.turn').id") == "turn-0"

        page.open(f"{base}/history")
        _submit(page, {"file": "package.json", "here": "false"})
        assert page.evaluate("document.querySelectorAll('.entry').length") == 1
        _shot(page, "history")
        page.click(".entry a")
        assert page.evaluate("document.querySelector(':target').id") == "turn-99"

        page.open(f"{base}/sessions")
        _shot(page, "sessions")


@pytest.mark.slow
@needs_chromium
def test_in_a_browser_a_page_needs_the_token_and_its_own_host_name(memory_home, tmp_path):
    # evil.example resolves to 127.0.0.1 for this browser: a DNS-rebinding page's requests.
    with serving() as (base, token), chromium(tmp_path / "profile",
                                              "--host-resolver-rules=MAP evil.example 127.0.0.1") as page:
        page.open(f"{base}/sessions")
        assert "no token" in page.evaluate("document.body.innerText")
        page.open(f"{base}/?token=guessed")
        assert "wrong token" in page.evaluate("document.body.innerText")
        port = base.rsplit(":", 1)[1]
        page.open(f"http://evil.example:{port}/?token={token}")
        assert "wrong Host" in page.evaluate("document.body.innerText")
        page.open(f"{base}/?token={token}")
        page.open(f"{base}/sessions")
        assert page.evaluate("document.querySelectorAll('table').length") >= 1


@pytest.mark.slow
@needs_chromium
def test_in_a_browser_hostile_transcript_text_is_inert(isolated_env, tmp_path, monkeypatch):
    transcript = isolated_env / ".claude" / "projects" / "-tmp-as" / "as_claude_small.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copyfile(REAL / "as_claude_small.jsonl", transcript)
    append_user_turn(transcript, HOSTILE + "<script>alert('pwned')</script>")
    build_memory(isolated_env, tmp_path / "funes")
    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "funes"))
    with serving() as (base, token), chromium(tmp_path / "profile") as page:
        page.open(f"{base}/?token={token}")
        page.open(f"{base}/session/as_claude_small")
        assert "<script>window.pwned = 1;" in page.evaluate("document.body.innerText")
        assert page.evaluate("document.scripts.length") == 0
        assert page.evaluate("document.images.length") == 0
        assert page.evaluate("typeof window.pwned") == "undefined"
        assert page.evaluate("document.title") != "pwned"
        page.open(f"{base}/search?q=pwned")
        assert page.evaluate("document.querySelectorAll('.hit').length") >= 1
        assert page.evaluate("document.scripts.length") == 0 and page.evaluate("typeof window.pwned") == "undefined"
        assert not page.dialogs
