"""Reading a memory the way agents work: turn ranges (`get SESSION --from N`), the
`sessions` listing and the literal `scan`, through the CLI and a real MCP client."""

import json
import os
import subprocess
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from memory_helpers import LONG_SESSION


def funes(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "funes.cli", *args], capture_output=True, text=True, timeout=300)


def ok(*args: str) -> str:
    result = funes(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def rows(*columns: str) -> list[dict]:
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    return Memory.open(local_memory()).scan(columns).to_pylist()


# ---------------------------------------------------------------- get ranges
def test_a_session_alone_reads_its_first_twenty_turns_and_says_where_to_continue(memory_home):
    out = ok("get", LONG_SESSION[:8])
    headers = [line for line in out.splitlines() if line.startswith("[")]
    seqs = [int(line.split(" seq")[1].split()[0]) for line in headers]
    total = max(r["seq"] for r in rows("session_id", "seq") if r["session_id"] == LONG_SESSION) + 1
    assert total > 20, "the fixture session is long enough to need a second read"
    assert seqs == sorted(seqs) and seqs[0] == 0 and seqs[-1] <= 19
    assert "(requested)" not in out
    last_line = out.splitlines()[-1]
    assert last_line == f"continue with: funes get {LONG_SESSION} --from {seqs[-1] + 1}"
    # Following it reads on from there; the last range names no continuation.
    following = ok("get", LONG_SESSION, "--from", str(seqs[-1] + 1), "--to", str(total - 1))
    more = [int(line.split(" seq")[1].split()[0]) for line in following.splitlines() if line.startswith("[")]
    assert more[0] == seqs[-1] + 1
    if more[-1] == total - 1:
        assert "continue with" not in following


def test_a_range_is_cut_near_its_character_cap_and_continues_where_it_stopped(memory_home):
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory
    from funes.retrieval.get import format_window, turn_range

    memory = Memory.open(local_memory())
    whole = turn_range(memory, LONG_SESSION, 0, 200, max_chars=10**9)
    cap = sum(len(b.text) for b in whole.turns[0].blocks) + sum(len(b.text) for b in whole.turns[1].blocks)
    cut = turn_range(memory, LONG_SESSION, 0, 200, max_chars=cap)
    assert [t.seq for t in cut.turns] == [t.seq for t in whole.turns[:2]]
    assert cut.next_seq == whole.turns[2].seq
    assert format_window(cut).endswith(f"continue with: funes get {LONG_SESSION} --from {whole.turns[2].seq}")
    # One turn larger than the cap is still read whole.
    alone = turn_range(memory, LONG_SESSION, 0, 200, max_chars=1)
    assert len(alone.turns) == 1 and alone.turns[0].blocks == whole.turns[0].blocks


def test_range_mistakes_are_one_line_usage_errors(memory_home):
    turn = next(r["turn_uuid"] for r in rows("session_id", "turn_uuid") if r["session_id"] == LONG_SESSION)
    both = funes("get", LONG_SESSION, turn, "--from", "2")
    assert both.returncode == 2 and both.stderr.count("\n") == 1 and "--from/--to" in both.stderr
    backwards = funes("get", LONG_SESSION, "--from", "5", "--to", "2")
    assert backwards.returncode == 2 and "--to must be an integer from 5" in backwards.stderr
    past = funes("get", LONG_SESSION, "--from", "100000")
    assert past.returncode == 1 and "has no turn from 100000" in past.stderr and "Traceback" not in past.stderr
    # The window form still works as before.
    assert "(requested)" in ok("get", LONG_SESSION, turn, "--window", "1")


# ---------------------------------------------------------------- sessions
def test_sessions_lists_every_session_oldest_first_with_where_and_when(memory_home):
    listed = json.loads(ok("sessions", "--json"))
    stored = {}
    for row in rows("session_id", "seq", "ts", "harness"):
        entry = stored.setdefault(row["session_id"], {"seqs": set(), "ts": [], "harness": row["harness"]})
        entry["seqs"].add(row["seq"])
        if row["ts"]:
            entry["ts"].append(row["ts"])
    assert {s["session_id"] for s in listed} == set(stored)
    for s in listed:
        mine = stored[s["session_id"]]
        assert s["turns"] == len(mine["seqs"]) and s["harness"] == mine["harness"]
        assert (s["first_ts"], s["last_ts"]) == ((min(mine["ts"]), max(mine["ts"])) if mine["ts"] else ("", ""))
        assert {"workdir", "repo", "branch", "chunks", "cwd"} <= set(s)
    dated = [s["first_ts"] for s in listed if s["first_ts"]]
    assert dated == sorted(dated)
    text = ok("sessions").splitlines()
    assert text[-1] == f"{len(listed)} session(s)"
    assert all(f"session={s['session_id']} " in line for s, line in zip(listed, text))
    only_codex = json.loads(ok("sessions", "--harness", "codex", "--json"))
    assert only_codex and {s["harness"] for s in only_codex} == {"codex"}
    assert funes("sessions", "--harness", "nope").returncode == 2


# ---------------------------------------------------------------- scan
def _split_block():
    """A block stored as several chunks, and a needle that neither of its first two
    chunks holds whole: from before the second's start to past the first's end."""
    from funes.chunking import reassemble

    pieces: dict = {}
    for row in rows("session_id", "turn_uuid", "block_idx", "split_idx", "char_start", "text"):
        pieces.setdefault((row["session_id"], row["turn_uuid"], row["block_idx"]), []).append(row)
    key, splits = next((k, v) for k, v in pieces.items() if len(v) > 1)
    splits.sort(key=lambda r: r["split_idx"])
    whole = reassemble((r["char_start"], r["text"]) for r in splits)
    second_start, first_end = splits[1]["char_start"], len(splits[0]["text"])
    needle = whole[second_start - 10:first_end + 10]
    assert all(needle not in r["text"] for r in splits), "the needle spans the split"
    return key, needle


def test_scan_finds_exact_text_across_a_split_once_and_zero_means_absent(memory_home):
    (session_id, turn_uuid, _), needle = _split_block()
    found = json.loads(ok("scan", needle, "--json"))
    (total,) = found["totals"]
    assert total["blocks"] >= 1
    mine = [m for m in found["matches"] if (m["session_id"], m["turn_uuid"]) == (session_id, turn_uuid)]
    assert len(mine) == 1 and needle in mine[0]["excerpt"]
    absent = ok("scan", "zq-never-written-anywhere-7731")
    assert "total match=zq-never-written-anywhere-7731: 0 block(s), 0 occurrence(s), 0 session(s)" in absent
    assert absent.splitlines()[-1].startswith("scanned ")


def stored_blocks() -> list[str]:
    """Every block's whole text, read back from its chunks."""
    from funes.chunking import reassemble

    pieces: dict = {}
    for row in rows("session_id", "turn_uuid", "block_idx", "split_idx", "char_start", "text"):
        pieces.setdefault((row["session_id"], row["turn_uuid"], row["block_idx"]), []).append(row)
    return [reassemble((r["char_start"], r["text"]) for r in sorted(v, key=lambda r: r["split_idx"]))
            for v in pieces.values()]


def test_scan_is_literal_counts_every_block_and_caps_the_listing(memory_home):
    blocks = stored_blocks()
    found = json.loads(ok("scan", "the", "--limit", "3", "--json"))
    (total,) = found["totals"]
    assert total["blocks"] == sum(1 for b in blocks if "the" in b) > 3
    assert total["occurrences"] == sum(b.count("the") for b in blocks)
    assert len(found["matches"]) == 3 and found["truncated"] and found["blocks_scanned"] == len(blocks)
    # A pattern's metacharacters are characters: "e.t" is an e, a dot and a t.
    assert json.loads(ok("scan", "e.t", "--json"))["totals"][0]["blocks"] == sum(1 for b in blocks if "e.t" in b)
    upper = json.loads(ok("scan", "THE", "--json"))["totals"][0]["blocks"]
    folded = json.loads(ok("scan", "THE", "--ignore-case", "--json"))["totals"][0]["blocks"]
    assert upper == sum(1 for b in blocks if "THE" in b)
    assert folded == sum(1 for b in blocks if "the" in b.lower()) > upper
    text = ok("scan", "the", "--limit", "2")
    assert f"listed the first 2 of {total['blocks']} matching block(s)" in text.splitlines()[-1]
    assert sum(1 for line in text.splitlines() if line.startswith("  → get ")) == 2
    assert all(line.startswith(("[", "  → get ", ">", "---", "total ", "scanned ")) for line in text.splitlines())
    assert funes("scan").returncode == 2 and funes("scan", "").returncode == 2


# ---------------------------------------------------------------- MCP
def _server():
    return StdioServerParameters(command=sys.executable, args=["-m", "funes.cli", "mcp"], env=dict(os.environ))


async def _calls():
    async with stdio_client(_server()) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name for tool in (await session.list_tools()).tools}
            ranged = await session.call_tool("get", {"session_id": LONG_SESSION[:8], "from_seq": 2, "to_seq": 4})
            listed = await session.call_tool("sessions", {"harness": "codex"})
            scanned = await session.call_tool("scan", {"needles": ["zq-never-written-anywhere-7731"]})
            bad = await session.call_tool("scan", {"needles": [""]})
            return tools, ranged, listed, scanned, bad


def _text(result):
    return "\n".join(part.text for part in result.content if part.type == "text")


def test_the_mcp_server_reads_ranges_lists_sessions_and_scans(memory_home):
    tools, ranged, listed, scanned, bad = anyio.run(_calls)
    assert {"recall", "get", "status", "sessions", "scan"} <= tools
    seqs = [int(line.split(" seq")[1].split()[0]) for line in _text(ranged).splitlines() if line.startswith("[")]
    assert not ranged.is_error and seqs and min(seqs) >= 2 and max(seqs) <= 4
    assert _text(ranged).splitlines()[-1] == f"continue with: funes get {LONG_SESSION} --from 5"
    assert not listed.is_error and all(" codex " in line for line in _text(listed).splitlines()[:-1])
    assert not scanned.is_error and "0 block(s)" in _text(scanned)
    assert bad.is_error and "empty NEEDLE" in _text(bad)
