"""`funes browse`: the read-only web page over a memory.

The default suite drives the app in-process (Starlette's TestClient) over the memory
built from the fixture transcripts: the token, Host, Origin and method refusals, each
page's answer, and escaping of hostile transcript text.  The ``slow`` tests start
the real server and Debian's chromium, headless, and use the pages as a person does
(tests/helpers/cdp.py)."""

from __future__ import annotations

import socket

import pytest
from agent_helpers import funes
from memory_helpers import LONG_SESSION

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
