"""The distribution: every layer folder is packaged, all under `funes.`, with its data."""

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from paths import ROOT



def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_folder_of_modules_is_a_package():
    """setup.py packages the folders with an __init__.py: one holding modules
    without it would silently be left out of the wheel."""
    for folder in _pyproject()["tool"]["setuptools"]["package-dir"].values():
        for module in (ROOT / folder).rglob("*.py"):
            assert (module.parent / "__init__.py").is_file(), f"{module.parent} has modules but no __init__.py"


def test_torch_is_pinned_to_the_cpu_wheel_version():
    assert "torch==2.13.0" in _pyproject()["project"]["dependencies"]


def _source_copy(target: Path) -> Path:
    """The files a build reads, copied so a test can add to the tree."""
    target.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, target / name)
    for folder in _pyproject()["tool"]["setuptools"]["package-dir"].values():
        shutil.copytree(ROOT / folder, target / folder, ignore=ignore)
    return target


@pytest.mark.slow
def test_the_wheel_installs_everything_under_funes_only_and_a_new_agent_folder_without_listing_it(tmp_path):
    source = _source_copy(tmp_path / "src")
    # A new agent as a contributor adds one: a folder under funes/agents, nothing else.
    new_agent = source / "funes" / "agents" / "newagent"
    new_agent.mkdir()
    (new_agent / "__init__.py").write_text('"""A new agent."""\n')
    (new_agent / "parser.py").write_text('HARNESS = "newagent"\n')
    (new_agent / "FORMAT.md").write_text("# newagent\n")
    assert (source / "pyproject.toml").read_bytes() == (ROOT / "pyproject.toml").read_bytes()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(source)], check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("funes-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert top_level == {"funes", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    for expected in ("funes/cli/main.py", "funes/assets/ingest.py", "funes/pipelines/definitions.py",
                     "funes/retrieval/search.py", "funes/secret_rules.yaml", "funes/examples/NOTICE.md",
                     "funes/examples/claude_session.jsonl", "funes/agents/claude/parser.py",
                     "funes/agents/opencode/files/funes.js", "funes/agents/newagent/__init__.py",
                     "funes/agents/newagent/parser.py", "funes/agents/newagent/FORMAT.md"):
        assert expected in names, expected
    # Every package of the tree is in the wheel, none under a bare layer name.
    for folder in _pyproject()["tool"]["setuptools"]["package-dir"]:
        assert f"{folder.replace('.', '/')}/__init__.py" in names
