"""Edit a JSON config file's text in place, touching only the bytes funes owns.

``json.load`` + ``json.dump`` would re-indent and re-escape a user's whole file.
Instead the text is parsed once more for the span of every value, and each edit
splices only the member or item it adds, replaces or deletes, in the file's own
indentation.  Additions go last, so deleting them later gives back the original
bytes.  Containers an edit leaves empty are removed with it.

Every splice is checked: the edited text must parse to exactly what the same
edit makes of the parsed data, or the editor falls back to rewriting the file
with ``json.dumps`` (correct data, the file's formatting lost).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from funes.wiring.changes import MISSING, ConfigFileError, KeyPath, display, dotted, value_at


_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"[^,\]}\s]+")
_INDENT = re.compile(r"\n([ \t]+)\S")
_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.DOTALL)


def _without_comments(text: str) -> str:
    """``text`` with its ``//`` and ``/* */`` comments (outside strings) blanked to
    spaces, newlines kept: every offset still points at the same byte of ``text``."""
    return _STRING_OR_COMMENT.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else re.sub(r"[^\n]", " ", m.group(0)),
                                  text)


def _plain(text: str) -> str:
    return text


@dataclass
class _Node:
    start: int
    end: int
    keys: list[str] = field(default_factory=list)  # objects: member keys, in order
    key_starts: list[int] = field(default_factory=list)
    children: list[_Node] = field(default_factory=list)  # member values or array items
    kind: str = "scalar"  # scalar | object | array


class _Spans:
    """The span of every value in a text known to be valid JSON."""

    def __init__(self, text: str):
        self.text = text
        self.root = self._value(self._skip(0))

    def _skip(self, i: int) -> int:
        return _WS.match(self.text, i).end()  # type: ignore[union-attr]

    def _value(self, i: int) -> _Node:
        char = self.text[i]
        if char == "{":
            return self._container(i, "object", "}")
        if char == "[":
            return self._container(i, "array", "]")
        pattern = _STRING if char == '"' else _SCALAR
        return _Node(i, pattern.match(self.text, i).end())  # type: ignore[union-attr]

    def _container(self, start: int, kind: str, close: str) -> _Node:
        node = _Node(start, start, kind=kind)
        i = self._skip(start + 1)
        while self.text[i] != close:
            if kind == "object":
                key_end = _STRING.match(self.text, i).end()  # type: ignore[union-attr]
                node.keys.append(json.loads(self.text[i:key_end]))
                node.key_starts.append(i)
                i = self._skip(self._skip(key_end) + 1)  # past ':'
            child = self._value(i)
            node.children.append(child)
            i = self._skip(child.end)
            if self.text[i] == ",":
                i = self._skip(i + 1)
        node.end = i + 1
        return node


class JsonText:
    """A JSON object document (file) being edited; ``text`` is the current text.
    With ``comments``, ``//`` and ``/* */`` comments are allowed (JSON with comments,
    as some editors keep their settings) and kept where they are."""

    def __init__(self, path: Path, text: str | None, *, comments: bool = False):
        self.path = path
        self.original = text
        self.text = text if text is not None and text.strip() else "{}\n"
        self.initial_text = self.text
        self._parsed = _without_comments if comments else _plain
        try:
            self.data = json.loads(self._parsed(self.text))
        except ValueError as exc:
            raise ConfigFileError(f"{display(path)} is not valid JSON ({exc}); funes changed nothing") from exc
        if not isinstance(self.data, dict):
            raise ConfigFileError(f"{display(path)} holds a JSON {type(self.data).__name__}, not an object;"
                                  " funes changed nothing")
        found = _INDENT.search(self.text)
        self.unit = found.group(1) if found else "  "

    # ------------------------------------------------------------------ reading
    def get(self, path: KeyPath, default: Any = None) -> Any:
        value: Any = self.data
        for part in path:
            if isinstance(value, dict) and isinstance(part, str) and part in value:
                value = value[part]
            elif isinstance(value, list) and isinstance(part, int) and -len(value) <= part < len(value):
                value = value[part]
            else:
                return default
        return value

    @property
    def is_empty(self) -> bool:
        return not self.data

    # ------------------------------------------------------------------ editing
    def set(self, path: KeyPath, value: Any) -> None:
        """Set the member at ``path`` (creating missing objects on the way)."""
        if self.get(path, MISSING) == value:
            return
        for depth in range(1, len(path)):
            container = self.get(path[:depth], {})  # an object, or an array that the next part indexes
            if not isinstance(container, dict) and not (isinstance(container, list) and isinstance(path[depth], int)):
                raise ConfigFileError(f"{display(self.path)}: {dotted(path[:depth])} is not an object;"
                                      " funes changed nothing")
        self._edit(lambda data: _set(data, path, value), lambda spans: self._splice_set(spans, path, value))

    def append(self, path: KeyPath, value: Any) -> None:
        """Append an item to the array at ``path`` (created when missing)."""
        if not isinstance(self.get(path, []), list):
            raise ConfigFileError(f"{display(self.path)}: {dotted(path)} is not a list; funes changed nothing")
        if self.get(path) is None:
            self.set(path, [value])
            return
        self._edit(lambda data: value_at(data, path).append(copy.deepcopy(value)),
                   lambda spans: self._splice_insert(self._node(spans, path), None, value))

    def delete(self, path: KeyPath) -> None:
        """Delete the member or item at ``path``, then every container that leaves empty."""
        if self.get(path, MISSING) is MISSING:
            return
        self._edit(lambda data: _delete(data, path), lambda spans: self._splice_delete(spans, path))
        parent = path[:-1]
        if parent and not self.get(parent):
            self.delete(parent)

    # ------------------------------------------------------------------ splicing
    def _edit(self, on_data, on_text) -> None:
        expected = copy.deepcopy(self.data)
        on_data(expected)
        try:
            start, end, replacement = on_text(_Spans(self._parsed(self.text)))
            text = self.text[:start] + replacement + self.text[end:]
            spliced_ok = json.loads(self._parsed(text)) == expected
        except (ValueError, IndexError, AttributeError, KeyError):
            spliced_ok = False
        if not spliced_ok and self._parsed is not _plain:  # rewriting would drop the user's comments
            raise ConfigFileError(f"{display(self.path)}: funes cannot edit this layout without losing its comments;"
                                  " funes changed nothing")
        if not spliced_ok:  # a layout the splicer does not know: keep the data right
            text = json.dumps(expected, indent=self.unit, ensure_ascii=False) + "\n"
        self.text, self.data = text, expected

    def _node(self, spans: _Spans, path: KeyPath) -> _Node:
        node = spans.root
        for part in path:
            node = node.children[node.keys.index(part) if node.kind == "object" else part]
        return node

    def _line_indent(self, position: int) -> str:
        line_start = self.text.rfind("\n", 0, position) + 1
        prefix = self.text[line_start:position]
        return prefix if not prefix.strip() else re.match(r"[ \t]*", prefix).group(0)  # type: ignore[union-attr]

    def _render(self, value: Any, indent: str) -> str:
        return json.dumps(value, indent=self.unit, ensure_ascii=False).replace("\n", "\n" + indent)

    def _splice_set(self, spans: _Spans, path: KeyPath, value: Any) -> tuple[int, int, str]:
        node = spans.root
        for depth, part in enumerate(path[:-1]):
            if node.kind == "object" and part not in node.keys:  # the rest of the path is one new member
                nested: Any = value
                for key in reversed(path[depth + 1:]):
                    nested = {key: nested}
                return self._splice_insert(node, part, nested)
            node = node.children[node.keys.index(part) if node.kind == "object" else part]
        key = path[-1]
        if node.kind == "array":
            child = node.children[key]
            return child.start, child.end, self._render(value, self._line_indent(child.start))
        if key in node.keys:
            index = node.keys.index(key)
            child = node.children[index]
            return child.start, child.end, self._render(value, self._line_indent(node.key_starts[index]))
        return self._splice_insert(node, key, value)

    def _splice_insert(self, node: _Node, key: str | None, value: Any) -> tuple[int, int, str]:
        """Insert ``value`` (as member ``key`` of an object, or an array item) last."""
        label = "" if key is None else json.dumps(key, ensure_ascii=False) + ": "
        starts = node.key_starts if node.kind == "object" else [c.start for c in node.children]
        if not starts:
            indent = self._line_indent(node.start)
            inner = self.unit + label + self._render(value, indent + self.unit)
            return node.start + 1, node.end - 1, f"\n{indent}{inner}\n{indent}"
        if "\n" not in self.text[node.start:starts[0]]:  # a one-line container stays one line
            return node.children[-1].end, node.children[-1].end, ", " + label + json.dumps(value, ensure_ascii=False)
        indent = self._line_indent(starts[-1])
        at = node.children[-1].end
        return at, at, f",\n{indent}{label}{self._render(value, indent)}"

    def _splice_delete(self, spans: _Spans, path: KeyPath) -> tuple[int, int, str]:
        parent = self._node(spans, path[:-1])
        index = parent.keys.index(path[-1]) if parent.kind == "object" else int(path[-1])
        starts = parent.key_starts if parent.kind == "object" else [c.start for c in parent.children]
        if len(starts) == 1:
            return parent.start + 1, parent.end - 1, ""
        if index == len(starts) - 1:  # the last one: from the end of the one before
            return parent.children[index - 1].end, parent.children[index].end, ""
        return starts[index], starts[index + 1], ""




def _set(data: Any, path: KeyPath, value: Any) -> None:
    for part in path[:-1]:
        data = data[part] if isinstance(data, list) else data.setdefault(part, {})
    data[path[-1]] = copy.deepcopy(value)


def _delete(data: Any, path: KeyPath) -> None:
    del value_at(data, path[:-1])[path[-1]]
