"""What a recall hit shows: its block around the chunk that matched, a tool call
as its arguments (retrieval/passage.py), on its own and through a real memory."""

import json
import random

import pytest
from memory_helpers import LONG_SESSION

from funes.chunking import split_text
from funes.memory.documents import call_text
from funes.retrieval.passage import PASSAGE_CHARS, passage, passage_pieces, readable_call


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


def _block_reader(blocks, asks):
    """A reader of splits by block and index, as Memory.block_splits answers, that
    records what each call asked for."""
    def read(wanted):
        asks.append({block: list(splits) for block, splits in wanted.items()})
        return {block: {i: blocks[block][i] for i in splits if i in blocks[block]} for block, splits in wanted.items()}
    return read


@pytest.mark.parametrize("block_type, text", [
    ("tool_result", "".join(f"line {n:04d} of the log\n" for n in range(400))),  # cuts ~440 apart
    ("text", "".join(f"{'word ' * 62}{n}\n" for n in range(40))),  # one break a window: cuts ~160 apart
    ("tool_result", "x" * 9_000),  # no break at all: hard cuts
    ("text", "a short paragraph, then " + "a long one. " * 60),  # 1.2 windows: shown whole
    ("tool_use", json.dumps({"file_path": "/src/m.ex", "content": "".join(
        f"defmodule M{n} do\n  def f, do: \"value {n}\"\nend\n" for n in range(120))}, separators=(",", ":"))),
])
def test_the_splits_read_around_a_chunk_show_what_its_whole_block_shows(block_type, text):
    pieces = split_text(text)
    block = ("s", "t", 0)
    store = {block: dict(enumerate(pieces))}
    for index, (start, piece) in enumerate(pieces):
        row = {"session_id": "s", "turn_uuid": "t", "block_idx": 0, "split_idx": index, "char_start": start,
               "text": piece, "block_type": block_type}
        run = passage_pieces(_block_reader(store, []), [row])[block]
        assert passage(run, (start, piece), block_type) == passage(pieces, (start, piece), block_type)


@pytest.mark.parametrize("seed", range(6))
def test_splits_of_uneven_lengths_read_around_a_chunk_show_what_the_whole_block_shows(seed):
    """Splits break where a line or a space falls, so one a few hundred characters long
    can sit beside a full one: the passage may reach past the splits first read."""
    rng = random.Random(seed)
    text = "".join(rng.choice("abcdefgh \n") for _ in range(6_000))
    pieces, start = [], 0
    while True:
        end = min(len(text), start + rng.choice((310, 320, 600, 600, 600)))
        pieces.append((start, text[start:end]))
        if end == len(text):
            break
        start = end - 150
    block = ("s", "t", 0)
    store = {block: dict(enumerate(pieces))}
    for index, (start, piece) in enumerate(pieces):
        row = {"session_id": "s", "turn_uuid": "t", "block_idx": 0, "split_idx": index, "char_start": start,
               "text": piece, "block_type": "text"}
        run = passage_pieces(_block_reader(store, []), [row])[block]
        assert passage(run, (start, piece), "text") == passage(pieces, (start, piece), "text")


def test_a_block_missing_a_split_shows_what_the_memory_holds():
    text = "".join(f"line {n:04d} of the log\n" for n in range(400))
    pieces = split_text(text)
    block = ("s", "t", 0)
    damaged = {block: {i: piece for i, piece in enumerate(pieces) if i != 5}}
    start, piece = pieces[6]
    row = {"session_id": "s", "turn_uuid": "t", "block_idx": 0, "split_idx": 6, "char_start": start,
           "text": piece, "block_type": "text"}
    run = passage_pieces(_block_reader(damaged, []), [row])[block]
    shown = passage(run, (start, piece), "text")
    assert piece in shown and shown in text


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


def test_a_long_block_weight_counts_the_splits_of_the_hits_block(recaller):
    """A ranking that weighs a long block by its chunks (not the default) divides its
    hit's score by the block's split count to that power."""
    import dataclasses

    from funes.retrieval.filters import Filters
    from funes.retrieval.ranking import DEFAULT
    from funes.retrieval.search import Recaller

    rows = recaller.memory.session_rows(LONG_SESSION, columns=("id", "seq", "turn_uuid", "block_idx", "split_idx",
                                                                "text"))
    target = next(r for r in rows if r["split_idx"] == 1)
    splits = sum((r["turn_uuid"], r["block_idx"]) == (target["turn_uuid"], target["block_idx"]) for r in rows)
    query = " ".join(target["text"].split()[:40])
    scores = []
    for exponent in (0.0, 0.1):
        ranking = dataclasses.replace(DEFAULT, split_exponent=exponent, session_weight=0.0)
        hits = Recaller(recaller.memory, embedder=recaller.embedder, ranking=ranking).recall(
            query, k=10, neighbors=0, filters=Filters.parse(session=LONG_SESSION)).hits
        scores.append(next(h.scores["fused"] for h in hits
                           if (h.turn_uuid, h.block_idx) == (target["turn_uuid"], target["block_idx"])))
    assert splits > 1 and scores[1] == pytest.approx(scores[0] * splits ** -0.1, rel=1e-4)

