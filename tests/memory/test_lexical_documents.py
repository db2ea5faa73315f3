"""What BM25 indexes for a chunk: its own text, weighted, after the conversation
before it (a tool result: after the call that produced it).

The documents are derived from the table whenever a segment is built, so a
memory grown a turn at a time must index exactly what a full rebuild indexes."""

import json

import pytest

from funes.chunking import Chunk, chunk_id
from funes.memory.documents import DOCUMENT, DOCUMENT_COLUMNS, call_text, document, documents_from_rows
from funes.memory.tokens import tokenize
from funes.memory.location import location_for
from funes.memory.reader import Memory
from funes.memory.writer import MemoryWriter

IDENTITY = {"funes.embedding.model_id": "test/model", "funes.embedding.revision": "r1", "funes.embedding.dim": "4"}


def _row(session, seq, text, block_idx=0, split_idx=0, block_type="text", tool_name=None):
    return {"id": chunk_id(session, f"t{seq}", block_idx, split_idx), "session_id": session, "seq": seq,
            "block_idx": block_idx, "split_idx": split_idx, "text": text, "block_type": block_type,
            "tool_name": tool_name}


def _own(text):
    return "\n".join([text] * DOCUMENT["own_weight"])


def test_a_document_is_the_context_then_the_chunk_weighted():
    assert DOCUMENT["context_chunks"] == 2 and DOCUMENT["own_weight"] == 3
    assert document("own words", ["first", "second"]) == "first\nsecond\n" + _own("own words")
    assert document("alone") == _own("alone")
    # Only the last context_chunks count; an empty one adds nothing.
    assert document("x", ["a", "b", "c"]) == "b\nc\n" + _own("x")
    assert document("x", ["a", ""]) == "a\n" + _own("x")


def test_a_tool_call_reads_as_its_tool_and_argument_values():
    stored = json.dumps({"command": "mix compile --force", "description": "Force a clean\nrecompile"})
    assert call_text(stored) == "mix compile --force\nForce a clean\nrecompile"
    assert document(stored, ["Stale build artifacts."], block_type="tool_use", tool_name="Bash") == (
        "Stale build artifacts.\n" + _own("Bash mix compile --force\nForce a clean\nrecompile"))
    # A later piece of a split call is not JSON: its escapes are undone alone, so a
    # word after an escaped newline is not glued to an "n".
    assert call_text('nd\\n  defp load(\\"x\\")') == 'nd\n  defp load("x")'
    assert "load" in tokenize([call_text('nd\\n  defp load(\\"x\\")')])[0]


def test_a_tool_result_carries_its_call_not_the_conversation():
    rows = [
        _row("s", 0, "Why does the build stall?", block_type="text"),
        _row("s", 1, '{"command":"mix compile"}', block_type="tool_use", tool_name="Bash"),
        _row("s", 1, '{"file_path":"/a.ex"}', block_idx=1, block_type="tool_use", tool_name="Read"),
        _row("s", 2, "Waiting for lock on the build directory", block_type="tool_result", tool_name="Bash"),
        _row("s", 3, "The lock was held by another build.", block_type="text"),
    ]
    docs = documents_from_rows(rows)
    assert docs[rows[3]["id"]] == "mix compile\n" + _own("Bash Waiting for lock on the build directory")
    # The call is the conversation's context, the tool output is nobody's.
    assert docs[rows[1]["id"]] == "Why does the build stall?\n" + _own("Bash mix compile")
    assert docs[rows[4]["id"]] == "Why does the build stall?\n" + _own("The lock was held by another build.")


def test_identifiers_are_found_whole_and_by_their_parts():
    (tokens,) = tokenize(["resolveWorkspaceRoot failed in lib/spotter/transcript_renderer.ex (E0425)"])
    for token in ("resolveworkspaceroot", "resolv", "workspac", "root", "lib/spotter/transcript_renderer.ex",
                  "transcript_render", "transcript", "render", "e0425"):
        assert token in tokens, token
    # A question in words meets the identifier; the identifier itself matches best.
    assert set(tokenize(["workspace root"])[0]) <= set(tokens)
    assert tokenize(["the and of"]) == [[]]


