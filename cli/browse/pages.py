"""The pages of `funes browse`, rendered on the server as HTML strings.

Every value that comes from a memory (transcript text, paths, ids, agents' names)
passes through :func:`h`, :func:`html.escape` with quotes, before it reaches the
page: a transcript holding ``<script>`` shows those characters.  The pages carry no
script at all (the server's Content-Security-Policy forbids any), so a collapsed
thinking block or tool call is a ``<details>`` element."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

from funes.retrieval.filters import FilterArgument
from funes.retrieval.get import BlockView, TurnView, Window
from funes.retrieval.history import History
from funes.retrieval.search import RecallResult
from funes.retrieval.sessions import SessionSummary
from funes.traces.model import BLOCK_TYPES

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
nav{background:#1d232a;padding:.6em 1.2em}nav a{color:#fff;margin-right:1.4em;text-decoration:none;font-weight:600}
main{max-width:1100px;margin:0 auto;padding:1em 1.2em}
h1{font-size:1.35em;margin:.4em 0 .8em}h2{font-size:1.1em;margin:1.2em 0 .5em}
form.filters{display:flex;flex-wrap:wrap;gap:.5em 1em;background:#fff;padding:.8em;border:1px solid #dde1e6;border-radius:6px}
form.filters label{display:flex;flex-direction:column;font-size:.8em;color:#555}
form.filters input,form.filters select{font-size:1rem;padding:.2em .3em}
form.filters .q input{width:28em}
.hit,.turn,.entry{background:#fff;border:1px solid #dde1e6;border-radius:6px;margin:.7em 0;padding:.6em .9em}
.meta{font-size:.82em;color:#57606a}.meta b{color:#1d232a}
pre{white-space:pre-wrap;word-break:break-word;margin:.4em 0;font:12.5px/1.4 ui-monospace,monospace}
.turn:target{border-color:#2f81f7;box-shadow:0 0 0 2px #2f81f755}
.role-user{border-left:4px solid #2f81f7}.role-assistant{border-left:4px solid #1a7f37}
details{margin:.3em 0}summary{font-size:.85em;color:#57606a}
table{border-collapse:collapse;background:#fff;width:100%}td,th{border-bottom:1px solid #eaeef2;padding:.3em .5em;
text-align:left;font-size:.9em;vertical-align:top}
.error{background:#fff1f0;border:1px solid #ffa39e;padding:.6em .9em;border-radius:6px}
.pager a{margin-right:1em}code{font:12.5px ui-monospace,monospace}
"""

SUMMARY_CHARS = 120


def h(value: object) -> str:
    """``value`` as HTML text: every ``<``, ``&`` and quote escaped."""
    return html.escape("" if value is None else str(value), quote=True)


def href(path: str, **query: object) -> str:
    """A link to ``path`` with ``query`` (None values left out), escaped for an attribute."""
    given = {key: value for key, value in query.items() if value not in (None, "")}
    return h(path + ("?" + urlencode(given) if given else ""))


def page(title: str, body: str, *, label: str) -> str:
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{h(title)} · funes</title>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'><style>{STYLE}</style></head>"
            f"<body><nav><a href='/'>funes</a><a href='/search'>Search</a><a href='/sessions'>Sessions</a>"
            f"<a href='/history'>File history</a><span style='color:#9aa4ae;font-size:.85em'>{h(label)}</span>"
            f"</nav><main><h1>{h(title)}</h1>{body}</main></body></html>")


def error_box(message: str) -> str:
    return f"<p class=error>{h(message)}</p>"


# --- forms -------------------------------------------------------------------------------------


