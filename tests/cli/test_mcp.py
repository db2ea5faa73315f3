"""`funes mcp` over stdio, driven by the official MCP client."""

import os
import re
import subprocess
import sys

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client


def _server(memory=None):
    args = ["-m", "funes.cli", "mcp"] + ([memory] if memory else [])
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))


def _text(result):
    return "\n".join(part.text for part in result.content if part.type == "text")


async def _session_calls(memory=None):
    async with stdio_client(_server(memory)) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            recall = await session.call_tool("recall", {"query": "why did the test depend on dictionary order", "k": 2})
            bad = await session.call_tool("recall", {"query": "x", "block_type": "prose"})
            after_error = await session.call_tool("status", {})
            first = _text(recall).splitlines()
            session_id, turn = first[1].split("→ get ")[1].split()[:2]
            opened = await session.call_tool("get", {"session_id": session_id, "turn_uuid": turn, "window": 1})
            missing = await session.call_tool("get", {"session_id": session_id, "turn_uuid": "nope"})
            # The 8 characters of a session its first hit prints name it here too.
            earth = await session.call_tool("recall", {"query": "digital twin of Earth", "session": "claude_s",
                                                       "budget": 200})
            prefixed = await session.call_tool("get", {"session_id": "claude_s", "window": 0,
                                                       "turn_uuid": "d753fba5-0c26-437f-82df-ba98aa773943"})
            return init, tools, recall, bad, after_error, opened, (missing, earth, prefixed)


def test_a_real_client_lists_the_tools_and_gets_answers(memory_home):
    init, tools, recall, bad, after_error, opened, (missing, earth, prefixed) = anyio.run(_session_calls)
    assert init.server_info.name == "funes"
    assert "quoted history" in (init.instructions or "")
    by_name = {tool.name: tool for tool in tools.tools}
    assert set(by_name) == {"recall", "get", "status", "sessions", "scan", "history"}
    assert "never instructions" in by_name["recall"].description
    properties = by_name["recall"].input_schema["properties"]
    assert {"query", "k", "block_type", "harness", "workdir", "repo", "branch", "session", "since", "until",
            "half_life", "memory", "budget"} <= set(properties)
    assert properties["budget"]["default"] == 1000 and properties["budget"]["maximum"] == 25_000
    text = _text(recall)
    assert not recall.is_error
    assert "The test depends on dict ordering; sort the keys." in text
    assert text.splitlines()[0].startswith("[") and " hermes " in text.splitlines()[0]
    # A user error is a tool error with the one-line message, and the server keeps serving.
    assert bad.is_error and "--type 'prose'" in _text(bad)
    assert not after_error.is_error and "chunks" in _text(after_error)
    assert not opened.is_error and "(requested)" in _text(opened)
    assert missing.is_error and "turn nope not found in session" in _text(missing)
    assert len(_text(earth)) <= 200 * 4  # the budget, in tokens of 4 characters
    lines = _text(earth).splitlines()
    headers = [line for line in lines if line.startswith("[")]
    # One session: its first hit names it, every later one leaves it to its → get line.
    assert "/claude_s " in headers[0] and all(re.fullmatch(r"\[\S*\] \S+  score=\d\.\d{3}", h) for h in headers[1:])
    assert all(line.startswith("  → get claude_session ") for line in lines if "→ get" in line)
    assert not prefixed.is_error and "turn=d753fba5-0c26-437f-82df-ba98aa773943  (requested)" in _text(prefixed)


def test_a_server_bound_to_a_missing_memory_answers_with_an_error(isolated_env, tmp_path):
    async def call():
        async with stdio_client(_server(str(tmp_path / "nowhere"))) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("recall", {"query": "anything"})

    result = anyio.run(call)
    assert result.is_error and "no memory at" in _text(result)


@pytest.mark.slow
def test_a_running_server_sees_turns_indexed_after_it_started(memory_home):
    import json

    transcript = next((memory_home / ".claude" / "projects").rglob("claude_session.jsonl"))

    async def calls():
        async with stdio_client(_server()) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                before = await session.call_tool("recall", {"query": "gravitational lensing shader", "k": 3})
                with transcript.open("a") as handle:
                    handle.write(json.dumps({
                        "type": "user", "uuid": "late-turn", "sessionId": "claude_session",
                        "timestamp": "2026-06-13T00:00:00Z",
                        "message": {"role": "user", "content": "add a gravitational lensing shader near the moon"},
                    }) + "\n")
                indexed = subprocess.run([sys.executable, "-m", "funes.cli", "index", str(transcript)],
                                         capture_output=True, text=True, env=dict(os.environ))
                assert indexed.returncode == 0, indexed.stderr
                after = await session.call_tool("recall", {"query": "gravitational lensing shader", "k": 3})
                return before, after

    before, after = anyio.run(calls)
    assert "gravitational lensing shader near the moon" not in _text(before)
    assert "gravitational lensing shader near the moon" in _text(after).splitlines()[2]


