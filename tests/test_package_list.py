"""pyproject's package list holds every package folder of the tree: a package it leaves out is
missing from a built wheel (and from a pre-commit hook's install) though an editable checkout
works."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs = {name: ROOT / folder for name, folder in config["package-dir"].items()}
    found = set()
    for name, folder in dirs.items():
        for init in folder.rglob("__init__.py"):
            parts = init.parent.relative_to(folder).parts
            if name == "idxcheck" and parts[:1] in (("rules",), ("runtime_kernels",)):
                continue
            found.add(".".join([name, *parts]))
    assert found == set(config["packages"])