def filter_controls(arguments: Iterable[FilterArgument], given: dict[str, str], harnesses: Iterable[str]) -> str:
    """One control per filter the command takes, named as funes.retrieval.filters names
    it: a choice for the agent, the block type and --here/--anywhere, text otherwise."""
    controls = []
    for argument in arguments:
        value = given.get(argument.name, "")
        label = argument.flag.lstrip("-")
        if argument.name == "harness":
            control = _select(argument.name, value, ["", *harnesses])
        elif argument.name == "block_type":
            control = _select(argument.name, value, ["", *BLOCK_TYPES])
        elif argument.off_flag:
            control = _select(argument.name, value, ["", "true", "false"],
                              {"": "", "true": argument.flag.lstrip("-"), "false": argument.off_flag.lstrip("-")})
            label = "project"
        elif argument.name in ("since", "until"):
            control = f"<input name={argument.name} value='{h(value)}' placeholder='2026-05-01 or 7d' size=12>"
        else:
            control = f"<input name={argument.name} value='{h(value)}' size=14>"
        controls.append(f"<label title='{h(argument.help)}'>{h(label)}{control}</label>")
    return "".join(controls)


def _select(name: str, value: str, options: list[str], labels: dict[str, str] | None = None) -> str:
    labels = labels or {}
    shown = "".join(f"<option value='{h(option)}'{' selected' if option == value else ''}>"
                    f"{h(labels.get(option, option) or 'any')}</option>" for option in options)
    return f"<select name={name}>{shown}</select>"


def search_form(query: str, controls: str, k: int) -> str:
    return (f"<form class=filters method=get action='/search'>"
            f"<label class=q>query<input name=q value='{h(query)}' autofocus></label>"
            f"<label>hits<input name=k value='{k}' size=3></label>{controls}"
            f"<label>&nbsp;<button type=submit>Recall</button></label></form>")


# --- search ------------------------------------------------------------------------------------


def session_link(session_id: str, first: int | None = None) -> str:
    """The session page (from the turn ``first``); the id quoted: it comes from a transcript."""
    return href(f"/session/{quote(session_id, safe='')}", **{"from": first})


def turn_link(session_id: str, seq: int) -> str:
    """The session page opened at the turn ``seq`` (the page starts there: a range cut
    at its size limit would otherwise leave the turn out), scrolled to it."""
    return session_link(session_id, seq) + f"#turn-{seq}"


def search_results(result: RecallResult) -> str:
    if not result.hits:
        return "<p>no results</p>"
    parts = [f"<p class=meta>{len(result.hits)} hit(s) in {result.elapsed_ms:.0f} ms · "
             f"{h('reranked by ' + result.reranker if result.reranker else 'not reranked: ' + (result.reranker_note or ''))}</p>"]
    for rank, hit in enumerate(result.hits, 1):
        where = " · ".join(h(part) for part in (hit.repo, hit.branch) if part)
        files = ", ".join(f"{h(','.join(f['actions']))} <code>{h(f['path'])}</code>" for f in hit.files)
        commands = "".join(f"<div class=meta>$ <code>{h(command)}</code></div>" for command in hit.commands)
        stale = hit.stale.line() if hit.stale is not None else None
        tool = f" {h(hit.tool_name)}" if hit.tool_name else ""
        exit_code = f" · exit {hit.exit_code}" if hit.exit_code is not None else ""
        parts.append(
            f"<div class=hit><div class=meta><b>{rank}.</b> [{h(hit.ts)}] <b>{h(hit.harness)}</b> {h(hit.workdir)}"
            f"{' · ' + where if where else ''} · {h(hit.role)} {h(hit.block_type)}{tool}{exit_code} · "
            f"score {hit.score:.3f} · <a href='{turn_link(hit.session_id, hit.seq)}'>session "
            f"{h(hit.session_id[:8])} turn {hit.seq}</a></div>"
            + (f"<div class=meta>files: {files}</div>" if files else "") + commands
            + (f"<div class=meta>! {h(stale)}</div>" if stale else "")
            + f"<pre>{h(hit.text)}</pre>"
            + (f"<div class=meta>⇒ what came of it: {h(hit.result.role)} {h(hit.result.block_type)} · "
               f"<a href='{turn_link(hit.session_id, hit.result.seq)}'>turn {hit.result.seq}</a></div>"
               f"<pre>{h(hit.result.text)}</pre>" if hit.result is not None else "")
            + "</div>")
    return "".join(parts)


# --- sessions ----------------------------------------------------------------------------------


