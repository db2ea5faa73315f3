"""What a question asks for, and whether a chunk holds one.

A question about a session usually shares its words with many chunks: the
assistant saying it will check the Next.js version, the command that printed
it, the summary that mentions it, and the output that holds ``Next.js 15.5.2``.
Word overlap and meaning rank these close together; what tells the answer apart
is that it holds the *kind* of thing asked for.  Seven kinds are read from the
question's wording (English, the language of the questions funes is measured on):

* a **version** ("which version", "what release"): a dotted number, ``15.5.2``;
* a **port** ("on which port"): ``:3001`` or ``port 3001``;
* a **number** ("how many", "how long", "number of"): digits;
* a **place** ("where", "which file", "what folder", "which module"): a path
  (``src/app``) or a file name with a known extension (``page.tsx``);
* an **error** ("what error", "why did it fail", "which exception", "warning"):
  an error word (``error``, ``failed``, ``cannot``, ``not found``, ``traceback``)
  or an errno code (``EISDIR``);
* a **time** ("When did …", "what date", "how long ago"; a "when" that opens a
  clause, "when the build failed, …", asks for no time): a month or a weekday, a
  day said relative to the talk ("yesterday", "last week", "two days ago") or a
  year;
* **the user's words** ("what did I ask for", "which layout did I pick", "what did
  the user suspect", "what was the agent asked to finish"; "when I asked …, what
  did the agent do" asks for the agent's doing): a text the user wrote (not a
  subagent's prompt, which its launching agent wrote), or the user's answer to a
  question the agent put through a tool (each agent names its own:
  ``Agent.user_answer_tools``).  Sessions are mostly the agent's output, so the
  user's few turns are outranked by the agent's talk about the same request.

:class:`funes.retrieval.ranking.Ranking` weighs a candidate holding a kind the
question asks for by ``1 + answer_weight``; a question that asks for none of
them is ranked as before.  The kinds and the weight were chosen on all three dev
sets left out by session (BENCHMARKS.md, "Decisions", "What a question asks for").

Every pattern is linear in the text it reads (no nested repetition), so a
hostile chunk or question costs no more than its length.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

_EXTENSIONS = ("py|pyi|ts|tsx|js|jsx|mjs|cjs|json|md|ex|exs|rs|go|rb|java|kt|swift|c|h|cpp|hpp|cs|php|toml|yaml|"
               "yml|lock|env|sh|css|scss|html|sql|txt|cfg|ini|xml|vue|svelte")


def _word_starting(*words: str) -> str:
    """A pattern for any of ``words``, in any case, at the start of a word: what
    ``(?i:\\b(w1|w2|…))`` matches, written to begin with the words' first letters
    so that the regex engine skips to a possible first letter instead of trying
    every position of a chunk (a third less time over a recall's candidates)."""
    letters = "".join(sorted({ch for word in words for ch in (word[0].lower(), word[0].upper())}))
    rests = "|".join(f"(?<=[{word[0].lower()}{word[0].upper()}])(?i:{re.escape(word[1:])})" for word in words)
    return rf"[{letters}](?<!\w[{letters}])(?:{rests})"


@dataclass(frozen=True)
class AnswerType:
    """One kind of answer: the wording of a question that asks for it (``asked``)
    and whether a chunk (a row: its ``text``, ``role``, ``block_type``,
    ``tool_name`` and ``is_subagent``) holds one (``held``)."""

    name: str
    asked: re.Pattern[str]
    held: Callable[[Mapping[str, Any]], bool]


def _shows(pattern: re.Pattern[str]) -> Callable[[Mapping[str, Any]], bool]:
    """A chunk holds the kind when its text matches ``pattern``."""
    return lambda row: pattern.search(row["text"] or "") is not None


@cache
def user_answer_tools() -> frozenset[str]:
    """Every agent's tools whose result is the user's answer (``Agent.user_answer_tools``),
    read from the registry when a question first asks for the user's words."""
    from funes.agents import all_agents

    return frozenset(tool for agent in all_agents() for tool in agent.user_answer_tools)


def _users_words(row: Mapping[str, Any]) -> bool:
    if row["block_type"] == "tool_result":
        return row["tool_name"] in user_answer_tools()
    # A subagent's "user" is the agent that launched it: its prompt is the agent's words.
    return row["role"] == "user" and row["block_type"] == "text" and not row["is_subagent"]


ANSWER_TYPES: tuple[AnswerType, ...] = (
    AnswerType("version", re.compile(r"\b(versions?|releases?)\b", re.I),
               _shows(re.compile(r"\bv?\d+\.\d+(\.\d+)?\b"))),
    AnswerType("port", re.compile(r"\bports?\b", re.I),
               _shows(re.compile(r":\d{2,5}\b|\b[Pp]ort \d{2,5}\b"))),
    AnswerType("number", re.compile(r"\b(how (many|much|long|often|big)|what percentage|number of|count)\b", re.I),
               _shows(re.compile(r"\b\d+\b"))),
    AnswerType("place", re.compile(r"\b(where|(which|what) (files?|folders?|director(y|ies)|modules?|paths?))\b",
                                   re.I),
               _shows(re.compile(rf"\w/[\w.]|\w\.(?:{_EXTENSIONS})\b"))),
    AnswerType("error", re.compile(r"\b(errors?|fail(s|ed|ing|ure)?|exceptions?|crash(ed|es)?|broke|broken|"
                                   r"warnings?)\b", re.I),
               _shows(re.compile(_word_starting("error", "failed", "failure", "exception", "cannot", "can't",
                                                "not found", "traceback", "warning") + r"|\bE[A-Z]{3,}\b"))),
    AnswerType("time", re.compile(r"^\W*when (did|was|were|is|are|will|do|does|has|have|had)\b"
                                  r"|\bwhat (date|day|time|year|month)\b|\bhow long ago\b", re.I),
               _shows(re.compile(r"\b(January|February|March|April|May|June|July|August|September|October|November"
                                 r"|December|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b"
                                 r"|(?i:\b(yesterday|tonight|tomorrow|today|weekend|ago|last (week|month|year|night"
                                 r"|summer|winter|spring|fall)|next (week|month|year))\b)|\b(19|20)\d\d\b"))),
    AnswerType("user", re.compile(r"\bdid (I|the user) (ask|want|pick|choose|insist|request|suggest|prefer|decide|"
                                  r"suspect|say|tell|reject|approve|accept|agree|mention|propose|need|expect|answer|"
                                  r"reply|complain|go with|settle on|opt for)\b"
                                  r"|\bwas (the )?[\w -]{0,40}\basked to\b", re.I),
               _users_words),
)


def asked_types(question: str) -> tuple[AnswerType, ...]:
    """The kinds of answer ``question`` asks for (none for most questions)."""
    return tuple(kind for kind in ANSWER_TYPES if kind.asked.search(question))


def holds_answer(row: Mapping[str, Any], kinds: Sequence[AnswerType]) -> bool:
    """Whether the chunk ``row`` (its ``text``, ``role``, ``block_type``,
    ``tool_name`` and ``is_subagent``) holds an answer of one of ``kinds``."""
    return any(kind.held(row) for kind in kinds)
