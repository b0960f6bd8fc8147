"""Adopting idxcheck on code with findings: a baseline file, and a git diff base."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from idxcheck.app import gitutil
from idxcheck.cli import main
from idxcheck.incremental import parts
from idxcheck.source.discover import discover

from .gitrepo import Repo

BUG = Path("fixtures/bugs/eagle_draft_extend_v2.py").read_text()
OTHER_BUG = Path("fixtures/bugs/verify_arange_forms.py").read_text()
FIX = Path("fixtures/correct/eagle_full_fix.py").read_text()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def reported(*args: str) -> tuple[int, list[tuple[str, str, int]]]:
    code, out, err = run("scan", "--format", "json", *args)
    assert code in (0, 1), err
    doc = json.loads(out)
    return code, [(Path(f["path"]).name, f["code"], f["line"]) for f in doc["findings"]]


def test_baseline_reports_only_new_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("src").mkdir()
    Path("src/backend.py").write_text(BUG)
    code, out, err = run("scan", "src", "--write-baseline", "idxcheck-baseline.json")
    assert code == 0, out
    assert "wrote 2 findings to idxcheck-baseline.json" in err
    entries = json.loads(Path("idxcheck-baseline.json").read_text())["findings"]
    assert {e["path"] for e in entries} == {"src/backend.py"}
    assert all("line" not in e for e in entries)  # a baseline does not churn on line moves

    assert reported("src", "--baseline", "idxcheck-baseline.json") == (0, [])
    # Lines inserted above the findings: still the same findings.
    Path("src/backend.py").write_text("import os\nimport sys\n\n" + BUG)
    assert reported("src", "--baseline", "idxcheck-baseline.json") == (0, [])
    # A new bug in a new file fails; the old ones stay quiet.
    Path("src/verify.py").write_text(OTHER_BUG)
    code, found = reported("src", "--baseline", "idxcheck-baseline.json")
    assert code == 1
    assert found and {name for name, _, _ in found} == {"verify.py"}
    code, out, _ = run("scan", "src", "--baseline", "idxcheck-baseline.json")
    assert f"Found {len(found)} new findings" in out and "2 baselined" in out


def test_fixed_findings_show_as_stale_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("backend.py").write_text(BUG)
    run("scan", "backend.py", "--write-baseline", "b.json")
    Path("backend.py").write_text(FIX)
    code, out, _ = run("scan", "backend.py", "--baseline", "b.json")
    assert code == 0
    assert "2 baseline entries matched nothing" in out


def test_bad_baseline_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "b.json"
    bad.write_text("{}")
    code, _, err = run("scan", "fixtures/bugs", "--baseline", str(bad))
    assert code == 2 and "not an idxcheck baseline" in err


def test_diff_base_reports_what_changed_since_a_ref(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("pkg/backend.py", BUG)
    repo.write("pkg/fixed.py", FIX)
    base = repo.commit("legacy backend with a known bug")
    # The pull request: the known bug moves down, the fixed backend regresses, a new file.
    repo.write("pkg/backend.py", "# moved\n\n" + BUG)
    repo.write(
        "pkg/fixed.py",
        FIX.replace("return self.num_draft_tokens", "return self.speculative_num_steps + 1"),
    )
    repo.write("pkg/new_backend.py", OTHER_BUG)
    repo.commit("regress")
    monkeypatch.chdir(repo.root)
    code, everything = reported("pkg")
    code, new = reported("pkg", "--diff-base", base)
    assert code == 1
    names = {name for name, _, _ in new}
    assert names == {"fixed.py", "new_backend.py"}
    assert len(new) == len([f for f in everything if f[0] != "backend.py"])
    # Against itself, nothing is new; from a subfolder with a relative path, the same.
    assert reported("pkg", "--diff-base", "HEAD") == (0, [])
    monkeypatch.chdir(repo.root / "pkg")
    assert {n for n, _, _ in reported(".", "--diff-base", base)[1]} == {
        "fixed.py",
        "new_backend.py",
    }
    code, _, err = run("scan", ".", "--diff-base", "no-such-ref")
    assert code == 2 and "not a commit" in err


def test_diff_base_reads_the_ref_not_the_work_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files of the ref are what the base scan reads: a file edited since (and not
    committed) is the ref's version there, an unchanged one is the same text."""
    repo = Repo(tmp_path / "repo")
    repo.write("pkg/regressed.py", FIX)
    repo.write("pkg/kept.py", OTHER_BUG)
    base = repo.commit("base")
    repo.write("pkg/regressed.py", FIX.replace("return self.num_draft_tokens", "return 1"))
    monkeypatch.chdir(repo.root)
    cache = tmp_path / "cache"
    monkeypatch.setenv("IDXCHECK_CACHE_DIR", str(cache))
    code, everything = reported("pkg")
    assert {name for name, _, _ in everything} == {"regressed.py", "kept.py"}
    # The ref's files are named as the work tree's: the unchanged one's analysis is the work
    # tree scan's, from the cache; the ref's version of the edited one is analysed.
    analysed: list[str] = []
    analyse = parts.analyse_file

    def counted(source: Any, *args: Any, **kwargs: Any) -> Any:
        analysed.append(Path(source.path).name)
        return analyse(source, *args, **kwargs)

    monkeypatch.setattr(parts, "analyse_file", counted)
    for _ in range(2):  # the second time, all from the cache
        code, new = reported("pkg", "--diff-base", base)
        assert code == 1 and {name for name, _, _ in new} == {"regressed.py"}
        assert analysed == ["regressed.py"]
    assert reported("pkg", "--diff-base", base, "--no-cache")[1] == new


