"""`funes browse` page times, warm: the server's app (its guard included) over a
synthetic memory, each page asked through Starlette's in-process client with the
run's cookie, after one request of it has loaded what it loads once (the recall
models, Lance's caches).

    nice -n 10 .venv/bin/python benchmarks/browse.py [--size 300000] [--runs 10] [--no-write]

The memory is recall_latency.py's (benchmarks/synthetic.py's coding history, its
chunks given random unit vectors so the dense search does its full work: embedding
300k chunks here takes hours), built once under benchmarks/.work/ and reused.  Each
figure is the wall time of a whole answer (the page rendered and sent), p50 and p95
of ``--runs``; the first request of each page is shown apart.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_latency import build_memory  # noqa: E402
from report import machine, percentiles, write_section  # noqa: E402

# (page, why): the overview (status and the sessions by week), the session list, a
# session's first turns and a late range, a search with and without a filter, a
# file's history (a file many turns touched).
PAGES = [
    "/",
    "/sessions",
    "/session/{session}",
    "/session/{session}?from=200",
    "/search?q=why+did+the+container+build+fail",
    "/search?q=npm+ci+exit+handler&block_type=text",
    "/history?file=package.json&here=false",
]


def warm_run(runs: int) -> dict:
    from starlette.testclient import TestClient

    from funes.cli.browse.app import create_app
    from funes.cli.browse.site import Site
    from funes.retrieval.sessions import list_sessions

    site = Site.open(None)
    longest = max(list_sessions(site.read()), key=lambda s: s.turns)
    client = TestClient(create_app(site, token="bench", port=1), base_url="http://127.0.0.1:1")
    client.cookies.set("funes_browse_1", "bench")
    out = {"chunks": site.read().count(), "session_turns": longest.turns, "pages": {}}
    for template in PAGES:
        path = template.format(session=longest.session_id)
        started = time.perf_counter()
        answer = client.get(path)
        first = time.perf_counter() - started
        if answer.status_code != 200:
            raise SystemExit(f"{path}: {answer.status_code} {answer.text[-300:]}")
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            client.get(path)
            samples.append(time.perf_counter() - started)
        out["pages"][template] = {"first_ms": round(first * 1000, 1), **percentiles(samples),
                                  "bytes": len(answer.content)}
    return out


def section(result: dict, size: int) -> str:
    rows = "\n".join(f"| `{page}` | {r['first_ms']:.0f} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} | {r['bytes']:,} |"
                     for page, r in result["pages"].items())
    return (f"`benchmarks/browse.py --size {size}`: {result['chunks']:,} chunks (synthetic coding history, "
            f"random vectors), the session page on its longest session ({result['session_turns']} turns). "
            "Warm: the app in-process, every page asked once before the runs. Goal: under 0.5 s warm on the "
            "300k day-zero memory.\n\n| page | first ms | p50 ms | p95 ms | bytes |\n|---|---|---|---|---|\n"
            f"{rows}\n\n{machine()}\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--warm", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.warm is not None:
        print(json.dumps(warm_run(args.warm)))
        return 0
    funes_home = build_memory(args.size)
    out = subprocess.run([sys.executable, __file__, "--warm", str(args.runs)], capture_output=True, text=True,
                         env={**os.environ, "FUNES_HOME": str(funes_home), "HF_HUB_OFFLINE": "1"})
    if out.returncode:
        raise SystemExit(out.stderr)
    result = json.loads(out.stdout.splitlines()[-1])
    print(json.dumps(result, indent=1))
    if not args.no_write:
        write_section("Browse", section(result, args.size))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