def test_context_chunks_are_cut_at_a_word_break():
    long = " ".join(["word"] * 500)
    head = document("x", [long]).split("\n")[0]
    assert len(head) <= DOCUMENT["context_chars"] and head.endswith("word")


def test_context_follows_session_order_and_never_crosses_sessions():
    rows = [
        _row("s1", 2, "third"), _row("s1", 0, "first"), _row("s1", 1, "second, block 0"),
        _row("s1", 1, "second, block 1", block_idx=1), _row("s2", 3, "other session"),
    ]
    docs = documents_from_rows(rows)
    assert docs[rows[1]["id"]] == _own("first")
    assert docs[rows[3]["id"]] == "first\nsecond, block 0\n" + _own("second, block 1")
    assert docs[rows[0]["id"]] == "second, block 0\nsecond, block 1\n" + _own("third")
    assert docs[rows[4]["id"]] == _own("other session")
    assert set(documents_from_rows(rows, [rows[0]["id"]])) == {rows[0]["id"]}


def test_context_reaches_back_a_bounded_number_of_turns():
    far = DOCUMENT["context_turns"] + 1
    rows = [_row("s", 0, "long ago"), _row("s", far, "now")]
    assert documents_from_rows(rows)[rows[1]["id"]] == _own("now")
    rows = [_row("s", 0, "recent"), _row("s", far - 1, "now")]
    assert documents_from_rows(rows)[rows[1]["id"]] == "recent\n" + _own("now")


def _chunk(session, seq, text):
    return Chunk(id=chunk_id(session, f"t{seq}", 0, 0), text=text, harness="claude_code", session_id=session,
                 turn_uuid=f"t{seq}", parent_uuid=None, seq=seq, ts=f"2026-01-01T00:00:{seq:02d}.000Z",
                 role="user" if seq % 2 == 0 else "assistant", block_type="text", tool_name=None, block_idx=0,
                 split_idx=0, char_start=0, tier=0, workdir="w", cwd="/w", repo=None, branch=None,
                 source_path="/x.jsonl", parent_session_id=None, is_subagent=False)


CONVERSATION = [
    "Did you finish the watercolour of the lighthouse?",
    "Yes! Here it is, took me three weekends.",
    "It looks wonderful, the colours are so calm.",
    "Thanks. Next I want to try the harbour at night.",
    "Let me know when you start it.",
    "Will do. Going to the pottery class now.",
]


def _all_documents(location):
    """{chunk id: document} over the whole table, as a full rebuild indexes them."""
    memory = Memory.open(location)
    rows = memory.scan(list(DOCUMENT_COLUMNS)).to_pylist()
    return memory, documents_from_rows(rows)


def test_a_memory_grown_turn_by_turn_indexes_what_a_rebuild_indexes(tmp_path):
    grown, whole = location_for(str(tmp_path / "grown")), location_for(str(tmp_path / "whole"))
    chunks = [_chunk("s1", seq, text) for seq, text in enumerate(CONVERSATION)]
    chunks += [_chunk("s2", seq, f"unrelated note {seq} about lighthouse keepers") for seq in range(3)]
    with MemoryWriter.open(grown, IDENTITY, dim=4) as writer:
        for chunk in chunks:  # one turn at a time, as the hook writes them
            writer.add_chunks([chunk])
        grown_segments = len(writer.lexical.segments)
    with MemoryWriter.open(whole, IDENTITY, dim=4) as writer:
        writer.add_chunks(chunks, update_lexical=False)
        writer.sync_lexical()
    assert grown_segments >= 1
    for query in ("watercolour lighthouse", "three weekends", "harbour night", "pottery"):
        got = Memory.open(grown).lexical().search(query, 5)
        want = Memory.open(whole).lexical().search(query, 5)
        assert [c for c, _ in got] == [c for c, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=0.05)


