"""docs/contract.md is the contract: its examples are what the code prints."""

import re
from pathlib import Path

from funes.retrieval.format import NO_RESULTS, format_recall
from funes.retrieval.search import RecallResult

CONTRACT = Path(__file__).parent.parent / "docs" / "contract.md"


def _blocks(section: str) -> list[str]:
    text = CONTRACT.read_text(encoding="utf-8")
    body = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.*?)\n```", body, flags=re.S)


def _result(hits):
    return RecallResult(query="q", hits=hits, memory_label="local", reranker=None, reranker_note=None,
                        dense_coverage=1.0, elapsed_ms=1.0)


def test_the_recall_example_is_what_the_formatter_prints(memory_home):
    from funes.retrieval.access import open_memory
    from funes.retrieval.search import Recaller

    recaller = Recaller.open(open_memory(None))
    result = recaller.recall("photo-realistic interactive 3D digital twin of Earth", k=1, neighbors=1,
                             candidates=5)
    hit = result.hits[0]
    hit.score = 0.875  # the example's score; everything else comes from the memory
    layout, example = _blocks("`funes recall` — agent format")
    assert format_recall(_result([hit])) == example
    # The layout block names the same five line shapes.
    shapes = [line.split("<")[0] for line in layout.splitlines()]
    assert shapes == ["[", "  → get ", "", "  ~ [", "---"]


def test_no_results_is_one_line():
    assert format_recall(_result([])) == NO_RESULTS == "no results"


def test_documented_exit_codes_match_the_error_classes():
    from funes import errors

    table = CONTRACT.read_text(encoding="utf-8").split("## Errors and exit codes", 1)[1]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.M)}
    raised = {cls.exit_code for cls in vars(errors).values()
              if isinstance(cls, type) and issubclass(cls, errors.FunesError)}
    assert raised <= documented
