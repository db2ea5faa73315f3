"""Secrets and inline payloads: what never reaches the memory or the Hub.

funes stores agent transcripts verbatim, and transcripts carry env dumps, config files
and tokens.  Three tools live here:

* :func:`elide_data_uris` cuts inline base64 payloads (pasted images, ``data:`` URIs)
  down to ``data:<media>;base64,[elided]``.  Run it first, on every text, before
  anything is scanned, embedded or stored.
* :func:`redact` replaces every secret in a block with ``[REDACTED:<rule>]`` at index
  time, or tells the caller to drop the block when it cannot do that completely.
* :func:`scan_for_egress` is the fail-closed gate before publication: anything that
  could not be scanned counts as not clean.

Scanning uses kingfisher (``kingfisher_sdk``): its built-in catalog plus the narrow
rules in ``secret_rules.yaml``.  ``<rule>`` in a placeholder is the rule id without
its namespace (``betterleaks.github-pat`` → ``github-pat``,
``funes.env-password`` → ``env-password``, ``veles.secrets/x`` → ``x``), see
:func:`rule_label`.

Agents often read JSON (other transcripts, API responses), so a secret can sit inside
a JSON string, where ``\\n`` glues an env line to the word before it and ``\\"``
wraps a quoted value.  Each text is therefore scanned as is and, when it holds
backslash escapes, once or twice more with JSON string escapes decoded; a secret is
then replaced in every escaped form in which it occurs.

Nothing here logs or returns a secret: findings leave this module only as rule ids
and counts.
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from funes.config import cache_dir
from funes.errors import FunesError

if TYPE_CHECKING:
    from kingfisher_sdk import Scanner

RULES_FILE = Path(__file__).with_name("secret_rules.yaml")

# --------------------------------------------------------------------------- data: URIs

# `\b` keeps `metadata:` and `_data:` out; the media part (type and parameters) may
# not hold whitespace, `,` or quotes, and is bounded so a long run of `data:data:...`
# cannot make the search quadratic.
_DATA_URI = re.compile(r"""(?P<head>\bdata:[^\s,"']{0,255};base64,)[A-Za-z0-9+/_-]+={0,2}""")

ELIDED = "[elided]"


def elide_data_uris(text: str) -> str:
    """Replace the payload of every inline ``data:<media>;base64,<payload>`` with ``[elided]``."""
    if "data:" not in text:
        return text
    return _DATA_URI.sub(rf"\g<head>{ELIDED}", text)


# --------------------------------------------------------------------------- the scanner


class SecretScannerUnavailable(FunesError):
    """The secret scanner could not be imported or its rules could not be compiled."""


def rule_cache_dir() -> Path:
    """Where compiled rules are cached: ``$KF_RULE_CACHE_DIR`` (kingfisher's own
    setting, so CI can warm one cache for every run) or ``<cache_dir()>/kingfisher``."""
    explicit = os.environ.get("KF_RULE_CACHE_DIR")
    return Path(explicit).expanduser() if explicit else cache_dir() / "kingfisher"


def _writable_cache_dir() -> Path | None:
    directory = rule_cache_dir()
    try:
        # kingfisher ignores cache directories other users could write to.
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return directory if os.access(directory, os.W_OK | os.X_OK) else None


def _build_scanner() -> Scanner:
    try:
        from kingfisher_sdk import Rules, Scanner
    except ImportError as exc:
        raise SecretScannerUnavailable(f"the secret scanner is not installed: {exc}") from exc
    rules_cache = _writable_cache_dir()
    try:
        rules = Rules([RULES_FILE], cache=rules_cache is not None, cache_dir=rules_cache)
        # No policy: the CLI's context filters (inline `ignore` comments, markup
        # context) would let text inside a transcript switch detection off.
        return Scanner(rules, base64=True, dedup=False, redact=False)
    except Exception as exc:
        raise SecretScannerUnavailable(f"the secret rules failed to compile: {exc}") from exc


_scanner: Scanner | None = None
_scanner_lock = threading.Lock()


def get_scanner() -> Scanner:
    """The process-wide scanner, compiled on first use (about 5 s, 0.3 s from the cache).

    Raises :class:`SecretScannerUnavailable`; a failure is not remembered, so the next
    call tries again.
    """
    global _scanner
    if _scanner is None:
        with _scanner_lock:
            if _scanner is None:
                _scanner = _build_scanner()
    return _scanner


def start_compiling_scanner() -> None:
    """Compile the scanner in a background thread: kingfisher compiles outside the
    GIL, so a first index overlaps its 3 s (the rules not cached yet) with opening
    the memory.  A failure is left for :func:`get_scanner` to raise where it is used."""
    if _scanner is not None:
        return

    def compile_quietly() -> None:
        try:
            get_scanner()
        except SecretScannerUnavailable:
            pass

    threading.Thread(target=compile_quietly, name="funes-secret-rules", daemon=True).start()


def rule_label(rule_id: str) -> str:
    """The short, stable name of a rule used in placeholders: its id without the namespace."""
    _, _, name = rule_id.partition(".")
    return (name or rule_id).removeprefix("secrets/")


def placeholder(rule_id: str) -> str:
    return f"[REDACTED:{rule_label(rule_id)}]"


# Scanning text that was already redacted must not flag the placeholders themselves
# (a credential URI's password slot happily matches `[REDACTED:...]`).
_PLACEHOLDERS_ONLY = re.compile(r"(?:\[REDACTED:[A-Za-z0-9_./-]+\])+")

# --------------------------------------------------------------------------- finding secrets

# A secret inside a JSON string inside a JSON string (a transcript line that an agent
# printed) is two levels deep; deeper nesting is not worth a third scan.
MAX_ESCAPE_DEPTH = 2

# The escapes that matter for finding secrets; `\b`, `\f` and `\uXXXX` stay as they are.
_JSON_ESCAPES = ((b"\\n", b"\n"), (b"\\t", b"\t"), (b"\\r", b"\r"), (b'\\"', b'"'), (b"\\/", b"/"))
# 0xFF never occurs in UTF-8, so it can stand in for `\\` while the others are decoded.
_BACKSLASH_STANDIN = b"\xff"


def _json_unescape(data: bytes) -> bytes:
    """Decode the common JSON string escapes in UTF-8 ``data``.

    Works on bytes: chained bytes.replace is several times faster than a regex with a
    callback, and than str.replace on text with wide characters.
    """
    data = data.replace(b"\\\\", _BACKSLASH_STANDIN)
    for escaped, plain in _JSON_ESCAPES:
        data = data.replace(escaped, plain)
    return data.replace(_BACKSLASH_STANDIN, b"\\")


def _views(text: str) -> list[bytes]:
    """``text`` as UTF-8 and its JSON-unescaped forms, outermost first."""
    # Lone surrogates (from `\ud800` in JSON) cannot be UTF-8 encoded; pass them
    # through so the rest of the text is still scanned.
    views = [text.encode("utf-8", "surrogatepass")]
    while len(views) <= MAX_ESCAPE_DEPTH and b"\\" in views[-1]:
        unescaped = _json_unescape(views[-1])
        if unescaped == views[-1]:
            break
        views.append(unescaped)
    return views


def _escaped_forms(secret: str) -> set[str]:
    """How ``secret`` can be spelled in text, down to :data:`MAX_ESCAPE_DEPTH` JSON levels."""
    forms = {secret}
    level = {secret}
    for _ in range(MAX_ESCAPE_DEPTH):
        level = {json.dumps(form, ensure_ascii=ascii_only)[1:-1] for form in level for ascii_only in (True, False)}
        forms |= level
    return forms


def _canonical(secret: str) -> str:
    """``secret`` with JSON string escapes decoded, so one credential found both in the
    text and in an unescaped view counts once."""
    data = secret.encode("utf-8", "surrogatepass")
    for _ in range(MAX_ESCAPE_DEPTH):
        data = _json_unescape(data)
    return data.decode("utf-8", "surrogatepass")


@dataclass
class _Found:
    """One credential found by one rule.  Private, so secrets stay in this module.

    ``spellings`` are the secret as each view showed it; ``count`` is its number of
    occurrences in the view where it occurs most often.
    """

    rule_id: str
    visible: bool
    base64_decoded: bool
    spellings: set[str] = field(default_factory=set)
    count: int = 0


def _find(scanner: Scanner, text: str) -> list[_Found]:
    """Every finding in ``text`` and its unescaped views, helpers included."""
    found: dict[tuple[str, str], _Found] = {}
    for view in _views(text):
        in_view: Counter[tuple[str, str]] = Counter()
        for finding in scanner.scan(view):
            secret = finding.secret
            if _PLACEHOLDERS_ONLY.fullmatch(secret):
                continue
            key = (finding.rule_id, _canonical(secret))
            entry = found.setdefault(key, _Found(finding.rule_id, finding.visible, finding.is_base64_encoded))
            entry.spellings.add(secret)
            entry.base64_decoded |= finding.is_base64_encoded
            in_view[key] += 1
        for key, count in in_view.items():
            found[key].count = max(found[key].count, count)
    return list(found.values())


# --------------------------------------------------------------------------- batch pre-check

# Scanning many texts joined costs one native call instead of one per text (5-10 µs
# each, which halves throughput on typical blocks and cuts it several-fold on
# 200-byte ones).  A scan that finds anything costs about twice as much, over the
# whole input, so groups stay small enough that one secret does not slow a session.
BATCH_BYTES = 256 * 1024
_SEPARATOR = b"\n"


def _suspects(scanner: Scanner, texts: Sequence[str]) -> set[int]:
    """Indices of the texts that a joint scan finds anything in.

    A cheap pre-check; only suspects are then scanned on their own.  It cannot miss a
    text that a scan on its own would flag: the texts are joined with a newline, which
    every catalog rule accepts as a boundary wherever it accepts the start or end of
    the input; the scanner does not deduplicate; and a match that runs across a
    separator makes every text it touches a suspect.
    """
    suspects: set[int] = set()
    for group in _groups(texts):
        views = [(index, _views(texts[index])) for index in group]
        for level in range(MAX_ESCAPE_DEPTH + 1):
            members = [(index, text_views[level]) for index, text_views in views if len(text_views) > level]
            if not members:
                break
            starts = list(itertools.accumulate((len(data) + len(_SEPARATOR) for _, data in members[:-1]), initial=0))
            for finding in scanner.scan(_SEPARATOR.join(data for _, data in members)):
                if _PLACEHOLDERS_ONLY.fullmatch(finding.secret):
                    continue
                location = finding.location
                first = bisect.bisect_right(starts, location["start_offset"]) - 1
                last = bisect.bisect_right(starts, max(location["end_offset"] - 1, location["start_offset"])) - 1
                suspects.update(members[member][0] for member in range(first, last + 1))
    return suspects


def _groups(texts: Sequence[str]) -> Iterator[list[int]]:
    """Indices of ``texts`` in runs of about :data:`BATCH_BYTES`."""
    group: list[int] = []
    size = 0
    for index, text in enumerate(texts):
        if group and size + len(text) > BATCH_BYTES:
            yield group
            group, size = [], 0
        group.append(index)
        size += len(text)
    if group:
        yield group


# --------------------------------------------------------------------------- redaction


@dataclass(frozen=True)
class Redaction:
    """The outcome of :func:`redact`.

    ``text`` is the redacted text, or None when the block must be dropped (a secret
    that could not be located, or a secret still found after redaction).
    ``findings`` counts findings per rule id, helpers included.
    """

    text: str | None
    findings: Counter[str] = field(default_factory=Counter)

    @property
    def dropped(self) -> bool:
        return self.text is None


def redact(text: str) -> Redaction:
    """Replace every secret in ``text`` with ``[REDACTED:<rule>]``, or drop the text.

    Every finding counts, helpers included (kingfisher reports an AWS secret key only
    as an invisible helper of its key id).  A secret is replaced raw and in each
    JSON-escaped form in which it occurs.  The result is scanned again; if anything is
    still found, or a finding cannot be located in the text (a secret decoded from
    base64, a spelling no escape explains), the text is dropped, never half-redacted.
    Apply :func:`elide_data_uris` first.

    Raises :class:`SecretScannerUnavailable`, and lets any error of the scanner
    propagate: either way the text must not be stored.
    """
    return _redact(get_scanner(), text)


def redact_many(texts: Sequence[str]) -> list[Redaction]:
    """:func:`redact` for each text, in order, with the same results.

    Faster when there are many texts: they are first scanned together, and only those
    with findings are then redacted one by one (about 2x on typical transcript blocks,
    5x on 200-byte ones).
    """
    scanner = get_scanner()
    suspects = _suspects(scanner, texts)
    return [_redact(scanner, text) if index in suspects else Redaction(text) for index, text in enumerate(texts)]


def _label_order(found: _Found) -> tuple[bool, bool, str]:
    # When several rules find the same string, name it after a visible, specific rule.
    return (not found.visible, "generic" in found.rule_id, found.rule_id)


def _count_by_rule(findings: Iterable[_Found]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for found in findings:
        counts[found.rule_id] += found.count
    return counts


def _redact(scanner: Scanner, text: str) -> Redaction:
    findings = _find(scanner, text)
    if not findings:
        return Redaction(text)
    counts = _count_by_rule(findings)
    spans: list[tuple[int, int, str]] = []
    for found in sorted(findings, key=_label_order):
        label = placeholder(found.rule_id)
        forms = {form for spelling in found.spellings if spelling for form in _escaped_forms(spelling)}
        located = False
        for form in forms:
            start = text.find(form)
            while start != -1:
                located = True
                spans.append((start, start + len(form), label))
                start = text.find(form, start + 1)
        if found.base64_decoded or not located:
            return Redaction(None, counts)
    redacted = _replace_spans(text, spans)
    if _find(scanner, redacted):
        return Redaction(None, counts)
    return Redaction(redacted, counts)


def _replace_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    """Replace each run of overlapping spans with the label of its first span.

    The sort is stable, so among spans starting together the first by
    :func:`_label_order` names the run.
    """
    pieces: list[str] = []
    replaced_to = 0
    for start, end, label in sorted(spans, key=lambda span: span[0]):
        if start < replaced_to:
            replaced_to = max(replaced_to, end)
            continue
        pieces += (text[replaced_to:start], label)
        replaced_to = end
    pieces.append(text[replaced_to:])
    return "".join(pieces)


# --------------------------------------------------------------------------- egress gate

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class EgressReport(Generic[Key]):
    """What the publication gate found.  Holds rule ids and counts, never secrets.

    ``flagged`` maps each key with findings to its count of visible findings per rule
    id (a helper found alone, such as an AWS secret key with no key id near it, counts
    as itself).  ``failed`` maps each key that could not be scanned to the reason.
    """

    scanned: int
    flagged: dict[Key, Counter[str]]
    failed: dict[Key, str]

    @property
    def clean(self) -> bool:
        return not self.flagged and not self.failed

    @property
    def counts(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for per_rule in self.flagged.values():
            total.update(per_rule)
        return total

    def summary(self) -> str:
        """One line for logs and error messages."""
        if self.clean:
            return f"no secrets found in {self.scanned} texts"
        parts = []
        if self.flagged:
            rules = ", ".join(f"{rule_label(rule)}: {n}" for rule, n in sorted(self.counts.items()))
            parts.append(f"secrets in {len(self.flagged)} of {self.scanned} texts ({rules})")
        if self.failed:
            reasons = sorted(set(self.failed.values()))
            parts.append(f"{len(self.failed)} texts could not be scanned ({'; '.join(reasons)})")
        return "; ".join(parts)


def scan_for_egress(texts: Iterable[tuple[Key, str]]) -> EgressReport[Key]:
    """Scan everything about to leave the machine; fail closed.

    Each text is scanned on its own, without the joint pre-check of
    :func:`redact_many`: this is the last gate, so it relies on nothing but the scanner.
    If the scanner cannot be loaded every text fails; if it raises on one text, that
    text fails and the rest are still scanned, so the report is complete.
    """
    try:
        scanner: Scanner | None = get_scanner()
        unavailable = ""
    except SecretScannerUnavailable as exc:
        scanner, unavailable = None, str(exc)
    scanned = 0
    flagged: dict[Key, Counter[str]] = {}
    failed: dict[Key, str] = {}
    for key, text in texts:
        scanned += 1
        if scanner is None:
            failed[key] = unavailable
            continue
        try:
            findings = _find(scanner, text)
        except Exception as exc:
            # The type only: a message could quote the input.
            failed[key] = f"the scanner raised {type(exc).__name__}"
            continue
        if findings:
            flagged[key] = _count_by_rule([found for found in findings if found.visible] or findings)
    return EgressReport(scanned, flagged, failed)