def test_the_turn_that_answers_is_found_by_the_question_before_it(tmp_path):
    location = location_for(str(tmp_path / "m"))
    chunks = [_chunk("s1", seq, text) for seq, text in enumerate(CONVERSATION)]
    with MemoryWriter.open(location, IDENTITY, dim=4) as writer:
        writer.add_chunks(chunks)
    hits = [c for c, _ in Memory.open(location).lexical().search("watercolour lighthouse", 10)]
    # The question itself says it, so it comes first; the reply that carries no
    # word of the query is found through its context, right after.
    assert hits[:2] == [chunks[0].id, chunks[1].id]
    # Context reaches two chunks back, no further.
    assert chunks[3].id not in hits


def test_documents_for_a_few_ids_read_only_their_sessions_recent_turns(tmp_path):
    location = location_for(str(tmp_path / "m"))
    chunks = [_chunk("s1", seq, text) for seq, text in enumerate(CONVERSATION)]
    chunks += [_chunk("s2", seq, f"note {seq}") for seq in range(40)]
    with MemoryWriter.open(location, IDENTITY, dim=4) as writer:
        writer.add_chunks(chunks, update_lexical=False)
    memory, everything = _all_documents(location)
    wanted = [chunks[4].id, chunks[-1].id]
    seen_filters = []

    def scan(columns, where=None):
        seen_filters.append(where)
        return memory.scan(columns, where)

    from funes.memory.reader import lexical_documents

    docs = lexical_documents(scan, wanted + ["0000000000000000"], memory.count())
    assert docs == {i: everything[i] for i in wanted}
    assert all(f is not None for f in seen_filters)  # no full scan for two ids
    assert any(f"seq >= {39 - DOCUMENT['context_turns']}" in f for f in seen_filters)


def _tool_chunk(session, seq, block_type, text, tool="Bash"):
    from dataclasses import replace

    return replace(_chunk(session, seq, text), block_type=block_type, tool_name=tool, role="assistant")


def test_documents_built_from_the_chunks_in_hand_are_those_the_table_gives(tmp_path, monkeypatch):
    """A write builds its new sessions' documents from the chunks it stores and a
    grown session's from the table: either way what the segment indexes is what
    :func:`documents_from_rows` makes of the whole table."""
    from funes.memory import lexical

    indexed: dict[str, str] = {}
    real_add = lexical.LexicalIndex.add

    def add(self, ids, texts, version, still_stored, counted=()):
        indexed.update(zip(ids, texts, strict=True))
        return real_add(self, ids, texts, version, still_stored, counted)

    monkeypatch.setattr(lexical.LexicalIndex, "add", add)
    location = location_for(str(tmp_path / "m"))
    first = [_chunk("s1", seq, text) for seq, text in enumerate(CONVERSATION[:3])]
    first += [_tool_chunk("s2", 0, "tool_use", json.dumps({"command": "pytest -q tests/test_lexical.py"})),
              _tool_chunk("s2", 1, "tool_result", "3 passed in 0.4s"), _chunk("s2", 2, "all green now")]
    grown = [_chunk("s1", seq, text) for seq, text in enumerate(CONVERSATION) if seq >= 3]
    grown += [_tool_chunk("s1", 6, "tool_use", json.dumps({"command": "ls harbour"})),
              _tool_chunk("s1", 7, "tool_result", "night.png")]
    fresh = [_chunk("s3", seq, f"kiln temperature note {seq}") for seq in range(4)]
    with MemoryWriter.open(location, IDENTITY, dim=4) as writer:
        writer.add_chunks(first)
        writer.add_chunks(grown + fresh)  # one write: a grown session and a new one
    _, everything = _all_documents(location)
    assert set(indexed) == set(everything)
    assert indexed == everything


