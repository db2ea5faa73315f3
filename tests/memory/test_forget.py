"""`funes forget`: sessions leave the memory for good and stay out on re-index."""

import json
import os
import subprocess
import sys

import pytest

FUNES = [sys.executable, "-m", "funes.cli"]


def funes(*args):
    return subprocess.run([*FUNES, *args], capture_output=True, text=True, timeout=300, env=os.environ.copy())


@pytest.mark.slow
def test_forgotten_sessions_are_gone_from_every_version_and_stay_out(memory_home):
    import lance

    query = ["recall", "test depends on dict ordering sort the keys", "--json", "-k", "20"]
    assert "s_main" in {h["session_id"] for h in json.loads(funes(*query).stdout)}
    unattended = funes("forget", "--session", "s_main")
    assert unattended.returncode == 2 and "pass --yes" in unattended.stderr
    result = funes("forget", "--session", "s_main", "--yes")
    assert result.returncode == 0, result.stderr
    assert "forgot" in result.stderr and "hermes--s_main" in result.stderr
    assert "s_main" not in {h["session_id"] for h in json.loads(funes(*query).stdout)}
    table = lance.dataset(str(memory_home / ".funes" / "memory" / "chunks.lance"))
    for version in table.versions():  # no older version still holds the rows
        assert table.checkout_version(version["version"]).count_rows("session_id = 's_main'") == 0
    bm25 = b"".join(p.read_bytes() for p in (memory_home / ".funes" / "memory" / "bm25").rglob("*") if p.is_file())
    assert b"dict" not in bm25 or b"ordering" not in bm25
    again = funes("index", "--yes")
    assert again.returncode == 0, again.stderr
    assert lance.dataset(table.uri).count_rows("session_id = 's_main'") == 0


@pytest.mark.slow
def test_forget_needs_a_target_and_reports_no_match(memory_home):
    assert funes("forget").returncode == 2
    result = funes("forget", "--session", "no-such-session", "--yes")
    assert result.returncode == 0 and "nothing matches" in result.stderr


def test_a_bad_before_date_is_refused_by_the_flag_the_user_typed(memory_home):
    result = funes("forget", "--before", "yesterdayish", "--yes")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "funes: --before 'yesterdayish': expected an ISO date (2026-05-01), a date and time, or a span like 7d, 2w, 12h"]
    assert "s_main" in funes("sessions").stdout  # nothing was forgotten
