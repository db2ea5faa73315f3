"""A damaged memory, through the CLI on a real Lance table: readers serve what can be read
and say how much cannot, writers refuse in one line with exit 4, and `funes repair`
restores service, re-indexes what the transcripts still hold and names what is lost."""

import json
import os
from pathlib import Path

import pytest

from hub_helpers import funes, write_claude_session

SESSION = "5e55d000-0000-4000-8000-00000000da7a"
DAMAGED = "funes: memory at local is damaged: "
REPAIR = ": run `funes repair` to restore it\n"


def table(home: Path) -> Path:
    return home / ".funes" / "memory" / "chunks.lance"


def stored_ids(home: Path) -> set[str]:
    import lance

    return set(lance.dataset(str(table(home))).to_table(columns=["id"]).column("id").to_pylist())


def status() -> dict:
    result = funes("status", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def fragments_holding(home: Path, session_id: str | None = None) -> list:
    """The live fragments of the table (holding ``session_id``'s rows), most rows first."""
    import lance

    found = []
    for fragment in lance.dataset(str(table(home))).get_fragments():
        sessions = set(fragment.to_table(columns=["session_id"]).column("session_id").to_pylist())
        if session_id is None or session_id in sessions:
            found.append(fragment)
    return sorted(found, key=lambda f: -f.count_rows())


def truncate_data_file(home: Path, fragment) -> None:
    """Truncate the fragment's first data file, the one its rows were written in (a
    merge that filled in vectors may have added a file holding only that column)."""
    data_file = fragment.data_files()[0]
    os.truncate(table(home) / "data" / data_file.path, 1000)


def newest_manifests(home: Path, count: int) -> list[Path]:
    return sorted((table(home) / "_versions").glob("*.manifest"), key=lambda p: p.stat().st_mtime)[-count:]


def add_session(home: Path, turns: int = 3) -> Path:
    """Index one more session through the CLI: its rows, then (a second version) their vectors."""
    import lance

    transcript = write_claude_session(home / ".claude" / "projects" / "-work-repairs" / f"{SESSION}.jsonl", SESSION,
                                      [f"turn {n}: the nightly backup job rotates keys {n} times" for n in range(turns)])
    version = lance.dataset(str(table(home))).version
    result = funes("index", str(transcript))
    assert result.returncode == 0, result.stderr
    assert lance.dataset(str(table(home))).version == version + 2, "expected one version of rows, one of vectors"
    return transcript


def repair() -> list[str]:
    result = funes("repair")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr.splitlines()


@pytest.mark.slow
def test_a_truncated_data_file_is_served_around_refused_by_writers_and_repaired(memory_home):
    add_session(memory_home)  # a fragment of its own: the one left readable beside the damaged one
    before = stored_ids(memory_home)
    fragment = fragments_holding(memory_home)[0]
    unreadable = set(fragment.to_table(columns=["id"]).column("id").to_pylist())
    readable_hit = next(r for r in fragments_holding(memory_home)[1].to_table(columns=["session_id", "turn_uuid"])
                        .to_pylist())
    truncate_data_file(memory_home, fragment)
    what = f"1 data file(s) unreadable ({len(unreadable)} chunk(s) in 1 fragment(s))"

    report = status()
    assert report["damage"]["unreadable_chunks"] == len(unreadable)
    assert report["chunks"] == len(before) - len(unreadable)
    recalled = funes("recall", "how often does the nightly backup job rotate keys", "--json", "--no-rerank")
    assert recalled.returncode == 0, recalled.stderr
    assert recalled.stderr == (f"funes: warning: memory at local is damaged: {what}; what can be read is served:"
                               " run `funes repair` to restore it\n")
    hits = json.loads(recalled.stdout)
    assert hits and not {h["id"] for h in hits} & unreadable
    window = funes("get", readable_hit["session_id"], readable_hit["turn_uuid"], "--format", "agent")
    assert window.returncode == 0 and "(requested)" in window.stdout, window.stderr

    for args in (["index", "--yes"], ["index", "--rebuild", "--yes"], ["maintain"], ["scrub"],
                 ["forget", "--session", readable_hit["session_id"], "--yes"]):
        refused = funes(*args)
        assert refused.returncode == 4, (args, refused.stderr)
        assert refused.stderr == f"{DAMAGED}{what}{REPAIR}", (args, refused.stderr)

    lines = repair()
    assert lines[0] == f"memory at local was damaged: {what}"
    assert lines[-1] == "nothing was lost: every chunk is back"
    assert stored_ids(memory_home) == before
    report = status()
    assert report["damage"] is None and report["pending_by_tier"] == {} and report["chunks"] == len(before)
    again = funes("recall", "which tests failed and why", "--no-rerank")
    assert again.returncode == 0 and again.stderr == ""
    assert funes("index", "--yes").returncode == 0


@pytest.mark.slow  # among the longest tests (20–35 s on 2 loaded cores): the default suite stays under ten minutes
def test_what_no_transcript_holds_any_more_is_named_as_lost(memory_home):
    transcript = add_session(memory_home)
    before = stored_ids(memory_home)
    (fragment,) = fragments_holding(memory_home, SESSION)
    lost = fragment.count_rows()
    truncate_data_file(memory_home, fragment)
    transcript.unlink()  # the agent deleted it: only the memory had it

    lines = repair()
    assert lines[-1] == f"could not recover {lost} chunk(s): claude_code--{SESSION} ({lost})"
    assert len(stored_ids(memory_home)) == len(before) - lost
    assert status()["damage"] is None
    assert funes("index", "--yes").returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "deleted"])