def test_sync_streams_pages_of_whole_sessions(tmp_path, monkeypatch):
    """Rows stored without their segment (a crash, an older funes) are indexed a
    page of sessions at a time, never by reading the whole table's text, and rank
    as a rebuild ranks them."""
    from funes.memory import writer as memory_writer

    monkeypatch.setattr(memory_writer, "LEXICAL_PAGE", 10)
    location, whole = location_for(str(tmp_path / "m")), location_for(str(tmp_path / "whole"))
    chunks = [_chunk(f"s{n}", seq, f"{CONVERSATION[seq % 6]} session {n}") for n in range(8) for seq in range(6)]
    with MemoryWriter.open(location, IDENTITY, dim=4) as writer:
        writer.add_chunks(chunks, update_lexical=False)
        scans = []
        real_scan = writer._scan
        monkeypatch.setattr(writer, "_scan", lambda columns, where=None: scans.append((columns, where))
                            or real_scan(columns, where))
        assert writer.sync_lexical() == len(chunks)
        assert writer.lexical.table_version == writer.version
        assert len(writer.lexical.segments) >= 2 or len(scans) >= 5
    assert all(where is not None for columns, where in scans if "text" in columns)
    with MemoryWriter.open(whole, IDENTITY, dim=4) as writer:
        writer.add_chunks(chunks, update_lexical=False)
        writer.rebuild_lexical()
    for query in ("watercolour lighthouse session 3", "pottery class", "harbour night"):
        got = Memory.open(location).lexical().search(query, 8)
        want = Memory.open(whole).lexical().search(query, 8)
        assert {c for c, _ in got[:3]} == {c for c, _ in want[:3]}


def test_the_counts_a_worker_makes_from_document_pieces_are_the_joined_documents(tmp_path):
    """A pool worker counts a session's documents from their pieces, never joining
    them (`session_term_counts`); what it counts is what tokenizing each joined
    document gives: pieces repeated across documents, context equal to the chunk,
    a split call that is not JSON, repeated and empty lines, empty text."""
    from collections import Counter

    from funes.memory.documents import session_term_counts

    call = json.dumps({"command": "pytest -q tests/test_upload.py", "timeout": 120})
    rows = [_row("s", 0, "Why does upload_retries fail?\n\nWhy does upload_retries fail?"),
            _row("s", 1, "Why does upload_retries fail?"),  # the context equals the chunk
            _row("s", 2, call, block_type="tool_use", tool_name="Bash"),
            _row("s", 3, "1 failed: test_upload_retries\n\n1 failed: test_upload_retries", block_type="tool_result",
                 tool_name="Bash"),
            _row("s", 4, '{"file_path": "lib/a.py", "content": "def f():\\n    retu', block_type="tool_use",
                 tool_name="Write"),
            _row("s", 4, 'rn 1\\n"}', split_idx=1, block_type="tool_use", tool_name="Write"),
            _row("s", 5, "", block_type="tool_result", tool_name="Write"),
            _row("s", 6, "Rätsel gelöst: the retry count was off by one. " * 20)]
    chunks = [type("Chunk", (), row) for row in rows]
    counts = session_term_counts(chunks)
    documents = documents_from_rows(rows)
    assert counts.ids == list(documents)
    for n, chunk in enumerate(counts.ids):
        expected = Counter(tokenize([documents[chunk]])[0])
        entries = counts.doc == n
        found = {counts.tokens[t]: int(c) for t, c in zip(counts.term[entries], counts.count[entries], strict=True)}
        assert found == expected, chunk
        assert int(counts.lengths[n]) == sum(expected.values()), chunk


