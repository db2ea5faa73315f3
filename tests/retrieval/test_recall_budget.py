"""The agent format packs recall's hits into a token budget (docs/contract.md): the
window of each hit that holds the query's words, no text twice, and a last line
counting the hits the budget left out."""

import json
import os
import subprocess
import sys

import pytest

from funes.retrieval.bounds import CHARS_PER_TOKEN, DEFAULT_BUDGET
from funes.retrieval.format import format_recall
from funes.retrieval.passage import answer_window
from funes.retrieval.search import Hit, Neighbor, RecallResult

FILLER = "\n".join(f"line {n}: the build ran the formatter over the workspace and nothing changed." for n in range(40))


def _hit(n, text, neighbors=(), block_type="text"):
    return Hit(id=f"c{n}", text=text, harness="claude_code", session_id=f"session-{n:04d}-aaaa", turn_uuid=f"turn-{n}",
               parent_uuid=None, seq=n, ts="2026-01-02T03:04:05.000Z", role="assistant", block_type=block_type,
               tool_name=None, block_idx=0, split_idx=0, workdir="-work-project", cwd=None, repo=None, branch=None,
               source_path=None, score=1.0 - n / 100, neighbors=list(neighbors))


def _result(hits, query="why did the migration fail on the orders table"):
    return RecallResult(query=query, hits=hits, memory_label="local", reranker=None, reranker_note=None,
                        elapsed_ms=1.0)


GOLD = "The migration failed on the orders table because the index name collided with the old one."


def _quoted_text(output):
    return "\n".join(line[2:] for line in output.splitlines() if line.startswith("> ") or line == ">")


def test_the_window_holds_what_matched_the_query_not_the_whole_block():
    block = FILLER + "\n" + GOLD + "\n" + FILLER
    output = format_recall(_result([_hit(1, block)]))
    assert GOLD in _quoted_text(output)
    assert len(_quoted_text(output)) < len(block) // 4
    assert _quoted_text(output).startswith("…") and _quoted_text(output).endswith("…")
    assert answer_window("short text", frozenset({"text"})) == "short text"


def test_a_tool_results_window_keeps_a_span_of_output_that_text_would_cut():
    """A log's answer runs over several lines past the matched one: a tool result
    shows a wider window than a text does, so the span stays whole."""
    span = "\n".join(["ERROR migration 0042 failed on the orders table"]
                     + [f"  at step {n}: index orders_created_idx already exists (attempt {n})" for n in range(8)])
    block = FILLER + "\n" + span + "\n" + FILLER
    as_output = _quoted_text(format_recall(_result([_hit(1, block, block_type="tool_result")])))
    as_text = _quoted_text(format_recall(_result([_hit(1, block)])))
    assert span in as_output
    assert span not in as_text and len(as_text) < len(as_output) <= 900


@pytest.mark.parametrize("budget", [200, 500, DEFAULT_BUDGET, 3000])
def test_the_output_fits_the_budget_and_counts_what_it_left_out(budget):
    hits = [_hit(n, f"{GOLD} (run {n})\n{FILLER}", [Neighbor(n + 1, "user", "text", f"next-{n}", f"neighbour {n} " * 30)])
            for n in range(30)]
    output = format_recall(_result(hits), budget)
    assert len(output) <= budget * CHARS_PER_TOKEN
    shown = sum(line.startswith("[") for line in output.splitlines())
    assert shown >= 1
    assert output.splitlines()[-1] == f"{30 - shown} more hits: a larger budget (--budget) or k (-k) shows them"


def test_every_hit_is_shown_when_the_budget_holds_them_and_no_count_line():
    output = format_recall(_result([_hit(1, GOLD), _hit(2, "Another answer entirely, about the orders table.")]))
    assert output.count("\n---") == 2 and output.endswith("---")


def test_text_already_shown_is_not_shown_again():
    neighbour = Neighbor(1, "assistant", "text", "turn-1", GOLD)  # the first hit's own text
    hits = [_hit(1, GOLD), _hit(2, GOLD, [neighbour]), _hit(3, "The orders table migration ran again the next day.")]
    output = format_recall(_result(hits))
    assert output.count(GOLD) == 1
    assert "session-0002" not in output and "session-0003" in output
    assert "  ~ [" not in output


