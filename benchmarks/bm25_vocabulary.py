"""What a segment's vocabulary costs a cold reader: opening a BM25 index of one
segment with N distinct terms and answering one query, in a new process each time,
with the vocabulary saved sorted (``terms.bin``, how funes saves it) and as the
``vocab.json`` dict segments held before (read since only for them).

The synthetic day-zero history holds ~8,850 terms a segment, so it cannot show this;
a real coding history's grows with it (Heaps' law fitted on the real fixture and
coding-dev sessions: ~150k terms at 300k chunks, ~320k at 1M).

    python benchmarks/bm25_vocabulary.py --terms 132000 500000 1000000

Prints one JSON object per line.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from funes.memory.lexical import LexicalIndex, Vocabulary  # noqa: E402

QUERY = "flaky websocket reconnect test"
COMMON = "websocket reconnect flaky test retry timeout socket server client close".split()
READ = """
import sys, time
start = time.perf_counter()
from funes.memory.lexical import LexicalIndex
imported = time.perf_counter()
index = LexicalIndex.open(__import__("pathlib").Path(sys.argv[1]))
opened = time.perf_counter()
hits = index.search(sys.argv[2], 10)
done = time.perf_counter()
assert index.problem is None and hits, (index.problem, hits)
print((opened - imported) * 1000, (done - opened) * 1000)
"""


def build(folder: Path, terms: int, seed: int = 0) -> int:
    """One segment over documents of ten words each, new words throughout (random
    letters, as identifiers and hashes in tool output are) and a few common ones."""
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < terms:
        words.add("".join(rng.choices(string.ascii_lowercase, k=rng.randint(6, 14))))
    pool = sorted(words)
    rng.shuffle(pool)
    texts = [" ".join([*pool[i:i + 10], *rng.sample(COMMON, 3)]) for i in range(0, len(pool), 10)]
    index = LexicalIndex.open(folder)
    index.rebuild([f"{n:016x}" for n in range(len(texts))], texts, 1)
    return len(index.segments[0].vocab)


def as_json_vocabulary(source: Path, target: Path) -> None:
    shutil.copytree(source, target)
    for folder in (path for path in target.iterdir() if path.is_dir()):
        vocab = dict(Vocabulary.load(folder, n_terms=10**12).items())
        for name in Vocabulary.FILES:
            (folder / name).unlink()
        (folder / Vocabulary.LEGACY_FILE).write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")


def cold_reads(folder: Path, runs: int) -> dict:
    opens, searches = [], []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", READ, str(folder), QUERY], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).resolve().parent.parent)
        open_ms, search_ms = map(float, done.stdout.split())
        opens.append(open_ms)
        searches.append(search_ms)
    size = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()
               and (path.name in Vocabulary.FILES or path.name == Vocabulary.LEGACY_FILE))
    return {"open_ms_median": round(statistics.median(opens), 1), "search_ms_median": round(statistics.median(searches), 1),
            "vocabulary_bytes": size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--terms", type=int, nargs="+", default=[132_000, 500_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=5, help="new processes a form (medians)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="funes-bm25-vocabulary-") as scratch:
        for terms in args.terms:
            sorted_form, json_form = Path(scratch) / f"{terms}-sorted", Path(scratch) / f"{terms}-json"
            counted = build(sorted_form, terms)
            as_json_vocabulary(sorted_form, json_form)
            for form, folder in (("sorted (terms.bin)", sorted_form), ("vocab.json", json_form),
                                 ("sorted (terms.bin)", sorted_form), ("vocab.json", json_form)):
                print(json.dumps({"terms": counted, "vocabulary": form, **cold_reads(folder, args.runs)}), flush=True)


if __name__ == "__main__":
    main()