def test_a_tool_results_call_head_is_what_its_document_carries(tmp_path):
    """What recall's rerank stage reads before a tool result (retrieval/search.py):
    the head of the call that made it, the same the result's BM25 document holds,
    read for the results alone."""
    location = location_for(str(tmp_path / "m"))
    far = DOCUMENT["context_turns"] + 1
    long_call = json.dumps({"command": "pytest -q tests/test_build.py " + "--verbose " * 80})
    chunks = [
        _tool_chunk("s1", 0, "tool_use", json.dumps({"command": "mix compile --force"})),
        _tool_chunk("s1", 1, "tool_result", "Waiting for lock on the build directory"),
        _tool_chunk("s1", 2, "tool_use", json.dumps({"file_path": "/a.ex"}), tool="Read"),
        _tool_chunk("s1", 3, "tool_result", "defmodule A do", tool="Read"),
        _tool_chunk("s1", 4, "tool_use", long_call),
        _tool_chunk("s1", 5, "tool_result", "3 passed"),
        _tool_chunk("s2", 0, "tool_use", json.dumps({"command": "make"})),
        _tool_chunk("s2", far, "tool_result", "make: nothing to be done"),  # its call is out of reach
        _chunk("s2", far + 1, "the build is clean"),
    ]
    with MemoryWriter.open(location, IDENTITY, dim=4) as writer:
        writer.add_chunks(chunks)
    memory, everything = _all_documents(location)
    rows = memory.rows([c.id for c in chunks]).values()
    heads = memory.call_heads(rows)
    assert set(heads) == {chunks[1].id, chunks[3].id, chunks[5].id}
    assert heads[chunks[1].id] == "mix compile --force"
    assert heads[chunks[3].id] == "/a.ex"  # the call of its own tool, not the nearest call
    assert len(heads[chunks[5].id]) <= DOCUMENT["call_chars"] and heads[chunks[5].id].startswith("pytest -q")
    for chunk, head in heads.items():
        assert everything[chunk].startswith(head + "\n")
    assert memory.call_heads([r for r in rows if r["block_type"] != "tool_result"]) == {}


def test_each_tool_call_is_shown_with_its_own_result_parallel_calls_too(tmp_path):
    """What a tool call's hit shows after it (retrieval/search.py): the result that
    call produced.  Calls made together are answered in order, so two parallel
    reads each get their own file; a call left unanswered gets none, and neither
    does a later piece of a long call stand for anything but its call."""
    from dataclasses import replace

    location = location_for(str(tmp_path / "m"))
    far = DOCUMENT["context_turns"] + 1
    read = lambda seq, block_type, text: _tool_chunk("s1", seq, block_type, text, tool="Read")  # noqa: E731
    long_call = _tool_chunk("s1", 6, "tool_use", json.dumps({"command": "pytest -q " + "--verbose " * 80}))
    chunks = [
        read(0, "tool_use", json.dumps({"file_path": "/a.py"})),
        read(1, "tool_use", json.dumps({"file_path": "/b.py"})),
        read(2, "tool_result", "contents of a"),
        read(3, "tool_result", "contents of b"),
        _tool_chunk("s1", 4, "tool_use", json.dumps({"command": "make"})),  # interrupted: no result
        _chunk("s1", 5, "never mind, run the tests"),
        long_call,
        replace(long_call, id=chunk_id("s1", "t6", 0, 1), split_idx=1, char_start=600, text="--verbose " * 20),
        _tool_chunk("s1", 7, "tool_result", "3 passed"),
        _tool_chunk("s2", 0, "tool_use", json.dumps({"command": "make"})),
        _tool_chunk("s2", far, "tool_result", "make: nothing to be done"),  # out of reach
    ]
    with MemoryWriter.open(location, IDENTITY, dim=4) as writer:
        writer.add_chunks(chunks)
    memory = Memory.open(location)
    rows = memory.rows([c.id for c in chunks]).values()
    results = {call: row["text"] for call, row in memory.call_results(rows).items()}
    assert results == {chunks[0].id: "contents of a", chunks[1].id: "contents of b",
                       chunks[6].id: "3 passed", chunks[7].id: "3 passed"}
    assert memory.call_results([r for r in rows if r["block_type"] != "tool_use"]) == {}
