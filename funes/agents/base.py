"""The agent contract: everything funes knows about one coding agent.

One :class:`Agent` subclass per agent, in its own folder
(``funes/agents/<name>/__init__.py`` defines ``AGENT``) or in a third-party
package registered under the ``funes.agents`` entry-point group.  Nothing
outside an agent's definition names it: discovery, detection, parsing, hooks,
``funes add``/``remove``/``ask``/``status`` all ask the registry
(:mod:`funes.agents.registry`).

Only the identity attributes and :meth:`Agent.discover`/:meth:`Agent.parse`
are required; the rest has defaults that fit an agent funes only reads.
"""

from __future__ import annotations

import importlib
import os
from abc import ABC
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from funes.traces.model import Session, SourceUnit

if TYPE_CHECKING:
    from funes.wiring import Wiring


class Agent(ABC):
    """A coding agent whose transcripts funes reads, and maybe wires into.

    Identity (class attributes):

    * ``name``: as typed (`funes add <name>`, `--harness <name>`, the hook's
      ``python -m funes.hook <name>``);
    * ``harness``: the value stored in every row of its sessions (the Rust
      funes's name for the agents both read, so either reads the other's memory);
    * ``label``: the agent as people call it, in messages;
    * ``aliases``: other spellings accepted wherever a name is.

    Homes: ``home_env`` names the environment variable that moves the agent's
    home, ``home_default`` the home relative to the user's home folder;
    ``swept`` says whether a bare `funes index` reads :meth:`roots` (False for an
    import format read only by path).

    Parsing: ``parser`` names a module with ``discover(root) ->
    Iterator[SourceUnit]`` and ``parse(unit) -> Session`` (the shape of
    ``funes/agents/<name>/parser.py``), imported on first use; or override
    :meth:`discover` and :meth:`parse`.
    """

    name: ClassVar[str]
    harness: ClassVar[str]
    label: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    home_env: ClassVar[str | None] = None
    home_default: ClassVar[str | None] = None
    swept: ClassVar[bool] = True
    parser: ClassVar[str | None] = None
    # `funes ask`: the agent's CLI run non-interactively, prompt on stdin, with its
    # tools, MCP servers, hooks and saved sessions off (executable first).
    ask_command: ClassVar[tuple[str, ...] | None] = None
    # Tools whose result is the user's own answer to a question the agent put (the
    # user's words, not a program's output): recall weighs them as the user's turns
    # for a question about what the user asked or chose (retrieval/answer_types.py).
    user_answer_tools: ClassVar[frozenset[str]] = frozenset()

    # ------------------------------------------------------------------ homes
    def home(self, env: Mapping[str, str] | None = None) -> Path | None:
        """The agent's home: ``$<home_env>`` when set in ``env`` (default: this
        process's environment), else ``~/<home_default>``; None for none."""
        env = os.environ if env is None else env
        value = env.get(self.home_env) if self.home_env else None
        if value:
            return Path(value).expanduser()
        return Path.home() / self.home_default if self.home_default else None

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        """Where the agent keeps transcripts on this machine (may not exist)."""
        home = self.home(env)
        return [home] if home is not None else []

    # ------------------------------------------------------------------ parsing
    def parser_module(self) -> ModuleType:
        if self.parser is None:
            raise NotImplementedError(f"{type(self).__name__} names no parser module and does not override "
                                      "discover() and parse()")
        return importlib.import_module(self.parser)

    def discover(self, root: Path) -> Iterator[SourceUnit]:
        """The units under ``root`` (a home, any folder inside it, or one file)."""
        return self.parser_module().discover(root)

    def parse(self, unit: SourceUnit) -> Session:
        """A unit's session; raises :class:`funes.errors.TraceReadError` when it
        cannot be read now (it is retried), never for a malformed record (that is
        a warning on the session)."""
        return self.parser_module().parse(unit)

    def is_subagent_unit(self, unit: SourceUnit) -> bool:
        """Whether a unit holds a subagent's transcript (indexed after main
        sessions), known from its path alone."""
        return False

    # ------------------------------------------------------------------ detection (`funes index PATH`)
    def claims_location(self, path: Path) -> int:
        """How surely ``path`` is this agent's, from where it is and what it is
        named (no content read): 0 not at all; 1 a name pattern or a folder
        holding files named like the agent's; 2 inside the agent's home layout;
        3 a file type only this agent writes.  The highest claim wins.
        Default: 2 inside :meth:`home` as this process's environment sets it."""
        home = self.home()
        return 2 if home is not None and path.expanduser().absolute().is_relative_to(home.absolute()) else 0

    def claims_content(self, path: Path, first_record: Mapping[str, Any] | None) -> int:
        """How surely a file is this agent's from its content, asked only when no
        agent claims the location: ``first_record`` is the file's first JSON
        object when it is JSON Lines (for a folder, that of its first ``.jsonl``
        file), else None.  0 not at all; 1 it could be; 2 a record only this agent
        writes."""
        return 0

    # ------------------------------------------------------------------ hooks
    def hook_units(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> list[SourceUnit]:
        """The units of the one session a hook payload names.  ``payload`` holds
        the short fields of the JSON the agent sent its hook (``funes.hook`` keeps
        strings, numbers and short string lists, and those of an object one level
        down as ``<name>.<field>``), ``env`` the hook process's
        ``*_HOME``/``*_DIR`` variables.  Raises ValueError when the payload names
        no session that exists (logged by the worker).  Default: the transcript
        at ``transcript_path``."""
        path = payload.get("transcript_path")
        if not isinstance(path, str) or not path:
            raise ValueError(f"the {self.name} payload names no transcript_path")
        transcript = Path(path)
        if not transcript.is_file():
            raise ValueError(f"no transcript at {transcript}")
        return list(self.discover(transcript))

    def hook_session(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> str:
        """What names the session in a payload: hook requests with the same value
        are indexed once (a burst of turns of one session)."""
        named = payload.get("transcript_path") or payload.get("session_id")
        return named if isinstance(named, str) else ""

    # ------------------------------------------------------------------ wiring (`funes add` / `remove`)
    def wiring(self) -> Wiring | None:
        """How funes is installed in this agent (MCP server, hooks, skill), or
        None when funes only reads it."""
        return None


class SessionIdHookAgent(Agent):
    """An agent whose hook payload names its session by id, not by transcript
    file: the session is looked up by id under the roots the hook's environment
    names, and hook requests of one session in one home are indexed once."""

    def hook_units(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> list[SourceUnit]:
        session_id = payload.get("session_id")
        if not isinstance(session_id, str) or not session_id:
            raise ValueError(f"the {self.label} payload names no session_id")
        units = [unit for root in self.roots(env) if root.exists()
                 for unit in self.discover(root) if unit.session_id == session_id]
        if not units:
            raise ValueError(f"no {self.label} session {session_id!r} under {', '.join(map(str, self.roots(env)))}")
        return units[:1]

    def hook_session(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> str:
        return f"{self.home(env)}:{payload.get('session_id')}"