def test_lost_manifests_fall_back_to_the_last_intact_version_and_reindex(memory_home, damage):
    add_session(memory_home)
    before = stored_ids(memory_home)
    for manifest in newest_manifests(memory_home, 2):  # the session's rows and their vectors
        if damage == "truncated":
            os.truncate(manifest, 100)
        else:
            manifest.unlink()
    what = ("the manifest of 2 newer version(s) unreadable (read as of version " if damage == "truncated"
            else "2 table version(s) missing (their manifests were deleted)")

    recalled = funes("recall", "nightly backup rotates keys", "--json", "--no-rerank")
    assert recalled.returncode == 0, recalled.stderr
    assert recalled.stderr.startswith(f"funes: warning: memory at local is damaged: {what}")
    assert recalled.stderr.count("\n") == 1
    assert SESSION not in {h["session_id"] for h in json.loads(recalled.stdout)}
    refused = funes("index", "--yes")
    assert refused.returncode == 4 and refused.stderr.startswith(f"{DAMAGED}{what}"), refused.stderr
    assert refused.stderr.endswith(REPAIR) and refused.stderr.count("\n") == 1

    lines = repair()
    assert "re-indexed 1 session(s) from their transcripts: 3 chunk(s) restored, 3 embedded" in lines
    assert lines[-1] == "nothing was lost: every chunk is back"
    assert stored_ids(memory_home) == before
    report = status()
    assert report["damage"] is None and report["pending_by_tier"] == {}
    hits = funes("recall", "nightly backup rotates keys", "--json", "--no-rerank")
    assert SESSION in {h["session_id"] for h in json.loads(hits.stdout)}
    assert funes("index", "--yes").returncode == 0


def test_a_damaged_bm25_segment_is_rebuilt_from_the_table(memory_home):
    bm25 = memory_home / ".funes" / "memory" / "bm25"
    (segment,) = [path for path in bm25.iterdir() if path.is_dir()]
    os.truncate(segment / "data.npy", 1000)

    report = status()
    assert report["damage"]["lexical"] == f"bm25/{segment.name} cannot be read"
    recalled = funes("recall", "which tests failed and why", "--json", "--no-rerank", "--fusion", "lexical")
    assert recalled.returncode == 0 and json.loads(recalled.stdout)
    assert recalled.stderr.startswith("funes: warning: memory at local is damaged: its BM25 index is unreadable")

    lines = repair()
    assert lines[-1] == "nothing was lost: every chunk is back"
    report = status()
    assert report["damage"] is None and report["lexical_segments"] == 1
    again = funes("recall", "which tests failed and why", "--no-rerank", "--fusion", "lexical")
    assert again.returncode == 0 and again.stderr == ""


def test_an_intact_memory_needs_no_repair(memory_home):
    before = stored_ids(memory_home)
    assert repair() == ["memory at local is intact: nothing to repair"]
    assert stored_ids(memory_home) == before