def test_a_session_is_named_once_and_every_get_line_opens_its_hit():
    """The first hit of a session names its agent and project; a later one of the same
    session only its time and block type, its session in its `→ get` line.  The default
    memory's `→ get` line runs without `--memory`; any other names it."""
    first, other, again = _hit(1, GOLD), _hit(2, "The orders table migration ran again."), _hit(3, "Fixed the index.")
    again.session_id = first.session_id
    lines = format_recall(_result([first, other, again])).splitlines()
    headers = [(line, lines[n + 1]) for n, line in enumerate(lines) if line.startswith("[")]
    assert headers == [
        ("[2026-01-02T03:04:05.000Z] claude_code -work-project/session- text  score=0.990",
         "  → get session-0001-aaaa turn-1"),
        ("[2026-01-02T03:04:05.000Z] claude_code -work-project/session- text  score=0.980",
         "  → get session-0002-aaaa turn-2"),
        ("[2026-01-02T03:04:05.000Z] text  score=0.970", "  → get session-0001-aaaa turn-3"),
    ]
    elsewhere = RecallResult(query="orders table", hits=[first], memory_label="org/memories@v1", reranker=None,
                             reranker_note=None, elapsed_ms=1.0)
    assert "  → get session-0001-aaaa turn-1 --memory org/memories@v1" in format_recall(elsewhere).splitlines()


def test_the_first_hit_is_cut_to_fit_a_small_budget():
    output = format_recall(_result([_hit(1, GOLD * 40), _hit(2, GOLD)]), 200)
    assert len(output) <= 200 * CHARS_PER_TOKEN
    assert output.splitlines()[0].startswith("[") and "→ get session-0001-aaaa turn-1" in output


FUNES = [sys.executable, "-m", "funes.cli"]


def _funes(*args):
    return subprocess.run([*FUNES, *args], capture_output=True, text=True, timeout=120, env=os.environ.copy())


@pytest.mark.parametrize("value, message", [
    ("10000000000", "--budget must be an integer from 200 to 25,000, got 10000000000"),
    ("199", "--budget must be an integer from 200 to 25,000, got 199"),
])
def test_a_budget_out_of_bounds_is_a_one_line_usage_error(memory_home, value, message):
    result = _funes("recall", "flaky test", "--budget", value)
    assert result.returncode == 2 and result.stderr == f"funes: {message}\n"


def test_json_keeps_every_hit_whole_whatever_the_budget(memory_home):
    small = _funes("recall", "flaky test", "-k", "5", "--budget", "200", "--json")
    plain = _funes("recall", "flaky test", "-k", "5", "--json")
    assert small.returncode == plain.returncode == 0, small.stderr
    assert json.loads(small.stdout) == json.loads(plain.stdout) and len(json.loads(plain.stdout)) == 5
    text = _funes("recall", "flaky test", "-k", "5", "--budget", "200")
    assert text.returncode == 0 and len(text.stdout.rstrip("\n")) <= 200 * CHARS_PER_TOKEN


def test_a_tool_call_shows_its_result_once_and_within_the_budget():
    """A call's hit shows its result after a `  ⇒ [` line; the result's turn is not
    previewed again as a neighbour, a later hit on the same text is left out, and a
    result that does not fit the budget is dropped before the call's own text."""
    outcome = "ERROR migration 0042 failed on the orders table: index orders_created_idx already exists"
    result = Neighbor(2, "user", "tool_result", "turn-2", outcome)
    call = _hit(1, '{"command": "mix ecto.migrate"}', [result, Neighbor(0, "user", "text", "turn-0", "migrate it")],
                block_type="tool_use")
    call.result = result
    again = _hit(2, outcome, block_type="tool_result")
    other = _hit(3, GOLD)
    lines = format_recall(_result([call, again, other])).splitlines()
    opened = lines.index("  ⇒ [user tool_result seq2]")
    assert lines[opened - 1] == '> {"command": "mix ecto.migrate"}' and lines[opened + 1] == "> " + outcome
    assert "  ~ [user text seq0] migrate it" in lines
    assert not any(line.startswith("  ~ [user tool_result seq2]") for line in lines)
    assert sum(line.startswith("[") for line in lines) == 2 and "> " + GOLD in lines  # the repeat left out
    call.result = Neighbor(2, "user", "tool_result", "turn-2", FILLER)
    tight = format_recall(_result([call]), budget=60)
    assert len(tight) <= 60 * CHARS_PER_TOKEN and "  ⇒ [" not in tight and '"mix ecto.migrate"' in tight
    # A result left out for the budget is not "already shown": a later hit on its text still shows.
    failure = "migration 0042 failed on the orders table: the index already exists"
    call.result = Neighbor(2, "user", "tool_result", "turn-2", failure + "\n" + FILLER)
    later = format_recall(_result([call, _hit(2, failure)]), budget=200)
    assert "  ⇒ [" not in later and "> " + failure in later.splitlines()
