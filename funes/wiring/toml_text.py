"""Edit a TOML config file's text in place, touching only the tables funes owns.

funes's entries in a TOML file are whole tables (``[mcp_servers.funes]``), or
one element of an array of tables (``[[mcp_servers]]`` with ``name = "funes"``).  A
new one is appended at the end after one blank line; replacing it rewrites only
its body; deleting it removes its lines and that blank line, which gives back
the original bytes.  tomlkit alone keeps comments but moves blank lines around.

Every splice is checked against the parsed data (``tomllib``); a layout the
splicer does not know (the table written inline, say) is edited with tomlkit.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import tomlkit

from funes.wiring.changes import ConfigFileError, display

TablePath = tuple[str, ...]


class TomlText:
    def __init__(self, path: Path, text: str | None):
        self.path = path
        self.original = text
        self.text = text or ""
        self.initial_text = self.text
        try:
            self.data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigFileError(f"{display(path)} is not valid TOML ({exc}); funes changed nothing") from exc

    def get(self, path: TablePath) -> Any:
        value: Any = self.data
        for part in path:
            if not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value

    def set_table(self, path: TablePath, values: dict[str, Any]) -> None:
        if self.get(path) == values:
            return
        for depth in range(1, len(path)):
            if not isinstance(self.get(path[:depth]) or {}, dict):
                raise ConfigFileError(f"{display(self.path)}: {'.'.join(path[:depth])} is not a table;"
                                      " funes changed nothing")
        expected = copy.deepcopy(self.data)
        table = expected
        for part in path[:-1]:
            table = table.setdefault(part, {})
        table[path[-1]] = copy.deepcopy(values)
        lines = self.text.splitlines(keepends=True)
        block = _find_block(lines, path)
        body = _render_body(values)
        if block is None:
            separator = "" if not self.text else "\n" if self.text.endswith("\n") else "\n\n"
            spliced = self.text + separator + _render_header(path) + body
        else:
            header, end = block
            spliced = "".join(lines[:header + 1]) + body + "".join(lines[end:])
        self._commit(spliced, expected, lambda doc: _tomlkit_set(doc, path, values))

    def delete_table(self, path: TablePath) -> None:
        if self.get(path) is None:
            return
        expected = copy.deepcopy(self.data)
        parent = expected
        for part in path[:-1]:
            parent = parent[part]
        del parent[path[-1]]
        lines = self.text.splitlines(keepends=True)
        spliced = _without_block(lines, _find_block(lines, path))
        self._commit(spliced, expected, lambda doc: _tomlkit_delete(doc, path))

    def _array_entry(self, key: str, match: tuple[str, Any]) -> tuple[list, int | None]:
        """The array of tables ``key`` (a list; [] when absent) and the index of its
        element whose ``match[0]`` field is ``match[1]``."""
        array = self.data.get(key, [])
        if not isinstance(array, list) or not all(isinstance(item, dict) for item in array):
            raise ConfigFileError(f"{display(self.path)}: {key} is not an array of tables; funes changed nothing")
        found = next((index for index, item in enumerate(array) if item.get(match[0]) == match[1]), None)
        return array, found

    def set_array_entry(self, key: str, match: tuple[str, Any], values: dict[str, Any]) -> None:
        """Make the element of the array of tables ``key`` whose ``match`` field
        matches be ``values`` (appended as a new ``[[key]]`` when there is none)."""
        array, found = self._array_entry(key, match)
        if found is not None and array[found] == values:
            return
        expected = copy.deepcopy(self.data)
        entries = expected.setdefault(key, [])
        lines = self.text.splitlines(keepends=True)
        body = _render_body(values)
        if found is None:
            entries.append(copy.deepcopy(values))
            separator = "" if not self.text else "\n" if self.text.endswith("\n") else "\n\n"
            spliced: str | None = self.text + separator + "[[" + tomlkit.key(key).as_string() + "]]\n" + body
        else:
            entries[found] = copy.deepcopy(values)
            block = _find_block(lines, ("[[", key), found)
            spliced = None if block is None else "".join(lines[:block[0] + 1]) + body + "".join(lines[block[1]:])
        self._commit(spliced, expected, lambda doc: _tomlkit_set_entry(doc, key, found, values))

    def delete_array_entry(self, key: str, match: tuple[str, Any]) -> None:
        array, found = self._array_entry(key, match)
        if found is None:
            return
        expected = copy.deepcopy(self.data)
        del expected[key][found]
        if not expected[key]:
            del expected[key]
        lines = self.text.splitlines(keepends=True)
        spliced = _without_block(lines, _find_block(lines, ("[[", key), found))
        self._commit(spliced, expected, lambda doc: _tomlkit_delete_entry(doc, key, found))

    def _commit(self, spliced: str | None, expected: dict, tomlkit_edit) -> None:
        try:
            ok = spliced is not None and _without_empty(tomllib.loads(spliced)) == _without_empty(expected)
        except tomllib.TOMLDecodeError:
            ok = False
        if not ok:
            document = tomlkit.parse(self.text)
            tomlkit_edit(document)
            spliced = tomlkit.dumps(document)
        self.text, self.data = spliced, tomllib.loads(spliced)


def _without_empty(table: dict) -> dict:
    """A table without its empty sub-tables: deleting ``[a.b.c]`` leaves no ``a``
    in the text, an empty one in the parsed data."""
    out = {}
    for key, value in table.items():
        if isinstance(value, dict):
            value = _without_empty(value)
            if not value:
                continue
        out[key] = value
    return out


def _header_path(line: str) -> TablePath | None:
    """The table a ``[header]`` line opens (None for other lines; ``[[x]]`` opens ``("[[", x…)``)."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    try:
        parsed = tomllib.loads(stripped + "\n")
    except tomllib.TOMLDecodeError:
        return None
    path: list[str] = ["[["] if stripped.startswith("[[") else []
    while isinstance(parsed, dict) and len(parsed) == 1:
        key, parsed = next(iter(parsed.items()))
        path.append(key)
        if isinstance(parsed, list):
            break
    return tuple(path)


