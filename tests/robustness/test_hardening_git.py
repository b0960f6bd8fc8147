"""`--diff-base` on refs whose trees were crafted: the export of a ref creates nothing outside
its folder and leaves no link there that leads out of it; what it refuses it names, and the
scan goes on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from idxcheck.app import gitutil
from idxcheck.cli import main

from ..gitrepo import ENV, Repo

BUG = Path("fixtures/bugs/eagle_draft_extend_v2.py").read_text()
# Enough `../` to climb from any temporary folder to `/`, where more `../` stay.
CLIMB = "../" * 40


def _git_bytes(repo: Repo, *args: str, data: bytes = b"") -> str:
    proc = subprocess.run(
        ["git", *args], cwd=repo.root, env=ENV, input=data, capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode().strip()


def _blob(repo: Repo, data: str) -> str:
    return _git_bytes(repo, "hash-object", "-w", "--stdin", data=data.encode())


def _tree(repo: Repo, entries: list[tuple[str, str, str]]) -> str:
    """A tree object written as given (`--literally`: git checks no entry name, as a crafted
    repository's objects are not checked either)."""
    data = b"".join(
        mode.encode() + b" " + name.encode() + b"\0" + bytes.fromhex(sha)
        for mode, name, sha in entries
    )
    return _git_bytes(repo, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", data=data)


def _ref(repo: Repo, pkg: list[tuple[str, str, str]], name: str = "crafted") -> str:
    """A commit whose tree holds `pkg/` with the entries given, under refs/heads/`name`."""
    root = _tree(repo, [("40000", "pkg", _tree(repo, pkg))])
    commit = _git_bytes(repo, "commit-tree", "-m", "crafted", root)
    _git_bytes(repo, "update-ref", f"refs/heads/{name}", commit)
    return commit


def _repo(tmp_path: Path) -> tuple[Repo, str]:
    repo = Repo(tmp_path / "repo")
    repo.write("pkg/backend.py", BUG)
    repo.commit("base")
    return repo, _git_bytes(repo, "rev-parse", "HEAD:pkg/backend.py")


def _escapes(tmp_path: Path, name: str) -> tuple[str, Path]:
    """An entry name that climbs out of any folder to `where`, and `where`."""
    where = tmp_path / "escaped" / name
    return CLIMB + str(where).lstrip("/"), where


def _inside(folder: Path, top: Path) -> list[str]:
    """The entries under `folder` that lead outside it (the links to the work tree's own
    files, which `export_linked` makes by design, aside)."""
    real = os.path.realpath(folder)
    work = os.path.realpath(top)
    out = []
    for here, folders, files in os.walk(folder):  # links to folders listed, not followed
        for name in [*folders, *files]:
            path = os.path.join(here, name)
            rel = os.path.relpath(path, folder)
            if os.path.commonpath([os.path.realpath(path), real]) == real:
                continue
            if os.path.islink(path) and os.readlink(path) == os.path.join(work, rel):
                continue
            out.append(rel)
    return out


def _scan(repo: Repo, *args: str) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(repo.root)
    try:
        result = CliRunner().invoke(main, ["scan", *args])
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("mode", "last"), [("120000", "x.pth"), ("100644", "x.py")])
def test_an_entry_named_out_of_the_folder_is_refused(tmp_path: Path, mode: str, last: str) -> None:
    """A link (or a file) named with `../` up to a folder of the attacker's choice, such as
    a `site-packages` where a `.pth` file runs at the next Python start: not created."""
    repo, backend = _repo(tmp_path)
    name, where = _escapes(tmp_path, last)
    where.parent.mkdir()
    payload = _blob(repo, "import os; os.system('echo pwned')\n")
    _ref(repo, [("100644", "backend.py", backend), (mode, name, payload)])
    code, out, err = _scan(repo, "--diff-base", "crafted", "pkg")
    assert not os.path.lexists(where), "the export wrote outside its folder"
    assert code == 0, (out, err)  # the ref holds the same finding: nothing new
    assert "warning" in err and last in err, err


@pytest.mark.parametrize(
    "links",
    [
        [("abs.py", "/")],  # absolute
        [("out.py", "../../../../../../../../../../etc/passwd")],  # outward by `..`
        # Inside by the letters, outside once `up` is followed: `pkg/up` is the export's root.
        [("up", ".."), ("chained.py", "up/../x.py")],
        [("loop1.py", "loop2.py"), ("loop2.py", "loop1.py"), ("far", "loop1.py/../..")],
    ],
)
def test_links_that_lead_out_of_the_folder_are_not_made(
    tmp_path: Path, links: list[tuple[str, str]]
) -> None:
    repo, backend = _repo(tmp_path)
    entries = [("100644", "backend.py", backend)]
    entries += [("120000", name, _blob(repo, target)) for name, target in links]
    commit = _ref(repo, entries)
    target = tmp_path / "out"
    target.mkdir()
    notes = gitutil.export_linked(str(repo.root.resolve()), commit, ["pkg"], str(target))
    assert _inside(target, repo.root) == []
    assert (target / "pkg" / "backend.py").read_text() == BUG, "the rest is exported"
    assert notes and all("pkg/" in note for note in notes), notes


def test_a_link_that_stays_inside_is_made(tmp_path: Path) -> None:
    """The checks refuse only what leads out: links within the ref are made as before."""
    repo, backend = _repo(tmp_path)
    links = [("same.py", "backend.py"), ("up", ".."), ("again.py", "up/pkg/backend.py")]
    entries = [("100644", "backend.py", backend)]
    entries += [("120000", name, _blob(repo, target)) for name, target in links]
    commit = _ref(repo, entries)
    target = tmp_path / "out"
    target.mkdir()
    assert gitutil.export_linked(str(repo.root.resolve()), commit, ["pkg"], str(target)) == []
    assert (target / "pkg" / "same.py").read_text() == BUG
    assert (target / "pkg" / "again.py").read_text() == BUG


@pytest.mark.parametrize("kind", ["link-then-folder", "folder-then-link"])
def test_a_folder_under_a_link_or_file_of_the_same_name_is_refused(
    tmp_path: Path, kind: str
) -> None:
    """Two entries of one name (git's own commands write no such tree): a link `d` to a
    folder outside, and files under `d/`, must not write through the link."""
    repo, backend = _repo(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    link = ("120000", "d", _blob(repo, str(outside)))
    folder = ("40000", "d", _tree(repo, [("100644", "x.py", backend)]))
    pair = [link, folder] if kind == "link-then-folder" else [folder, link]
    commit = _ref(repo, [("100644", "backend.py", backend), *pair])
    target = tmp_path / "out"
    target.mkdir()
    notes = gitutil.export_linked(str(repo.root.resolve()), commit, ["pkg"], str(target))
    assert list(outside.iterdir()) == []
    assert _inside(target, repo.root) == []
    assert (target / "pkg" / "d" / "x.py").read_text() == BUG
    assert any("pkg/d" in note for note in notes), notes


def test_many_changed_files_with_outward_links_scan_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `MAX_WRITTEN` changed files the ref is written whole: an absolute or outward link
    in it (common in real repositories) is left out with a note, not an error that stops."""
    monkeypatch.setattr(gitutil, "MAX_WRITTEN", 0)
    repo = Repo(tmp_path / "repo")
    repo.write("pkg/backend.py", BUG)
    (tmp_path / "elsewhere.py").write_text("x = 1\n")
    (repo.root / "pkg" / "abs.py").symlink_to(tmp_path / "elsewhere.py")
    (repo.root / "pkg" / "out.py").symlink_to("../../elsewhere.py")
    (repo.root / "pkg" / "alias.py").symlink_to("backend.py")
    base = repo.commit("base")
    repo.write("pkg/backend.py", "# edited\n" + BUG)
    code, out, err = _scan(repo, "--diff-base", base, "pkg")
    # The same findings, moved a line: none is new. The work tree's own links out of the
    # scanned folder are per-file errors of its scan (the walk follows none), hence exit 1.
    assert code == 1, (out, err)
    assert "IDX0" not in out, out
    errors = [line for line in out.splitlines() if ": error: " in line]
    assert len(errors) == 2 and all("symbolic link to" in e for e in errors), out
    assert "abs.py" in err and "out.py" in err and "alias.py" not in err, err


def test_an_empty_diff_base_is_a_usage_error(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    code, out, err = _scan(repo, "--diff-base=", "pkg")
    assert code == 2, (out, err)
    assert "--diff-base" in err and "empty" in err, err
