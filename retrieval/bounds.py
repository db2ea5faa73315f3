"""What one `recall` or `get` may ask for, checked the same way by the CLI, the MCP
server and `--batch` lines.  No heavy imports: the MCP server declares its tools'
argument ranges with these before it answers `initialize`."""

from __future__ import annotations

from funes.errors import UsageError, bounded_int

# BM25 searches a query whole (the embedder reads its first 256 tokens): a 10 MB
# query held an MCP server for 43 s.
MAX_QUERY_CHARS = 8_000
MAX_K = 1_000
MAX_CANDIDATES = 1_000
MAX_NEIGHBORS = 50  # turns either side previewed per hit
DEFAULT_K = 8
# `recall`'s agent format packs its hits into a budget of tokens, counted as characters
# / 4: near what peers answer with, and far under the 25k tokens an agent's tool
# output limit refuses.
DEFAULT_BUDGET = 1_000
MIN_BUDGET = 200  # a hit's provenance and a few lines of its text
MAX_BUDGET = 25_000
CHARS_PER_TOKEN = 4
# recall's counts: the CLI's flag, the lowest and highest value.
RECALL_COUNTS = {"k": ("-k", 1, MAX_K), "candidates": ("--candidates", 1, MAX_CANDIDATES),
                 "neighbors": ("--neighbors", 0, MAX_NEIGHBORS), "budget": ("--budget", MIN_BUDGET, MAX_BUDGET)}


def check_counts(*, flags: bool = False, **counts: int) -> None:
    """A usage error naming the first of ``counts`` (k, candidates, neighbors,
    budget) out of its bounds, as the CLI's flag when ``flags``, else by name."""
    for name, value in counts.items():
        flag, low, high = RECALL_COUNTS[name]
        bounded_int(flag if flags else name, value, low, high)
MAX_WINDOW = 1_000  # turns either side one `get` reads
MAX_SEQ = 2**31 - 1  # a turn's seq is an int32 column
# A range read (`get SESSION --from N`): 20 turns unless told, and no more text than an
# agent's context takes in comfortably (the Rust funes's cap, near 40,000 characters).
RANGE_TURNS = 20
RANGE_MAX_CHARS = 40_000
# `scan`: needles are matched against every chunk, so their number and size are bounded.
MAX_NEEDLES = 20
MAX_NEEDLE_CHARS = 1_000
MAX_SCAN_CONTEXT = 2_000  # characters either side of a match
MAX_SCAN_LIMIT = 10_000  # matching blocks listed
MAX_HISTORY_LIMIT = 10_000  # turns `history` lists


def checked_query(query: str) -> str:
    """``query`` stripped, or a usage error when it is empty or longer than :data:`MAX_QUERY_CHARS`."""
    text = query.strip()
    if not text:
        raise UsageError("the query is empty: say what to recall")
    if len(text) > MAX_QUERY_CHARS:
        raise UsageError(f"the query is {len(text):,} characters long; the limit is {MAX_QUERY_CHARS:,}: "
                         "say what to recall in fewer words")
    return text


def whole(value: object) -> object:
    """A JSON number such as 5.0 as the integer it is; anything else (1e30, "5") as sent,
    for the bound check to refuse by name."""
    return int(value) if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53 else value
