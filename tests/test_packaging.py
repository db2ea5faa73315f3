"""The distribution: every layer folder is packaged, all under `funes.`, with its data."""

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_folder_with_an_init_is_a_listed_package():
    setuptools = _pyproject()["tool"]["setuptools"]
    mapping = setuptools["package-dir"]
    listed = set(setuptools["packages"])
    found = set()
    for package, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *relative.parts]) if relative.parts else package)
    assert found == listed


def test_torch_is_pinned_to_the_cpu_wheel_version():
    assert "torch==2.13.0" in _pyproject()["project"]["dependencies"]


@pytest.mark.slow
def test_the_wheel_installs_everything_under_funes_only(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("funes-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert top_level == {"funes", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    for expected in ("funes/cli/main.py", "funes/assets/ingest.py", "funes/pipelines/definitions.py",
                     "funes/retrieval/search.py", "funes/secret_rules.yaml", "funes/examples/NOTICE.md",
                     "funes/examples/claude_session.jsonl"):
        assert expected in names, expected
