"""Edges of the command line and the library API: a `--diff-base` that git cannot resolve is a
usage error before the scan starts, and the library API resolves its configuration and cache
as the CLI does unless it is handed a Config."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from idxcheck import api
from idxcheck.app import api as app_api
from idxcheck.app import command, gitutil
from idxcheck.app.config_file import ConfigError, Overrides
from idxcheck.cli import main
from idxcheck.incremental import parts
from idxcheck.incremental.cache import default_cache_dir

from .gitrepo import Repo

BUG = Path("fixtures/bugs/eagle_draft_extend_v2.py").resolve()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def no_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    def scanned(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the scan started")

    monkeypatch.setattr(app_api, "scanned", scanned)
    monkeypatch.setattr("idxcheck.app.scanning.scanned", scanned)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    repo = Repo(tmp_path / "repo")
    repo.write("pkg/backend.py", BUG.read_text())
    repo.commit("base")
    monkeypatch.chdir(repo.root)
    return repo


def test_a_ref_git_cannot_resolve_is_exit_2_before_the_scan(repo: Repo, no_scan: None) -> None:
    code, _, err = run("scan", "pkg", "--diff-base", "no-such-ref")
    assert code == 2
    assert "--diff-base: not a commit" in err and "'no-such-ref'" in err
    # A tree is not a commit either.
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    code, _, err = run("scan", "pkg", "--diff-base", tree)
    assert code == 2 and "not a commit" in err


def test_a_diff_base_outside_a_repository_is_exit_2_before_the_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_scan: None
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    shutil.copy(BUG, folder / "backend.py")
    monkeypatch.chdir(folder)
    code, _, err = run("scan", ".", "--diff-base", "HEAD")
    assert code == 2 and "--diff-base needs a git repository" in err


def test_prepare_resolves_the_ref(repo: Repo) -> None:
    request = command.ScanRequest(paths=("pkg",), overrides=Overrides(), diff_base="nope")
    with pytest.raises(command.RequestError, match="not a commit"):
        command.prepare(request, lambda _message: None)
    request = replace(request, diff_base="HEAD")
    assert command.prepare(request, lambda _message: None).options.diff_base == "HEAD"


def test_a_good_ref_still_scans(repo: Repo) -> None:
    code, out, err = run("scan", "pkg", "--diff-base", "HEAD", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["findings"] == []


def test_the_library_api_checks_the_ref_before_the_scan(repo: Repo, no_scan: None) -> None:
    with pytest.raises(gitutil.GitError, match="not a commit"):
        api.scan(["pkg"], api.Config(), options=api.PolicyOptions(diff_base="no-such-ref"))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    shutil.copy(BUG, root / "src" / "backend.py")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "p"\n\n[tool.idxcheck]\nselect = ["IDX002"]\n'
    )
    monkeypatch.chdir(root / "src")
    return root


def test_the_library_api_reads_the_configuration_file_as_the_cli_does(project: Path) -> None:
    outcome = api.scan(["."])
    assert {f.code for f in outcome.result.findings} == {"IDX002"}
    code, out, _ = run("scan", ".", "--format", "json")
    assert code == 1
    assert [f["code"] for f in json.loads(out)["findings"]] == [
        f.code for f in outcome.result.findings
    ]
    config = api.resolve_config(["."])
    assert config.source == str(project / "pyproject.toml")
    assert config.select == frozenset({"IDX002"})
    # An explicit Config is exactly that: no file, no cache.
    assert {f.code for f in api.scan(["."], api.Config()).result.findings} == {"IDX001", "IDX002"}
    assert api.resolve_config(["."], isolated=True).source is None
    assert api.resolve_config(["."], config_file=str(project / "pyproject.toml")).select


def test_the_library_api_uses_the_default_cache_unless_told_not_to(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = default_cache_dir()
    assert api.resolve_config(["."]).cache_dir == str(cache)
    assert api.resolve_config(["."], cache=False).cache_dir is None
    first = api.scan(["."])
    analysed: list[str] = []
    analyse = parts.analyse_file

    def counted(source: Any, *args: Any, **kwargs: Any) -> Any:
        analysed.append(Path(source.path).name)
        return analyse(source, *args, **kwargs)

    monkeypatch.setattr(parts, "analyse_file", counted)
    # The second scan's result comes from the cache the first wrote; `scanned` reads it too.
    assert api.scan(["."]).result.findings == first.result.findings
    assert api.scanned(["."]).result.findings == first.result.findings
    assert analysed == []
    # Told not to (an explicit Config, or cache=False), it analyses the file again.
    api.scan(["."], api.Config())
    assert analysed == ["backend.py"]
    api.scan(["."], api.resolve_config(["."], cache=False))
    assert analysed == ["backend.py"] * 2


def test_a_bad_configuration_file_is_an_error_of_the_library_api(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.idxcheck]\ndomain = ["fooo == 1"]\n')
    with pytest.raises(ConfigError, match="unknown symbol fooo"):
        api.scan(["."])
    assert api.ConfigError is ConfigError