# --------------------------------------------------------------------------- bytes a client may send


def _raw_server():
    return subprocess.Popen([sys.executable, "-m", "funes.cli", "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ))


def _answer(server, line: bytes, timeout: float = 60) -> dict:
    """Write one line to the server, read one line back (failing after ``timeout``)."""
    import json
    import select

    server.stdin.write(line + b"\n")
    server.stdin.flush()
    ready, _, _ = select.select([server.stdout], [], [], timeout)
    assert ready, f"no answer within {timeout} s to {line[:80]!r}"
    return json.loads(server.stdout.readline())


def test_every_line_gets_a_json_rpc_answer_and_the_server_keeps_serving(memory_home):
    import json

    server = _raw_server()
    try:
        init = _answer(server, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}).encode())
        assert init["id"] == 1 and init["result"]["serverInfo"]["name"] == "funes"
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        cases = [
            (b"{not json", -32700, None),
            (b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"note":"\\ud800"}}', -32700, None),  # lone surrogate
            (b'{"jsonrpc":"2.0","id":3,"method":"tools/list"', -32700, None),  # cut short
            (b'[{"jsonrpc":"2.0","id":4,"method":"ping"}]', -32600, None),  # a batch
            (b"[]", -32600, None),
            (b'"just a string"', -32600, None),
            (b'{"jsonrpc":"2.0","id":5,"method":7}', -32600, 5),  # the id is readable, so it is echoed
        ]
        for line, code, request_id in cases:
            reply = _answer(server, line)
            assert reply["jsonrpc"] == "2.0" and reply["error"]["code"] == code, (line, reply)
            assert reply["id"] == request_id and reply["error"]["message"], (line, reply)
            assert _answer(server, b'{"jsonrpc":"2.0","id":99,"method":"ping"}') == {"jsonrpc": "2.0", "id": 99,
                                                                                    "result": {}}
        # Bytes that are not UTF-8 inside a string arrive replaced (U+FFFD), not refused.
        listed = _answer(server, b'{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"x":"\xff"}}}')
        assert listed["id"] == 6 and {tool["name"] for tool in listed["result"]["tools"]} == {"recall", "get", "status", "sessions", "scan", "history"}
    finally:
        server.stdin.close()
        server.wait(timeout=60)


def test_oversized_or_out_of_range_arguments_are_refused_with_the_reason(memory_home):
    async def calls():
        async with stdio_client(_server()) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                huge = await session.call_tool("recall", {"query": "why" * 3_333_333 + "?"})  # 10 MB
                answers = [await session.call_tool("recall", {"query": "flaky test", **bad})
                           for bad in ({"k": 1e30}, {"k": 0}, {"k": "many"}, {"neighbors": -1},
                                       {"half_life": -3}, {"candidates": 10**9}, {"budget": 10**9})]
                window = await session.call_tool("get", {"session_id": "s_main", "turn_uuid": "3", "window": 10**12})
                fine = await session.call_tool("recall", {"query": "flaky test", "k": 2.0, "harness": ""})
                blanks = [await session.call_tool(tool, {**arguments, "harness": "", "since": "", "workdir": ""})
                          for tool, arguments in (("sessions", {}), ("scan", {"needles": ["flaky"]}),
                                                  ("history", {"path": "src"}))]
                return huge, answers, window, fine, blanks

    huge, answers, window, fine, blanks = anyio.run(calls)
    assert huge.is_error and "the query is 10,000,000 characters long; the limit is 8,000" in _text(huge)
    expected = ["k must be an integer from 1 to 1,000, got 1e+30", "k must be an integer from 1 to 1,000, got 0",
                "k must be an integer from 1 to 1,000, got 'many'", "neighbors must be an integer from 0 to 50, got -1",
                "half_life must be a positive number of days, got -3",
                "candidates must be an integer from 1 to 1,000, got 1000000000",
                "budget must be an integer from 200 to 25,000, got 1000000000"]
    for answer, message in zip(answers, expected, strict=True):
        assert answer.is_error and _text(answer) == f"Error executing tool recall: {message}"
    assert window.is_error and "window must be an integer from 0 to 1,000" in _text(window)
    assert not fine.is_error and _text(fine).count("\n---") == 2  # 2.0 is 2; "" is no filter for an agent
    assert [answer.is_error for answer in blanks] == [False, False, False], [_text(a) for a in blanks]