def test_a_ref_exported_links_the_unchanged_files(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("pkg/same.py", "x = 1\n")
    repo.write("pkg/edited.py", "y = 1\n")
    repo.write("pkg/gone.py", "z = 1\n")
    repo.write("pkg/notes.txt", "not read by a scan\n")
    (repo.root / "pkg" / "alias.py").symlink_to("edited.py")
    (repo.root / "pkg" / "same_alias.py").symlink_to("same.py")
    base = repo.commit("base")
    repo.write("pkg/edited.py", "y = 2\n")
    (repo.root / "pkg" / "gone.py").unlink()
    target = tmp_path / "out"
    target.mkdir()
    gitutil.export_linked(str(repo.root.resolve()), base, ["pkg"], str(target))
    exported = {p.relative_to(target).as_posix() for p in target.rglob("*") if not p.is_dir()}
    assert exported == {
        "pkg/same.py",
        "pkg/edited.py",
        "pkg/gone.py",
        "pkg/alias.py",
        "pkg/same_alias.py",
    }
    # The repository's own links lead to the ref's files, not to the work tree's.
    assert (target / "pkg/alias.py").read_text() == "y = 1\n"
    assert (target / "pkg/same_alias.py").read_text() == "x = 1\n"
    assert (target / "pkg/same.py").is_symlink()
    assert not (target / "pkg/edited.py").is_symlink()
    assert (target / "pkg/edited.py").read_text() == "y = 1\n"
    assert (target / "pkg/gone.py").read_text() == "z = 1\n"


def test_discovery_names_files_under_the_names_given(tmp_path: Path) -> None:
    """What `--diff-base` relies on: files read from one folder, displayed under another."""
    out = tmp_path / "out"
    (out / "pkg" / "sub").mkdir(parents=True)
    (out / "pkg" / "a.py").write_text("x = 1\n")
    (out / "pkg" / "sub" / "b.py").write_text("y = 1\n")
    (out / "one.py").write_text("z = 1\n")
    found = [
        (c.path, c.display)
        for c in discover([str(out / "pkg"), str(out / "one.py")], shown_as=["src/pkg", "./one.py"])
    ]
    assert found == [
        (str(out / "pkg" / "a.py"), "src/pkg/a.py"),
        (str(out / "pkg" / "sub" / "b.py"), "src/pkg/sub/b.py"),
        (str(out / "one.py"), "one.py"),
    ]
    assert [c.display for c in discover([str(out / "pkg")], shown_as=["."])] == ["a.py", "sub/b.py"]
    # Without names, a file is displayed as found.
    assert [c.display for c in discover([str(out / "pkg")])] == [
        str(out / "pkg" / "a.py"),
        str(out / "pkg" / "sub" / "b.py"),
    ]
