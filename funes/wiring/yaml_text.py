"""Edit a YAML config file's text in place, touching only the lines funes owns.

A ruamel.yaml round trip keeps comments but re-indents every sequence and
mapping of the file.  Instead, ruamel's line numbers locate the entry or item to
add, replace or delete, and the edit splices whole lines in the file's own
indentation.  Additions go after the last sibling, so deleting them gives back
the original bytes; a container the deletion would leave empty goes with it.

Every splice is checked against the parsed data; a layout the splicer does not
know (flow style, say) falls back to a ruamel round trip of the file.
"""

from __future__ import annotations

import copy
import io
import json
import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from funes.wiring.changes import MISSING, ConfigFileError, KeyPath, display, dotted, value_at

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_SEQ_UNDER_KEY = re.compile(r"^( *)[^\s#-][^\n]*:[ \t]*\n( *)- ", re.MULTILINE)


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


def _plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


class YamlText:
    def __init__(self, path: Path, text: str | None):
        self.path = path
        self.original = text
        self.text = text or ""
        self.initial_text = self.text
        self._load()
        if not isinstance(self.doc, (CommentedMap, type(None))):
            raise ConfigFileError(f"{display(path)} is not a YAML mapping; funes changed nothing")
        found = _SEQ_UNDER_KEY.search(self.text)
        self.seq_offset = len(found.group(2)) - len(found.group(1)) if found else 0

    def _load(self) -> None:
        try:
            self.doc = _yaml().load(self.text)
        except YAMLError as exc:
            problem = " ".join(str(exc).split())
            raise ConfigFileError(f"{display(self.path)} is not valid YAML ({problem}); funes changed nothing") from exc
        self.data = _plain(self.doc) if self.doc is not None else {}

    def get(self, path: KeyPath, default: Any = None) -> Any:
        value: Any = self.data
        for part in path:
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
                value = value[part]
            else:
                return default
        return value

    # ------------------------------------------------------------------ editing
    def set(self, path: KeyPath, value: Any) -> None:
        if self.get(path, MISSING) == value:
            return
        for depth in range(1, len(path)):
            current = self.get(path[:depth])
            if current is not None and not isinstance(current, dict):
                raise ConfigFileError(f"{display(self.path)}: {dotted(path[:depth])} is not a mapping;"
                                      " funes changed nothing")
        expected = copy.deepcopy(self.data)
        target = expected
        for part in path[:-1]:
            if not isinstance(target.get(part), dict):
                target[part] = {}
            target = target[part]
        target[path[-1]] = copy.deepcopy(value)
        # Where the path stops existing (or holds an empty value), write that whole entry anew.
        depth = 1
        while depth < len(path) and self.get(path[:depth]):
            depth += 1
        anchor = path[:depth]
        self._commit(lambda: self._splice_entry(anchor, value_at(expected, anchor)), expected)

    def append(self, path: KeyPath, item: Any) -> None:
        current = self.get(path)
        if not current:
            self.set(path, [item])
            return
        if not isinstance(current, list):
            raise ConfigFileError(f"{display(self.path)}: {dotted(path)} is not a list; funes changed nothing")
        expected = copy.deepcopy(self.data)
        value_at(expected, path).append(copy.deepcopy(item))
        self._commit(lambda: self._splice_append(path, item), expected)

    def delete(self, path: KeyPath) -> None:
        """Delete an entry or item, and every container that leaves empty."""
        if self.get(path, MISSING) is MISSING:
            return
        while len(path) > 1 and len(self.get(path[:-1])) == 1:
            path = path[:-1]
        expected = copy.deepcopy(self.data)
        del value_at(expected, path[:-1])[path[-1]]
        self._commit(lambda: self._splice_delete(path), expected)

    def _commit(self, splice, expected: dict) -> None:
        before = self.text
        try:
            self.text = splice()
            ok = (_plain(_yaml().load(self.text)) or {}) == expected
        except (YAMLError, LookupError, AttributeError, TypeError, ValueError):
            ok = False
        if not ok:  # a layout the splicer does not know: keep the data right
            document = _yaml().load(before) or CommentedMap()
            _replace_all(document, expected)
            out = io.StringIO()
            _yaml().dump(document, out)
            self.text = out.getvalue()
        self._load()

    # ------------------------------------------------------------------ splicing
    def _lines(self) -> list[str]:
        lines = self.text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        return lines

    def _node(self, path: KeyPath) -> Any:
        node = self.doc
        for part in path:
            node = node[part]
        return node

    def _start(self, path: KeyPath) -> tuple[int, int]:
        """(line, column) where the entry or item at ``path`` begins (the key, or the dash)."""
        parent = self._node(path[:-1])
        if isinstance(parent, CommentedSeq):
            line, column = parent.lc.item(path[-1])
            dash = self._lines()[line].rfind("-", 0, column + 1)
            return line, dash
        return parent.lc.key(path[-1])

    def _end(self, path: KeyPath) -> int:
        """The line after the entry or item at ``path`` (blank and comment lines at
        its end excluded: they belong to what follows)."""
        lines = self._lines()
        parent = self._node(path[:-1])
        siblings = list(range(len(parent))) if isinstance(parent, CommentedSeq) else list(parent)
        position = siblings.index(path[-1])
        if position + 1 < len(siblings):
            end = self._start((*path[:-1], siblings[position + 1]))[0]
        elif path[:-1]:
            end = self._end(path[:-1])
        else:
            end = len(lines)
        start = self._start(path)[0]
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1
        return end

    def _splice_entry(self, path: KeyPath, value: Any) -> str:
        """Write the mapping entry at ``path`` (replacing it when present)."""
        lines = self._lines()
        parent = self._node(path[:-1]) if path[:-1] else self.doc
        if path[-1] in (parent or {}):
            start, column = self._start(path)
            end = self._end(path)
        elif parent:
            last = (*path[:-1], list(parent)[-1])
            start = end = self._end(last)
            column = self._start(last)[1]
        else:  # an empty document
            start = end = len(lines)
            column = 0
        rendered = _render_entry(path[-1], value, " " * column, self.seq_offset)
        return "".join(lines[:start] + rendered + lines[end:])

    def _splice_append(self, path: KeyPath, item: Any) -> str:
        lines = self._lines()
        sequence = self._node(path)
        last = (*path, len(sequence) - 1)
        at = self._end(last)
        rendered = _render_item(item, " " * self._start(last)[1], self.seq_offset)
        return "".join(lines[:at] + rendered + lines[at:])

    def _splice_delete(self, path: KeyPath) -> str:
        lines = self._lines()
        return "".join(lines[:self._start(path)[0]] + lines[self._end(path):])




