"""Shared test set-up.

Every test runs in an isolated world: HOME, FUNES_HOME and the agent homes point
into tmp_path, the Hub is offline unless a test starts the loopback Hub, and
Dagster bookkeeping runs are off unless a test turns them on.  Derived model
files and compiled secret rules (expensive, shareable) live in one cache for the
whole session.
"""

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Shared helpers live in tests/helpers/ and import by their own names (`from hub_helpers import ...`).
sys.path.insert(0, str(Path(__file__).parent / "helpers"))

# How long an example takes, or generating one, depends on the host: no property test
# may fail because a CPU is slow or shared.  Tests' own @settings inherit this.
settings.register_profile("any-host", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("any-host")

from hub_server import HubServer  # noqa: E402
from paths import FIXTURES, REAL  # noqa: E402,F401


@pytest.fixture(scope="session")
def shared_cache(request, tmp_path_factory):
    """Kept in pytest's cache folder so the ONNX export and compiled rules survive
    between runs (CI starts clean and builds them once)."""
    cache = getattr(request.config, "cache", None)
    folder = cache.mkdir("funes-cache") if cache is not None else tmp_path_factory.mktemp("funes-cache")
    folder.chmod(0o700)  # kingfisher ignores rule caches others could write to
    return folder


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch, shared_cache):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FUNES_HOME", str(home / ".funes"))
    monkeypatch.setenv("FUNES_CACHE_DIR", str(shared_cache))
    monkeypatch.setenv("FUNES_NO_DAGSTER_RECORD", "1")
    # `funes index` run in-process (tests/helpers/agent_helpers.py) would lower the test runner's
    # own priority, for every test after it: the niceness test sets its child's.
    monkeypatch.setenv("FUNES_EMBED_NICENESS", "0")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "HERMES_HOME", "DAGSTER_HOME",
                 "FUNES_MEMORY", "FUNES_RERANKER", "FUNES_DEVICE"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(scope="session")
def hub_server(tmp_path_factory):
    """A Hub-compatible server on 127.0.0.1 (tests/helpers/hub_server.py), shared by the session.

    Point clients at it explicitly: `HfApi(endpoint=hub_server.endpoint, token=hub_server.token)`,
    `hf_hub_download(..., endpoint=...)`, `HfFileSystem(endpoint=...)`; huggingface_hub reads
    HF_ENDPOINT only once, at import. Lance/lancedb read HF_ENDPOINT when a dataset is opened, so
    `hub_env` is enough for them; polars `hf://` ignores HF_ENDPOINT altogether.
    Counters: `hub_server.reset_counts()`, then `.request_count`, `.counts["HEAD resolve"]`,
    `.requests`. Failures: `hub_server.fail_next("commit", status=412, times=1)`.
    Repo names are shared by the session: give each test its own.
    """
    with HubServer(tmp_path_factory.mktemp("hub")) as server:
        yield server


@pytest.fixture
def hub_env(hub_server, tmp_path, monkeypatch):
    """Environment for code that talks to `hub_server`: endpoint, dummy token, online mode, no
    telemetry, and a fresh HF cache in tmp_path. huggingface_hub reads these at import, so its
    constants are patched too; subprocesses inherit the variables."""
    from huggingface_hub import constants

    home = tmp_path / "hf-home"
    variables = {
        "HF_ENDPOINT": hub_server.endpoint,
        "HF_TOKEN": hub_server.token,
        "HF_HUB_OFFLINE": "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(home / "hub"),
    }
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    # Telemetry would also fetch an agent registry from the public Hub on first use.
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
    return home


# --- memories built from the fixture transcripts -----------------------------------------------


@pytest.fixture(scope="session")
def built_memory(tmp_path_factory, shared_cache):
    """(agent home, FUNES_HOME) of a memory indexed once from the fixture transcripts
    of every agent. Read-only: tests that write use `memory_home`."""
    from memory_helpers import build_memory, environment, make_agent_home

    root = tmp_path_factory.mktemp("built")
    home = make_agent_home(root / "home")
    with environment(FUNES_CACHE_DIR=str(shared_cache), FUNES_NO_DAGSTER_RECORD="1"):
        build_memory(home, root / "funes")
    return home, root / "funes"


@pytest.fixture
def memory_home(built_memory, isolated_env, monkeypatch):
    """This test's own copy of `built_memory`: HOME holds the agent homes and
    FUNES_HOME the indexed memory."""
    import shutil

    source_home, source_funes = built_memory
    shutil.copytree(source_home, isolated_env, dirs_exist_ok=True)
    funes_home = isolated_env / ".funes"
    shutil.copytree(source_funes, funes_home, dirs_exist_ok=True)
    monkeypatch.setenv("FUNES_HOME", str(funes_home))
    return isolated_env
