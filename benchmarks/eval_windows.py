"""How wide a tool result's answer window should be: gold within the first 1,000
tokens of `funes recall`'s agent format on both coding dev sets, with every
``tool_result`` hit shown through a window of each width in :data:`WIDTHS` (other
hits keep :data:`funes.retrieval.passage.ANSWER_CHARS`), in process on the memories
eval_recall.py builds, with recall's defaults.  The width is chosen leave one session
out (grouped by the gold's session; a fold's score is the mean of each set's share),
as BENCHMARKS.md "Recall output budget" reports.

    nice -n 5 .venv/bin/python benchmarks/eval_windows.py
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from eval_recall import eval_dir  # noqa: E402
from evidence import cli_memory, gold_shown  # noqa: E402

CORPORA = {"coding": "corpus-coding-dev", "coding2": "corpus-coding-dev2"}
WIDTHS = (480, 640, 800, 1000, 1200)
TOKENS = 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir")
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / ".work")
    args = ap.parse_args(argv)
    kit = eval_dir(args.eval_dir)
    os.environ["HF_HUB_OFFLINE"] = "1"
    sys.path.insert(0, str(kit))
    import score as sc

    import funes.retrieval.format as agent_format
    from funes.retrieval.bounds import CHARS_PER_TOKEN
    from funes.retrieval.passage import ANSWER_CHARS
    from funes.retrieval.search import Recaller

    found: dict[tuple[str, str], dict[int, list[bool]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    sizes: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    for name, folder in CORPORA.items():
        corpus = args.work / folder
        os.environ["FUNES_CACHE_DIR"] = str(corpus / "home" / ".funes" / "cache")
        recaller = Recaller.open(cli_memory(corpus))
        for q in sc.read_jsonl(corpus / "qrels.jsonl"):
            result = recaller.recall(q["question"])
            for width in WIDTHS:
                agent_format.answer_chars = lambda block_type, w=width: w if block_type == "tool_result" else ANSWER_CHARS
                output = agent_format.format_recall(result)
                sizes[name, width].append(len(output) / CHARS_PER_TOKEN)
                found[name, q["gold"][0]["session_id"]][width].append(
                    gold_shown(sc, q["gold"], output[:TOKENS * CHARS_PER_TOKEN]))

    def share(groups, width: int) -> float:
        by_set = collections.defaultdict(list)
        for name, session in groups:
            by_set[name] += found[name, session][width]
        return statistics.fmean(statistics.fmean(v) for v in by_set.values())

    chosen = {group: max(WIDTHS, key=lambda w: (round(share([g for g in found if g != group], w), 6), -w))
              for group in found}
    report = {"widths": {f"{name} {width}": {"gold within 1k": round(share([g for g in found if g[0] == name], width), 3),
                                             "mean tokens": round(statistics.fmean(sizes[name, width]))}
                         for name in CORPORA for width in WIDTHS},
              "chosen": dict(collections.Counter(chosen.values())),
              "left_out": {name: round(statistics.fmean(h for g in found if g[0] == name
                                                        for h in found[g][chosen[g]]), 3) for name in CORPORA}}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
