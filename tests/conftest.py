from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    # Reports use paths as given; tests pass paths relative to the repository root.
    monkeypatch.chdir(ROOT)


@pytest.fixture(autouse=True)
def _private_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Each test gets an empty cache of its own, so no test sees another's stored results and
    # none writes to the user's cache; tests/test_cache.py tests the cache itself.
    monkeypatch.setenv("IDXCHECK_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    # Reports link rule pages where the user's environment says; tests say it themselves.
    monkeypatch.delenv("IDXCHECK_DOCS_URL", raising=False)


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("PYTHONHASHSEED", "0")


@pytest.fixture(autouse=True)
def _sarif_files_validate(request: pytest.FixtureRequest) -> Iterator[None]:
    # Every SARIF file a test leaves in its tmp_path is checked against the official schema,
    # so no test can produce SARIF that escapes validation.
    yield
    tmp = request.node.funcargs.get("tmp_path") if hasattr(request.node, "funcargs") else None
    if tmp is None:
        return
    from .sarif_check import assert_valid_sarif_file

    for path in sorted(Path(tmp).rglob("*.sarif")):
        assert_valid_sarif_file(path)
