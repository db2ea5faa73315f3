"""What a recall hit shows: its block around the chunk that matched, a tool call
as its arguments (retrieval/passage.py), on its own and through a real memory."""

import json

import pytest
from memory_helpers import LONG_SESSION

from funes.chunking import split_text
from funes.memory.documents import call_text
from funes.retrieval.passage import PASSAGE_CHARS, passage, readable_call


def test_a_short_block_is_shown_whole():
    assert passage([(0, "Default port is 1100.")], (0, "Default port is 1100."), "text") == "Default port is 1100."


def test_a_long_block_shows_the_window_around_the_chunk_that_matched():
    block = "".join(f"line {n:04d} of the log\n" for n in range(400))
    pieces = split_text(block)
    middle = pieces[len(pieces) // 2]
    shown = passage(pieces, middle, "tool_result")
    assert len(shown) == PASSAGE_CHARS
    assert middle[1] in shown and shown in block
    before, after = shown.split(middle[1])
    assert abs(len(before) - len(after)) <= 1  # centred where the block allows
    first, last = passage(pieces, pieces[0], "tool_result"), passage(pieces, pieces[-1], "tool_result")
    assert block.startswith(first) and block.endswith(last) and len(first) == len(last) == PASSAGE_CHARS


def test_a_tool_call_is_shown_as_its_arguments():
    call = json.dumps({"command": 'grep -n "port" config/dev.exs\nmix test', "timeout": 30000},
                      separators=(",", ":"))
    assert passage([(0, call)], (0, call), "tool_use") == 'command: grep -n "port" config/dev.exs\nmix test\ntimeout: 30000'
    assert readable_call("not json {") == "not json {"
    assert readable_call("[1, 2]") == "[1, 2]"


def test_a_long_tool_call_shows_its_decoded_arguments_around_the_chunk():
    content = "".join(f"defmodule M{n} do\n  def f, do: \"value {n}\"\nend\n" for n in range(120))
    call = json.dumps({"file_path": "/src/m.ex", "content": content}, separators=(",", ":"))
    pieces = split_text(call)
    chunk = pieces[len(pieces) // 2]
    shown = passage(pieces, chunk, "tool_use")
    assert len(shown) == PASSAGE_CHARS and shown in readable_call(call)
    assert '\\"' not in shown and '\\n' not in shown  # what the agent wrote, not its JSON escapes
    assert max(call_text(chunk[1]).split("\n")[1:-1], key=len) in shown  # the window holds the chunk


@pytest.fixture
def recaller(memory_home):
    from funes.retrieval.access import open_memory
    from funes.retrieval.search import Recaller

    return Recaller.open(open_memory(None))


def test_recall_shows_the_block_around_a_split_chunk(recaller):
    from funes.chunking import reassemble
    from funes.retrieval.filters import Filters

    memory = recaller.memory
    rows = memory.session_rows(LONG_SESSION, columns=("id", "seq", "turn_uuid", "block_idx", "split_idx", "char_start",
                                                      "text", "block_type"))
    target = next(r for r in rows if r["split_idx"] == 1)
    block_rows = [r for r in rows if (r["turn_uuid"], r["block_idx"]) == (target["turn_uuid"], target["block_idx"])]
    block = reassemble([(r["char_start"], r["text"]) for r in block_rows])
    hits = recaller.recall(" ".join(target["text"].split()[:40]), k=10, neighbors=0,
                           filters=Filters.parse(session=LONG_SESSION)).hits
    hit = next(h for h in hits if (h.turn_uuid, h.block_idx) == (target["turn_uuid"], target["block_idx"]))
    assert hit.text in block and len(hit.text) == min(len(block), PASSAGE_CHARS)
    own = next(r["text"] for r in block_rows if r["id"] == hit.id)
    assert own in hit.text and len(hit.text) > len(own)  # the chunk, and the block beyond it


def test_recall_shows_a_tool_call_as_it_was_run(recaller):
    memory = recaller.memory
    calls = memory.scan(["id", "text", "session_id"], "block_type = 'tool_use' AND split_idx = 0").to_pylist()
    call = next(c for c in calls if '"command":' in c["text"] and len(c["text"]) < PASSAGE_CHARS)
    command = json.loads(call["text"])["command"]
    hits = recaller.recall(command, k=10, neighbors=0).hits
    hit = next(h for h in hits if h.id == call["id"])
    assert hit.text.startswith(f"command: {command}") and not hit.text.startswith("{")