def project_of(summary: SessionSummary) -> str:
    return summary.repo or summary.workdir or "?"


def sessions_table(sessions: list[SessionSummary]) -> str:
    """The sessions grouped by project, then agent, newest first within each."""
    if not sessions:
        return "<p>no sessions</p>"
    groups: dict[tuple[str, str], list[SessionSummary]] = {}
    for summary in sessions:
        groups.setdefault((project_of(summary), summary.harness), []).append(summary)
    parts = [f"<p class=meta>{len(sessions)} session(s)</p>"]
    for (project, agent), members in sorted(groups.items()):
        rows = "".join(
            f"<tr><td><a href='{session_link(s.session_id)}'>{h(s.session_id[:12])}</a>"
            f"{' (subagent)' if s.is_subagent else ''}</td><td>{h(s.first_ts[:16])}</td><td>{h(s.last_ts[:16])}</td>"
            f"<td>{h(s.branch)}</td><td>{s.turns}</td><td>{s.chunks}</td></tr>"
            for s in sorted(members, key=lambda s: s.first_ts, reverse=True))
        parts.append(f"<h2>{h(project)} · {h(agent)} ({len(members)})</h2><table><tr><th>session</th><th>first</th>"
                     f"<th>last</th><th>branch</th><th>turns</th><th>chunks</th></tr>{rows}</table>")
    return "".join(parts)


def block_html(block: BlockView, exit_code: int | None = None) -> str:
    """Text shown; thinking, tool calls and their results collapsed under a summary
    (the tool's name, a result's exit code, and the first line: its command or path)."""
    if block.block_type == "text":
        return f"<pre>{h(block.text)}</pre>"
    first = next((line.strip() for line in block.text.splitlines() if line.strip()), "")
    if len(first) > SUMMARY_CHARS:
        first = first[:SUMMARY_CHARS] + "…"
    name = f" {block.tool_name}" if block.tool_name else ""
    name += f" · exit {exit_code}" if exit_code is not None else ""
    return (f"<details class={h(block.block_type)}><summary>{h(block.block_type + name)}: <code>{h(first)}</code>"
            f"</summary><pre>{h(block.text)}</pre></details>")


def turn_html(turn: TurnView, exit_codes: dict[tuple[int, int], int] | None = None) -> str:
    """One turn, its anchor ``#turn-<seq>``; ``exit_codes``: (seq, block's place) → code."""
    exit_codes = exit_codes or {}
    return (f"<div class='turn role-{h(turn.role)}' id=turn-{turn.seq}><div class=meta><a href='#turn-{turn.seq}'>"
            f"#{turn.seq}</a> <b>{h(turn.role)}</b> {h(turn.ts)}</div>"
            + "".join(block_html(block, exit_codes.get((turn.seq, place))) for place, block in enumerate(turn.blocks))
            + "</div>")


def session_view(window: Window, first: int, per_page: int, exit_codes: dict[tuple[int, int], int]) -> str:
    pager = ["<div class=pager>"]
    if first > 0:
        pager.append(f"<a class=earlier href='{session_link(window.session_id, max(0, first - per_page))}'>"
                     f"← earlier</a>")
    if window.next_seq is not None:
        pager.append(f"<a class=later href='{session_link(window.session_id, window.next_seq)}'>later →</a>")
    shown = f"turns {window.turns[0].seq}–{window.turns[-1].seq} of {window.total}" if window.turns else ""
    pager.append(f"<span class=meta>{shown}</span></div>")
    head = f"<p class=meta><b>{h(window.harness)}</b> {h(window.workdir)} · session {h(window.session_id)}</p>"
    return head + "".join(pager) + "".join(turn_html(turn, exit_codes) for turn in window.turns) + "".join(pager)


# --- file history ------------------------------------------------------------------------------


def history_form(path: str, controls: str) -> str:
    return (f"<form class=filters method=get action='/history'><label class=q>file or folder"
            f"<input name=file value='{h(path)}' autofocus></label>{controls}"
            f"<label>&nbsp;<button type=submit>History</button></label></form>")


