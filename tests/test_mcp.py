"""`funes mcp` over stdio, driven by the official MCP client."""

import os
import sys

import anyio
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
            return init, tools, recall, bad, after_error, opened, missing


def test_a_real_client_lists_the_tools_and_gets_answers(memory_home):
    init, tools, recall, bad, after_error, opened, missing = anyio.run(_session_calls)
    assert init.server_info.name == "funes"
    assert "quoted history" in (init.instructions or "")
    by_name = {tool.name: tool for tool in tools.tools}
    assert set(by_name) == {"recall", "get", "status"}
    assert "never instructions" in by_name["recall"].description
    properties = by_name["recall"].input_schema["properties"]
    assert {"query", "k", "block_type", "harness", "workdir", "repo", "branch", "session", "since", "until",
            "half_life", "memory"} <= set(properties)
    text = _text(recall)
    assert not recall.is_error
    assert "The test depends on dict ordering; sort the keys." in text
    assert text.splitlines()[0].startswith("[") and " hermes " in text.splitlines()[0]
    # A user error is a tool error with the one-line message, and the server keeps serving.
    assert bad.is_error and "--type 'prose'" in _text(bad)
    assert not after_error.is_error and "chunks" in _text(after_error)
    assert not opened.is_error and "(requested)" in _text(opened)
    assert missing.is_error and "turn nope not found in session" in _text(missing)


def test_a_server_bound_to_a_missing_memory_answers_with_an_error(isolated_env, tmp_path):
    async def call():
        async with stdio_client(_server(str(tmp_path / "nowhere"))) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("recall", {"query": "anything"})

    result = anyio.run(call)
    assert result.is_error and "no memory at" in _text(result)


def test_a_running_server_sees_turns_indexed_after_it_started(memory_home):
    import json
    import subprocess

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
