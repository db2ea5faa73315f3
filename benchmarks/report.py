"""What every benchmark shares: describing the machine and writing its section of
BENCHMARKS.md (each script owns one `## <title>` section and replaces only it)."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import signal
import statistics
import subprocess
from datetime import datetime, timezone
from pathlib import Path

# The processes the benchmarks start run as an installed funes does, with Python's
# bytecode cache: pip compiles a wheel's modules when it installs them, and an
# interpreter writes what it compiles.  A shell that sets PYTHONDONTWRITEBYTECODE
# (this machine's does) makes every cold `funes` process compile funes's own
# modules again: 0.1-0.15 s of each cold recall measured here.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS_MD = REPO / "BENCHMARKS.md"
PACKAGES = ("lancedb", "pylance", "bm25s", "onnxruntime", "torch", "dagster", "kingfisher-secret-scanner")


def children_take_ctrl_c() -> None:
    """Make the processes this one starts end on SIGINT, as from a terminal's Ctrl-C.
    Started in the background of a shell without job control (`nohup ... &`), a
    benchmark inherits SIGINT ignored, and so would the indexer it stops with one:
    the signal does nothing, and the indexer has to be killed.  A handler of our own
    is reset to the default in a child at exec; an ignored signal is not."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def cpu_model() -> str:
    """The CPU's name, and on Linux its family/model and the widest int8 dot-product
    instructions it has.  The hosts behind "AMD EPYC" differ: some have AVX2 without
    VNNI, others AVX-512 VNNI, on which the day-zero indexer fills ~1.6x the vectors a
    CPU-second with the same code (BENCHMARKS.md, "Day zero"), so two runs compare only
    on the same kind."""
    try:
        info = Path("/proc/cpuinfo").read_text().split("\n\n", 1)[0]
    except OSError:
        return platform.processor() or platform.machine()
    fields = {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in info.splitlines())}
    name = fields.get("model name") or platform.processor() or platform.machine()
    flags = set(fields.get("flags", "").split())
    isa = ("AVX-512 VNNI" if "avx512_vnni" in flags else "AVX-VNNI" if "avx_vnni" in flags
           else "AVX2, no VNNI" if "avx2" in flags else "no AVX2")
    if "cpu family" in fields and "model" in fields:
        return f"{name}, family {fields['cpu family']} model {fields['model']}, {isa}"
    return f"{name}, {isa}"


def memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return None


def machine() -> str:
    """One line: cores, CPU, RAM, Python, key package versions, commit, date."""
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    ram = memory_gib()
    return (f"{os.cpu_count()} CPU cores ({cpu_model()}), {f'{ram:.0f} GiB RAM, ' if ram else ''}"
            f"Python {platform.python_version()}, {', '.join(versions)}; funes at {commit or '?'}; "
            f"{datetime.now(timezone.utc):%Y-%m-%d}")


def percentiles(samples_s: list[float]) -> dict[str, float]:
    """p50/p95 in milliseconds."""
    ordered = sorted(samples_s)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1), "p95_ms": round(p95 * 1000, 1)}


def write_section(title: str, body: str, path: Path = BENCHMARKS_MD) -> None:
    """Replace (or append) the section ``## <title>`` of BENCHMARKS.md."""
    heading = f"## {title}"
    text = path.read_text(encoding="utf-8") if path.exists() else (
        "# Benchmarks\n\nEvery figure here is written by a script in `benchmarks/` (named in its section), "
        "on the machine its section describes. Goals come from the issues; CI never asserts timings.\n")
    section = f"{heading}\n\n{body.rstrip()}\n"
    start = text.find(f"{heading}\n")
    if start == -1:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        following = re.search(r"^## ", text[start + len(heading):], flags=re.MULTILINE)
        end = start + len(heading) + following.start() if following else len(text)
        text = text[:start] + section + ("\n" + text[end:] if following else "")
    path.write_text(text, encoding="utf-8")
