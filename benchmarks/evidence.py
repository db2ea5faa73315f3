"""Evidence per token: whether a question's gold text is within the first 1,000 and
2,000 tokens of what `funes recall "<question>"` prints for an agent (what the MCP
tool returns), in process on a dev set's built memory (BENCHMARKS.md, "Recall output
budget", "What vectors earn").  ``eval_recall.py`` reports it beside R@k; ``eval_windows.py``
chooses a tool result's window by it."""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

from recall_ablation import DEV_SETS

EVIDENCE_TOKENS = (1_000, 2_000)


def shown_hits(output: str) -> list[tuple[str, str]]:
    """``(session_id, text)`` of each hit's window, each tool call's result window and
    each neighbour line in an agent-format output (docs/contract.md), in the order printed."""
    shown: list[tuple[str, str]] = []
    session = ""
    for line in output.splitlines():
        if line.startswith("  → get "):
            session = (line.split() + [""] * 3)[2]  # "" where the output was cut inside the line
            shown.append((session, ""))
        elif line.startswith("  ⇒ ["):  # a tool call's result: its window follows
            shown.append((session, ""))
        elif line == ">" or line.startswith("> "):
            if shown:
                shown[-1] = (session, shown[-1][1] + line[2:] + "\n")
        elif line.startswith("  ~ [") and "] " in line:
            shown.append((session, line.split("] ", 1)[1]))
    return [(sid, text.strip("\n").strip("…")) for sid, text in shown]


def gold_shown(sc, gold: list[dict], output: str) -> bool:
    """Whether a gold turn's text (the kit's text match, ``sc`` its score module) is
    in a hit's window or a neighbour line of an agent-format ``output``."""
    wanted = [(g["session_id"], sc.normalise_text(g["text"])) for g in gold]
    return any(sid == gsid and sc.texts_overlap(sc.normalise_text(shown), gtext)
               for sid, shown in shown_hits(output) for gsid, gtext in wanted)


def cli_memory(corpus: Path):
    """The set's memory as `funes recall` opens it in the corpus's home (the CLI runs'
    ``FUNES_HOME``): the default memory, which the agent format names ``--memory
    local`` in each hit's ``→ get`` line, not by its path, so the output measured is
    the size the MCP tool returns."""
    os.environ["FUNES_HOME"] = str(corpus / "home" / ".funes")
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    return Memory.open(local_memory())


def evidence(kit: Path, corpus: Path, render=None, fusion: str | None = None) -> dict:
    """Evidence per token over a set's questions, in process on the built memory with
    `funes recall`'s defaults: the share whose gold text (the kit's text match) is
    within the first :data:`EVIDENCE_TOKENS` tokens of the output, anywhere in it,
    and the mean output in tokens.  ``render``: result → text (default
    retrieval/format.py's agent format); ``fusion``: a CLI variant (default: the
    default fusion)."""
    os.environ.setdefault("FUNES_CACHE_DIR", str(corpus / "home" / ".funes" / "cache"))
    os.environ["HF_HUB_OFFLINE"] = "1"
    sys.path.insert(0, str(kit))
    import score as sc

    from funes.retrieval.bounds import CHARS_PER_TOKEN
    from funes.retrieval.format import format_recall
    from funes.retrieval.fusion import Fusion
    from funes.retrieval.search import Recaller

    render = render or format_recall
    recaller = Recaller.open(cli_memory(corpus), fusion=Fusion.named(fusion))
    qrels = sc.read_jsonl(corpus / "qrels.jsonl")
    within = {n: 0 for n in EVIDENCE_TOKENS}
    anywhere, sizes = 0, []
    for q in qrels:
        output = render(recaller.recall(q["question"]))
        sizes.append(len(output) / CHARS_PER_TOKEN)
        anywhere += gold_shown(sc, q["gold"], output)
        for n in EVIDENCE_TOKENS:
            within[n] += gold_shown(sc, q["gold"], output[:n * CHARS_PER_TOKEN])
    total = max(1, len(qrels))
    return {"n": len(qrels), **{f"gold@{n}": within[n] / total for n in EVIDENCE_TOKENS},
            "gold anywhere": anywhere / total, "mean tokens": statistics.fmean(sizes) if sizes else 0.0}


def evidence_table(evidences: dict[tuple[str, str], dict]) -> list[str]:
    if not evidences:
        return []
    lines = ["Evidence per token: questions whose gold text is within the first 1,000 / 2,000 tokens"
             " (characters / 4) of `funes recall \"<question>\"`'s output (what the MCP tool returns), anywhere"
             " in it, and its mean size:", "",
             "| set | fusion | gold within 1k | gold within 2k | gold anywhere | mean tokens |",
             "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {DEV_SETS[name]} | {variant} | {e['gold@1000']:.3f} | {e['gold@2000']:.3f} | "
              f"{e['gold anywhere']:.3f} | {e['mean tokens']:,.0f} |" for (name, variant), e in evidences.items()]
    return lines + [""]