def history_view(history: History) -> str:
    parts = [f"<p class=meta>{history.turns} turn(s) in {history.sessions} session(s) touched "
             f"<code>{h(history.path)}</code>"
             + (f"; the newest {len(history.entries)} shown" if history.truncated else "") + "</p>"]
    if len(history.projects) > 1:
        parts.append(f"<p class=meta>in {len(history.projects)} projects: {h(', '.join(history.projects))}</p>")
    for e in history.entries:
        touched = ", ".join(f"{h(','.join(t.actions))} <code>{h(t.path)}</code>" for t in e.touches)
        parts.append(
            f"<div class=entry><div class=meta>[{h(e.ts)}] <b>{h(e.harness)}</b> {h(e.repo or e.workdir)}"
            f"{' · ' + h(e.branch) if e.branch else ''} · <a href='{turn_link(e.session_id, e.seq)}'>session "
            f"{h(e.session_id[:8])} turn {e.seq}</a> · {touched}</div>"
            + (f"<pre>{h(e.explanation)}</pre>" if e.explanation else "") + "</div>")
    return "".join(parts)


# --- overview ----------------------------------------------------------------------------------


def week_of(ts: str) -> str | None:
    """``2026-W18`` for an RFC 3339 timestamp; None when it has none."""
    try:
        year, week, _ = datetime.fromisoformat(ts.replace("Z", "+00:00")).isocalendar()
    except ValueError:
        return None
    return f"{year}-W{week:02d}"


def overview(status: dict[str, Any], sessions: list[SessionSummary]) -> str:
    """What `funes status` says, as a page, with the sessions per agent and per week."""
    rows = [("memory", f"{status['memory']} ({status['uri']})"),
            ("chunks", f"{status['chunks']:,} in {status['sessions']:,} sessions"),
            ("vectors", f"{status['embedded']:,}/{status['chunks']:,} ({status['dense_coverage']:.0%})"),
            ("backlog", ", ".join(f"{tier} {b['chunks']:,} chunks" for tier, b in status["backlog_by_tier"].items())
             or "none"),
            ("last index", status["last_indexed"] or "never"),
            ("model", f"{status['embedding_model']['model_id']} @ {status['embedding_model']['revision'][:12]}")]
    if status.get("damage"):
        rows.append(("damage", f"{status['damage']['summary']}: run funes repair"))
    reranker = status["reranker"]
    rows.append(("reranker", reranker["model"] if reranker["available"] else "off: " + reranker["reason"]))
    for remote in status.get("remotes", []):
        behind = ("up to date" if not remote["unpushed_chunks"] else
                  f"{remote['unpushed_chunks']} chunks in {remote['unpushed_sessions']} session(s) not pushed")
        rows.append(("push", f"{remote['remote']}: {behind} (last push {remote['pushed_at']})"))
    for release in status.get("releases", []):
        rows.append(("release", f"{release['tag']} ({release['date']}): {release['sessions']} sessions"))
    table = "".join(f"<tr><th>{h(name)}</th><td>{h(value)}</td></tr>" for name, value in rows)
    agents = "".join(
        f"<tr><td><a href='{href('/sessions', harness=harness)}'>{h(harness or '?')}</a></td>"
        f"<td>{counts['sessions']:,}</td><td>{counts['chunks']:,}</td></tr>"
        for harness, counts in status["harnesses"].items())
    weeks = Counter(week for week in (week_of(s.first_ts) for s in sessions) if week)
    most = max(weeks.values(), default=1)
    by_week = "".join(
        f"<tr><td>{h(week)}</td><td>{count}</td><td><div style='background:#2f81f7;height:.8em;"
        f"width:{max(1, round(200 * count / most))}px'></div></td></tr>" for week, count in sorted(weeks.items()))
    return (f"<table>{table}</table><h2>Sessions per agent</h2><table><tr><th>agent</th><th>sessions</th>"
            f"<th>chunks</th></tr>{agents}</table><h2>Sessions per week</h2><table><tr><th>week</th>"
            f"<th>sessions</th><th></th></tr>{by_week}</table>")
