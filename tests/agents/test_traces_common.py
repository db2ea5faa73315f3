"""The helpers every parser shares (funes.traces.common, funes.traces.jsonl)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from funes.traces.common import compact_json, joined_text, normalize_ts, tagged_spans, trailing_uuid, workdir_facet
from funes.traces.jsonl import decode_json, decode_json_fast


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-01-02T03:04:05.123Z", "2026-01-02T03:04:05.123Z"),
    ("2026-01-02T03:04:05Z", "2026-01-02T03:04:05.000Z"),
    ("2026-01-02T05:04:05.123456+02:00", "2026-01-02T03:04:05.123Z"),
    ("2026-01-02 03:04:05", "2026-01-02T03:04:05.000Z"),  # naive: read as UTC
    (1767225600123, "2026-01-01T00:00:00.123Z"),  # epoch milliseconds (pi)
    (1780000002.5, "2026-05-28T20:26:42.500Z"),  # epoch seconds as REAL (Hermes)
    ("2026-13-02T03:04:05.123Z", ""),
    ("yesterday", ""), ("", ""), (None, ""), (True, ""), (float("nan"), ""), (1e300, ""), ([], ""),
])
def test_normalize_ts(value, expected):
    assert normalize_ts(value) == expected


@pytest.mark.parametrize(("cwd", "expected"), [
    ("/home/u/llama.cpp", "-home-u-llama-cpp"),
    ("C:\\Users\\d\\x", "C--Users-d-x"),
    ("D:\\physics\\earth", "D--physics-earth"),
    ("/", "fallback"), ("", "fallback"), (None, "fallback"),
])
def test_workdir_facet(cwd, expected):
    assert workdir_facet(cwd, "fallback") == expected


def test_trailing_uuid():
    uuid = "019ef2fb-6574-7f83-bd99-9118713271f2"
    assert trailing_uuid(f"rollout-2026-06-23T05-37-02-{uuid}.jsonl.zst") == uuid
    assert trailing_uuid(f"2026-04-13T09-28-54-581Z_{uuid}.jsonl") == uuid
    assert trailing_uuid("notes.jsonl") is None


def test_joined_text_shapes():
    parts = [{"type": "text", "text": "a"}, {"type": "image", "data": "AAAA"}, {"type": "text", "text": 3}, "x",
             {"type": "input_text", "text": "b"}]
    assert joined_text(parts) == "a"
    assert joined_text(parts, ("text", "input_text")) == "a\nb"
    assert joined_text({"type": "text", "text": "single"}) == "single"
    assert joined_text([{"type": "text", "text": "one"}]) == "one"
    assert joined_text([{"type": "image"}]) == joined_text([{"type": "text", "text": 3}]) == joined_text(["x"]) == ""
    assert joined_text("plain") == "plain"
    assert joined_text(None) == joined_text(7) == ""


def test_decode_json_raises_only_value_error():
    assert decode_json('"\\ud83d\\ude00 ok \\ud83d"') == "\U0001F600 ok \ufffd"  # pair kept, lone one replaced
    assert decode_json('{"\\udc00": ["\\udc00"]}') == {"\ufffd": ["\ufffd"]}
    with pytest.raises(ValueError):
        decode_json("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError):
        decode_json("1" * 5000)  # longer than Python's int-string limit


@pytest.mark.parametrize("text", ['{"a": [1, 2.5, -0, 1e400, null, true]}', ' \n{"a": "\u00e9"}\t ', "[]", '"s"', "7",
                                  "NaN", "-Infinity", "\ufeff{}", "{} {}", '{"a": 1', "", "   ", "[1,]", "{'a': 1}"])
def test_decode_json_reads_what_json_loads_reads(text):
    """Values with or without surrounding whitespace decode as json.loads decodes
    them; what json.loads rejects raises its ValueError, message and position
    included (load_json_file's warnings quote them)."""
    try:
        expected = json.loads(text)
    except ValueError as exc:
        with pytest.raises(ValueError) as raised:
            decode_json(text)
        assert str(raised.value) == str(exc)
    else:
        assert repr(decode_json(text)) == repr(expected)


def _decoded(decode, data):
    try:
        return repr(decode(data))
    except ValueError as exc:
        return f"ValueError: {exc}"


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_JSON_VALUES.map(lambda value: json.dumps(value, ensure_ascii=False)),
                 _JSON_VALUES.map(json.dumps), st.text(max_size=40),
                 st.text(alphabet='"\\ud83dcx{}[]:,01e.-uNaI ', max_size=30)))
def test_decode_json_fast_returns_what_decode_json_returns(text):
    """The Rust decoder's fast path changes no value and no error: the same repr (numbers,
    key order, lone surrogates replaced) or the same ValueError, from text or its UTF-8."""
    expected = _decoded(decode_json, text)
    assert _decoded(decode_json_fast, text) == expected
    try:
        encoded = text.encode()
    except UnicodeEncodeError:  # a lone surrogate in the text itself has no UTF-8
        return
    assert _decoded(decode_json_fast, encoded) == expected


@pytest.mark.parametrize("data", [b'{"a": "\xff\xfe"}', b'"\xed\xa0\xbd"', b'["\\ud83d", "\xc3"]',
                                  b"[" * 300 + b"]" * 300, b"1" * 5000, b'{"a": 1} x'])
def test_decode_json_fast_reads_bytes_as_replaced_utf8(data):
    expected = _decoded(decode_json, data.decode("utf-8", errors="replace"))
    assert _decoded(decode_json_fast, data) == expected


def test_compact_json_is_json_dumps_compact_and_unescaped():
    """The stored tool_use text: json.dumps with compact separators, non-ASCII kept,
    source key order, NaN and infinities as JavaScript writes them."""
    values = [{"b": 1, "a": [1.5, float("nan"), float("-inf"), -0.0, 10**30, None, True]},
              {"cmd": "é \u2028 \x00 \" \\ / \n\t", 1: 2, None: 3, 2.5: 4, False: 5},
              "top", 3, None, [], {}, [[{"x": {"y": []}}]]]
    for value in values:
        assert compact_json(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    with pytest.raises(TypeError):
        compact_json({"a": object()})


@pytest.mark.parametrize("text", [
    "",
    "no tags at all",
    "<t>one</t> and <t>two</t>",
    "<t>a <t>nested</t> tail</t>",  # the first close ends the span, as a lazy regex does
    "<t>closed</t> <t>never closed",
    "</t> a close first <t>x</t>",
    "<t></t><t>\n</t>",
])
def test_tagged_spans_are_what_a_lazy_regex_finds(text):
    expected = [m.span() for m in re.finditer(r"<t>(.*?)</t>", text, re.DOTALL)]
    assert tagged_spans(text, "<t>", "</t>") == expected

