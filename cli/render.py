"""Human renderings (terminal presentation, deliberately not a contract)."""

from __future__ import annotations

import re

from funes.retrieval.get import Window, block_text


def print_window(window: Window, highlight: str | None) -> None:
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    console = Console()
    console.print(f"[bold]{window.harness}[/] {window.workdir} session {window.session_id}")
    for turn in window.turns:
        body = Text("\n\n".join(block_text(b) for b in turn.blocks))
        if highlight:
            body.highlight_regex(re.escape(highlight), style="bold black on yellow")
        requested = turn.turn_uuid == window.target
        console.print(Panel(body, title=f"{turn.role} · seq {turn.seq} · {turn.ts}",
                            title_align="left", border_style="green" if requested else "dim"))
    if window.turns:
        console.print(f"turns {window.turns[0].seq}-{window.turns[-1].seq} of {window.total}", style="dim")
    if window.next_seq is not None:
        console.print(f"continue with: funes get {window.session_id} --from {window.next_seq}", style="dim")