def _find_block(lines: list[str], path: TablePath, occurrence: int = 0) -> tuple[int, int] | None:
    """(header line, end) of the table ``path`` (of its ``occurrence``-th header,
    for an array of tables); the end excludes the blank and comment lines before
    the next header, which belong to that one."""
    seen = 0
    for index, line in enumerate(lines):
        if _header_path(line) == path:
            if seen < occurrence:
                seen += 1
                continue
            end = index + 1
            while end < len(lines) and _header_path(lines[end]) is None:
                end += 1
            while end > index + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
                end -= 1
            return index, end
    return None


def _without_block(lines: list[str], block: tuple[int, int] | None) -> str | None:
    """The text without the lines of ``block`` and the blank line funes put before
    it when it added the table; None when there is no block to cut."""
    if block is None:
        return None
    header, end = block
    if header > 0 and not lines[header - 1].strip():
        header -= 1
    return "".join(lines[:header] + lines[end:])


def _render_header(path: TablePath) -> str:
    return "[" + ".".join(tomlkit.key(part).as_string() for part in path) + "]\n"


def _render_body(values: dict[str, Any]) -> str:
    return tomlkit.dumps(values)


def _tomlkit_set(document: Any, path: TablePath, values: dict[str, Any]) -> None:
    table = document
    for part in path[:-1]:
        if part not in table:
            table[part] = tomlkit.table(is_super_table=True)
        table = table[part]
    table[path[-1]] = values


def _tomlkit_delete(document: Any, path: TablePath) -> None:
    table = document
    for part in path[:-1]:
        table = table[part]
    del table[path[-1]]


def _tomlkit_set_entry(document: Any, key: str, index: int | None, values: dict[str, Any]) -> None:
    if key not in document:
        document[key] = tomlkit.aot()
    # An array written inline (``key = [{…}]``) takes an inline table.
    table = tomlkit.inline_table() if isinstance(document[key], tomlkit.items.Array) else tomlkit.table()
    table.update(values)
    if index is None:
        document[key].append(table)
    else:
        document[key][index] = table


def _tomlkit_delete_entry(document: Any, key: str, index: int | None) -> None:
    del document[key][index]
    if not document[key]:
        del document[key]