def _replace_all(node: CommentedMap, data: dict) -> None:
    """Make a round-trip mapping hold ``data``, keeping the nodes (and comments)
    of every unchanged value."""
    for key in [k for k in node if k not in data]:
        del node[key]
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(node.get(key), CommentedMap):
            _replace_all(node[key], value)
        elif _plain(node.get(key, MISSING)) != value:
            node[key] = value


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)}: {_scalar(v)}" for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False)


def _key(key: Any) -> str:
    return key if isinstance(key, str) and _PLAIN_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _render_entry(key: Any, value: Any, indent: str, seq_offset: int) -> list[str]:
    if isinstance(value, dict) and value:
        lines = [f"{indent}{_key(key)}:\n"]
        for child_key, child in value.items():
            lines += _render_entry(child_key, child, indent + "  ", seq_offset)
        return lines
    if isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        lines = [f"{indent}{_key(key)}:\n"]
        for item in value:
            lines += _render_item(item, indent + " " * seq_offset, seq_offset)
        return lines
    return [f"{indent}{_key(key)}: {_scalar(value)}\n"]


def _render_item(item: Any, indent: str, seq_offset: int) -> list[str]:
    if isinstance(item, dict) and item:
        entries: list[str] = []
        for key, value in item.items():
            entries += _render_entry(key, value, indent + "  ", seq_offset)
        return [indent + "- " + entries[0][len(indent) + 2:]] + entries[1:]
    return [f"{indent}- {_scalar(item)}\n"]
