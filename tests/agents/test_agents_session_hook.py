"""SessionIdHookAgent: the hook payload names a session by id, looked up under the
agent's roots (the agents whose hooks send no transcript path use it)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from funes.agents.base import SessionIdHookAgent
from funes.traces.model import SourceUnit


class _ById(SessionIdHookAgent):
    name = "byid"
    harness = "byid"
    label = "ById"
    home_env = "BYID_HOME"

    def discover(self, root: Path) -> Iterator[SourceUnit]:
        for session_id in ("s1", "s2", "s2"):
            yield SourceUnit(self.harness, root / f"{session_id}.db", session_id, "1:1")


def _env(tmp_path: Path) -> Mapping[str, str]:
    return {"BYID_HOME": str(tmp_path)}


def test_the_first_unit_of_the_named_session_is_indexed(tmp_path):
    [unit] = _ById().hook_units({"session_id": "s2"}, _env(tmp_path))
    assert unit.session_id == "s2"


def test_a_payload_without_a_session_id_is_refused_by_the_agents_label(tmp_path):
    with pytest.raises(ValueError, match="^the ById payload names no session_id$"):
        _ById().hook_units({"session_id": ""}, _env(tmp_path))


def test_an_unknown_session_is_refused_naming_where_it_was_looked_for(tmp_path):
    with pytest.raises(ValueError, match=f"^no ById session 'nope' under {tmp_path}$"):
        _ById().hook_units({"session_id": "nope"}, _env(tmp_path))


def test_hook_requests_of_one_session_in_one_home_are_one(tmp_path):
    assert _ById().hook_session({"session_id": "s1"}, _env(tmp_path)) == f"{tmp_path}:s1"
