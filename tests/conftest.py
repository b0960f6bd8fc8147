from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    # Reports use paths as given; tests pass paths relative to the repository root.
    monkeypatch.chdir(ROOT)


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("PYTHONHASHSEED", "0")
