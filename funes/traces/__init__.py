"""Agent traces: the common model and the helpers every parser shares.

The model (:mod:`funes.traces.model`: Session → Turn → Block, SourceUnit) and
the helpers parsers share (:mod:`funes.traces.common`, :mod:`funes.traces.jsonl`)
live here; each agent's own format lives in its folder under ``funes/agents/``
(see :mod:`funes.agents`), and discovery and parsing over every agent, which ask
the agent registry, in :mod:`funes.discovery` above both.  Nothing here names an
agent or imports ``funes.agents``.
"""

from funes.traces.model import (
    BLOCK_TYPES,
    TIER_NAMES,
    TIER_OF_BLOCK,
    Block,
    FileTouch,
    ParseWarning,
    Session,
    SourceUnit,
    Turn,
    session_key,
    split_session_key,
)

__all__ = [
    "BLOCK_TYPES",
    "TIER_NAMES",
    "TIER_OF_BLOCK",
    "Block",
    "FileTouch",
    "ParseWarning",
    "Session",
    "SourceUnit",
    "Turn",
    "session_key",
    "split_session_key",
]
