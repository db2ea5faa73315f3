"""Planned changes to an agent's files, applied only once every one is known.

`funes add` and `funes remove` first read and edit every file in memory; a
malformed user config stops them before anything is written.  Then each file
whose bytes change is replaced atomically (temporary file + rename: the agent
may be running and reading it), keeping its permissions.

Folders that writing a file had to create (an agent's skills folder, a config
folder the agent never made) are recorded in ``$FUNES_HOME/integrations/
created-folders.json``; deleting funes's last file in one removes it again, so
`funes remove` leaves no empty folder that `funes add` made.  A folder that holds
anything else by then is the user's and stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from funes.config import funes_home
from funes.errors import FunesError
from funes.files import write_atomically


class ConfigFileError(FunesError):
    """A user's config file that funes will not overwrite (it does not parse, or
    has a shape funes cannot extend safely)."""

    exit_code = 1


@dataclass(frozen=True)
class FileChange:
    """One file's bytes before and after (``None``: absent), and what changed in
    words for the summary."""

    path: Path
    before: bytes | None
    after: bytes | None
    what: str
    mode: int | None = None  # permissions for a created file (e.g. 0o600)
    # Deleting the file also removes the folders it leaves empty, up to this one (excluded):
    # funes's own folders go with their last file, the agent's stay.
    prune_up_to: Path | None = None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def verb(self) -> str:
        if not self.changed:
            return "unchanged"
        if self.before is None:
            return "created"
        return "deleted" if self.after is None else "updated"


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigFileError(f"cannot read {display(path)}: {exc.strerror or exc}") from exc


def read_text(path: Path) -> str | None:
    """A config file's text, or None when it does not exist."""
    raw = read_bytes(path)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"{display(path)} is not UTF-8 text ({exc.reason} at byte {exc.start});"
                              " funes changed nothing") from exc


def text_change(path: Path, before: str | None, after: str | None, what: str, mode: int | None = None) -> FileChange:
    return FileChange(path, None if before is None else before.encode("utf-8"),
                      None if after is None else after.encode("utf-8"), what, mode)


def document_change(document: Any, what: str, mode: int | None = None) -> FileChange:
    """The change an edited config document (JsonText, TomlText, YamlText) makes
    to its file: none without edits; the file deleted when funes's edits left it
    empty (funes created it, or its last entries were funes's)."""
    if document.text == document.initial_text:
        after = document.original
    else:
        after = document.text if document.data else None
    return text_change(document.path, document.original, after, what, mode)


def owned_file(path: Path, content: str | None, what: str, *, owned_from: Path) -> FileChange:
    """A file funes owns outright, in folders it owns below ``owned_from``: written
    whole, or deleted (with the folders it empties) when ``content`` is None."""
    return FileChange(path, read_bytes(path), None if content is None else content.encode("utf-8"), what,
                      prune_up_to=owned_from)


def apply(changes: list[FileChange]) -> None:
    created = _created_folders()
    recorded = set(created)
    for change in changes:
        if not change.changed:
            continue
        if change.after is None:
            change.path.unlink(missing_ok=True)
            if change.prune_up_to is not None:
                _remove_empty_folders(change.path.parent, change.prune_up_to)
            _remove_created_folders(change.path.parent, created)
        else:
            created |= _missing_folders(change.path.parent)
            write_atomically(change.path, change.after, change.mode)
    if created != recorded:
        _record_created_folders(created)


def _created_folders_file() -> Path:
    return funes_home() / "integrations" / "created-folders.json"


def _created_folders() -> set[str]:
    import json

    try:
        return set(json.loads(_created_folders_file().read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):  # none yet, or unreadable: forget nothing the user owns
        return set()


def _record_created_folders(created: set[str]) -> None:
    import json

    path = _created_folders_file()
    if created:
        write_atomically(path, json.dumps(sorted(created), indent=1).encode("utf-8"), 0o600)
        return
    path.unlink(missing_ok=True)
    _remove_empty_folders(path.parent, funes_home())


def _missing_folders(folder: Path) -> set[str]:
    """``folder`` and its ancestors that do not exist yet, outside funes's own home
    (whose folders go with their last file: ``prune_up_to``)."""
    own = funes_home()
    missing = set()
    while not folder.exists() and folder != folder.parent:
        if folder != own and own not in folder.parents:
            missing.add(str(folder))
        folder = folder.parent
    return missing


def _remove_created_folders(folder: Path, created: set[str]) -> None:
    """Remove ``folder`` and its ancestors while funes created them and they are empty."""
    while str(folder) in created:
        if folder.exists():
            try:
                folder.rmdir()
            except OSError:  # it holds something else now: the user's, so it stays
                return
        created.discard(str(folder))
        folder = folder.parent


def _remove_empty_folders(folder: Path, stop: Path) -> None:
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty, or already gone
            return
        folder = folder.parent


def display(path: Path) -> str:
    """A path as the summary shows it: ``~/…`` under the home folder."""
    home = Path.home()
    try:
        return "~/" + path.relative_to(home).as_posix()
    except ValueError:
        return str(path)


def summary(changes: list[FileChange]) -> list[str]:
    """One line per file funes changed: ``updated ~/.agent/config.json: MCP server …``."""
    return [f"  {change.verb} {display(change.path)}: {change.what}" for change in changes if change.changed]


# A location inside a parsed config document: keys and list indexes from the root.
KeyPath = tuple[str | int, ...]
# Marks "no value here" where None is a legitimate value.
MISSING = object()


def dotted(path: KeyPath) -> str:
    return ".".join(str(p) for p in path)


def value_at(data: Any, path: KeyPath) -> Any:
    for part in path:
        data = data[part]
    return data
