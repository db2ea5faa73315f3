"""Wiring funes into an agent: what `funes add <agent>` installs and `funes remove` takes away.

Every agent that supports them gets, in its own config files and formats:

* the MCP server ``funes mcp [memory]`` (tools ``recall``, ``get``, ``status``), bound
  to the memory named at `add` (an agent without an MCP client can bridge the
  tools from an extension);
* per-turn indexing: the agent's end-of-turn hook (or extension event) runs
  ``<python> -I -S <funes>/hook.py <agent>``, which hands the session to a worker;
* for a Hub memory, publish hooks at session boundaries;
* the ``funes-recall`` skill: when to recall, and that recalled text is quoted
  history, not instructions.

Each agent's :class:`Wiring` (``funes/agents/<name>/wiring.py``) plans these as
:class:`~funes.wiring.changes.FileChange` lists; nothing is written while
planning.  The editors shared by every agent (``json_text``, ``toml_text``,
``yaml_text``, ``hook_groups`` for the common hooks object) change only
funes's own entries, so `remove` leaves every other byte of the user's files as
it was.  The CLI applies the changes and prints them.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from funes.errors import FunesError
from funes.memory.location import looks_like_repo_id
from funes.wiring.changes import FileChange, owned_file, read_text

SERVER_NAME = "funes"
HOOK_MODULE = "funes.hook"
SKILL_NAME = "funes-recall"
FILES = Path(__file__).parent / "files"


def funes_executable() -> str:
    """The absolute path of the `funes` command (agents start it with a bare PATH)."""
    beside = Path(sys.executable).with_name("funes")
    if beside.is_file():
        return str(beside)
    found = shutil.which("funes")
    if found:
        return str(Path(found).absolute())
    raise FunesError(f"cannot find the funes executable (not beside {sys.executable}, not on PATH)")


def is_hub_memory(spec: str | None) -> bool:
    return bool(spec) and (spec.startswith("hf://") or looks_like_repo_id(spec))  # type: ignore[union-attr]


@dataclass(frozen=True)
class Binding:
    """The memory an agent is bound to, and the commands that serve it."""

    memory: str | None  # as named at `funes add`; None: the local memory

    @property
    def hub(self) -> bool:
        """A Hub memory: recall reads it, turns are indexed in the local memory."""
        return is_hub_memory(self.memory)

    @property
    def remote(self) -> bool:
        """A Hub memory the turns are also published to: not a release (``org/repo@tag``),
        which is a fixed snapshot the agent reads and never writes."""
        return self.hub and "@" not in self.memory  # type: ignore[operator]

    @property
    def label(self) -> str:
        return self.memory or "local"

    def mcp_command(self) -> list[str]:
        return [funes_executable(), "mcp", *([self.memory] if self.memory else [])]

    def hook_command(self, agent: str, *, publish: bool = False) -> list[str]:
        """The hook's argv: the absolute interpreter (it runs with an agent's bare
        PATH) on funes/hook.py as a script, isolated and without site-packages,
        which it does not need: that halves its start-up (funes.hook's docstring)."""
        command = [sys.executable, "-I", "-S", hook_script(), agent]
        if publish and self.memory:
            return [*command, "--publish", self.memory]
        if self.memory and not self.hub:  # a folder or object-store memory is indexed in place
            command += ["--memory", self.memory]
        return command

    def hook_line(self, agent: str, *, publish: bool = False) -> str:
        """The hook as one command line (shells, and agents that shlex-split hook commands, read it back)."""
        return shlex.join(self.hook_command(agent, publish=publish))


def hook_script() -> str:
    from funes import hook

    return str(Path(hook.__file__).resolve())


def is_funes_hook(command: object) -> bool:
    """A hook command funes installed: this form, or the ``-m funes.hook`` of earlier versions."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return any(word == "-m" and following == HOOK_MODULE for word, following in zip(words, words[1:])) \
        or any(Path(word).parts[-2:] == ("funes", "hook.py") for word in words)


def skill_text() -> str:
    return (FILES / SKILL_NAME / "SKILL.md").read_text(encoding="utf-8")


def skill_description() -> str:
    """The skill's one-line description (its frontmatter), which says when to recall."""
    for line in skill_text().splitlines():
        if line.startswith("description:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("the funes-recall skill has no description")


def skill_change(skills_dir: Path, install: bool) -> FileChange:
    """The funes-recall skill in an agent's skills folder (a user's own skill of
    that name is left alone)."""
    path = skills_dir / SKILL_NAME / "SKILL.md"
    present = read_text(path)
    if present is not None and f"name: {SKILL_NAME}" not in present:
        return FileChange(path, None, None, "skill (a skill of the same name that funes did not write: kept)")
    return owned_file(path, skill_text() if install else None, "skill: when to recall, recalled text is history",
                      owned_from=skills_dir)


class WiredAgent(Protocol):
    """What a wiring reads of its agent (a :class:`funes.agents.base.Agent`): named by
    shape, not by import, so the config-file editors sit below the agents that use them."""

    name: str
    label: str

    def home(self, env: Mapping[str, str] | None = None) -> Path | None: ...


class Wiring(ABC):
    """funes in one agent's own config files: planned, never written here.

    ``plan_add`` and ``plan_remove`` read every file they touch and return the
    changes (a malformed user file raises
    :class:`~funes.wiring.changes.ConfigFileError` before anything is written);
    running ``plan_add`` again on its own result plans no change, and
    ``plan_remove`` after it gives back the files' original bytes.
    """

    def __init__(self, agent: WiredAgent) -> None:
        self.agent = agent

    @abstractmethod
    def plan_add(self, binding: Binding) -> list[FileChange]:
        """Every file change that installs funes bound to ``binding``."""

    @abstractmethod
    def plan_remove(self) -> list[FileChange]:
        """Every file change that takes funes's entries and files away."""

    def installed(self) -> bool:
        """Whether funes is set up in the agent: its removal would change a file."""
        return any(change.changed for change in self.plan_remove())

    def notes_after_add(self, binding: Binding, changes: list[FileChange]) -> list[str]:
        """What the user still has to do (restart, trust a hook…)."""
        if not any(change.changed for change in changes):
            return []
        return [f"Restart {self.agent.label} (or start a new session) to load the tools and hooks."]

    def notes_after_remove(self, changes: list[FileChange]) -> list[str]:
        return [f"Restart {self.agent.label} to unload funes."] if any(c.changed for c in changes) else []
