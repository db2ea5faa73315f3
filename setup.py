"""The package list, computed at build time: every folder with an ``__init__.py``
under each folder ``[tool.setuptools] package-dir`` maps (``funes/``, ``assets/``
→ ``funes.assets``, ...), so a new ``funes/agents/<name>/`` is packaged without
touching any list.  Everything else is in pyproject.toml.

Why a setup.py: pyproject's ``packages.find`` names packages after their folders
on disk, so it cannot install ``assets/`` as ``funes.assets``, and its static
``packages`` list is what every new agent folder had to be added to by hand.
"""

import tomllib
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent


def mapped_packages() -> list[str]:
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-dir"]
    found = []
    for package, folder in package_dir.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            found.append(".".join([package, *init.parent.relative_to(ROOT / folder).parts]))
    return found


setup(packages=mapped_packages())
