"""Chunks: ids that never change, splits that reassemble exactly, redaction first."""

from hypothesis import given, settings
from hypothesis import strategies as st

from fake_secrets import generate_secrets
from funes.chunking import (
    BLOCK_CAP,
    SPLIT_OVERLAP,
    SPLIT_SIZE,
    ChunkReport,
    cap_block,
    chunk_id,
    chunk_session,
    reassemble,
    split_text,
)
from funes.traces.model import Block, Session, Turn


def _session(blocks, session_id="s1"):
    turn = Turn(turn_uuid="t1", parent_uuid=None, seq=0, role="assistant", ts="2026-01-02T03:04:05.000Z",
                blocks=blocks)
    return Session(harness="claude_code", session_id=session_id, source_path="/x.jsonl", cwd="/home/u/p",
                   workdir="-home-u-p", turns=[turn])


def test_chunk_id_matches_the_rust_funes_scheme():
    # sha1("s:t:0:0")[:16], the id the Rust funes gives the same coordinates.
    import hashlib

    assert chunk_id("s", "t", 0, 0) == hashlib.sha1(b"s:t:0:0").hexdigest()[:16]
    assert chunk_id("s", "t", 0, 1) != chunk_id("s", "t", 1, 0)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=6000))
def test_splits_reassemble_exactly(text):
    pieces = split_text(text)
    assert reassemble(pieces) == text
    assert all(len(piece) <= SPLIT_SIZE for _, piece in pieces)
    starts = [start for start, _ in pieces]
    assert starts == sorted(set(starts))


def test_long_prose_splits_at_word_breaks_with_overlap():
    text = " ".join(f"word{i}" for i in range(1500))
    pieces = split_text(text)
    assert len(pieces) > 3
    for (start, piece), (next_start, _) in zip(pieces, pieces[1:]):
        overlap = start + len(piece) - next_start
        assert 0 < overlap <= SPLIT_OVERLAP + 20
        assert piece.endswith(" ")  # broke after a space, not inside a word
        assert text[next_start - 1] == " "  # the overlap starts on a word


def test_a_completed_turn_yields_byte_identical_chunks_every_time():
    blocks = [Block("text", "x" * 1500), Block("tool_use", '{"command":"ls"}', tool_name="Bash")]
    first = list(chunk_session(_session(blocks)))
    second = list(chunk_session(_session(blocks)))
    assert first == second
    assert [(c.block_idx, c.split_idx) for c in first] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert [c.tier for c in first] == [1, 1, 1, 2]
    assert first[-1].tool_name == "Bash"


def test_secrets_are_redacted_on_the_whole_block_before_splitting():
    secret = next(s for s in generate_secrets(seed=7) if s.kind.startswith("github_classic"))
    # Put the secret right where a split would fall.
    text = "a " * (SPLIT_SIZE // 2 - 10) + secret.value + " b" * 800
    chunks = list(chunk_session(_session([Block("tool_result", text)])))
    joined = reassemble((c.char_start, c.text) for c in chunks)
    assert secret.value not in joined
    assert "[REDACTED:" in joined


def test_data_uris_are_elided_before_storage():
    payload = "iVBORw0KGgo" + "A" * 4000
    chunks = list(chunk_session(_session([Block("text", f"see data:image/png;base64,{payload} done")])))
    assert len(chunks) == 1
    assert chunks[0].text == "see data:image/png;base64,[elided] done"


def test_huge_blocks_keep_head_and_tail():
    text = "h" * BLOCK_CAP + "t" * BLOCK_CAP
    capped = cap_block(text)
    assert capped.startswith("h" * 1000) and capped.endswith("t" * 1000)
    assert f"{BLOCK_CAP} characters elided" in capped
    assert len(capped) < BLOCK_CAP + 100


def test_thinking_can_be_left_out_and_reports_count():
    report = ChunkReport()
    blocks = [Block("thinking", "pondering"), Block("text", "answer")]
    chunks = list(chunk_session(_session(blocks), include_thinking=False, report=report))
    assert [c.block_type for c in chunks] == ["text"]
    assert chunks[0].block_idx == 1  # the block index stays that of the source block
    assert report.chunks == 1 and report.blocks == 1
