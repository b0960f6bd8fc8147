"""`scan --show-settings` and `scan --show-files`: the resolved settings with where each came
from, and the files a scan would read; neither scans."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from idxcheck.app import api
from idxcheck.cli import main

BUG = Path("fixtures/bugs/eagle_draft_extend_v2.py").resolve()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A configured project holding a real finding, run from its root; a scan would fail."""
    root = tmp_path / "proj"
    for folder in ("src/attn", "src/vendored", "src/attn/gen"):
        (root / folder).mkdir(parents=True)
    shutil.copy(BUG, root / "src" / "attn" / "backend.py")
    shutil.copy(BUG, root / "src" / "vendored" / "copy.py")
    (root / "src" / "attn" / "gen" / "big.py").write_text("x = 1\n" * 2000)
    (root / "src" / "attn" / "notes.txt").write_text("not python\n")
    (root / "pyproject.toml").write_text(
        "[tool.idxcheck]\n"
        'select = ["IDX001"]\n'
        'exclude = ["src/vendored"]\n'
        "rlimit = 1234\n"
        'per-file-ignores = { "src/attn/backend.py" = ["IDX002"] }\n'
        "max-file-bytes = 10000\n"
    )
    monkeypatch.chdir(root)

    def no_scan(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("scanned")

    monkeypatch.setattr(api, "scanned", no_scan)
    return root


def settings_of(out: str) -> dict[str, tuple[str, str]]:
    """`key = value  # origin` lines -> {key: (value, origin)}."""
    rows = {}
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        setting, _, origin = line.rpartition("  # ")
        key, _, value = setting.partition(" = ")
        rows[key] = (value.strip(), origin)
    return rows


def test_show_settings_names_the_origin_of_each(project: Path) -> None:
    config = str(project / "pyproject.toml")
    code, out, err = run("scan", "--show-settings", "--ignore", "IDX002", "-j", "2")
    assert code == 0, err
    assert out.splitlines()[0] == f"# configuration file: {config}"
    rows = settings_of(out)
    assert rows["select"] == ('["IDX001"]', config)
    assert rows["exclude"] == ('["src/vendored"]', config)
    assert rows["rlimit"] == ("1234", config)
    assert rows["max-file-bytes"] == ("10000", config)
    assert rows["per-file-ignores"] == ('{ "src/attn/backend.py" = ["IDX002"] }', config)
    assert rows["ignore"] == ('["IDX002"]', "command line")
    assert rows["jobs"] == ("2", "command line")
    assert rows["paths"] == ('["."]', "default")
    assert rows["strict"] == ("false", "default")
    assert rows["follow-links"] == ("false", "default")
    assert rows["profile"] == ('"auto"', "default")
    assert set(rows) >= {"domain", "widths", "cache"}


def test_show_settings_flags_win_and_isolated_reads_no_file(project: Path) -> None:
    code, out, _err = run("scan", "src", "--show-settings", "--rlimit", "99", "--no-cache")
    assert code == 0
    rows = settings_of(out)
    assert rows["rlimit"] == ("99", "command line")
    assert rows["cache"] == ("none", "command line")
    assert rows["paths"] == ('["src"]', "command line")
    code, out, _err = run("scan", "--show-settings", "--isolated")
    assert code == 0
    assert out.splitlines()[0] == "# configuration file: (none)"
    assert settings_of(out)["select"] == ("[]", "default")


def test_show_files_lists_what_a_scan_reads(project: Path) -> None:
    code, out, err = run("scan", "--show-files")
    assert code == 0, err
    # The file's exclude and its size limit apply; a file that is not Python is not walked.
    assert out.splitlines() == ["src/attn/backend.py"]
    assert "src/attn/gen/big.py: not read: file of 12,000 bytes, over the limit of 10,000" in err
    code, out, _err = run("scan", "src/attn/gen", "src/vendored", "--show-files", "--isolated")
    assert code == 0
    assert out.splitlines() == ["src/attn/gen/big.py", "src/vendored/copy.py"]
    code, out, _err = run("scan", "--show-files", "--isolated", "--exclude", "src/attn")
    assert out.splitlines() == ["src/vendored/copy.py"]


def test_show_files_tells_of_a_link_out_of_the_tree(project: Path) -> None:
    (project / "src" / "attn" / "root").symlink_to("/")
    code, out, err = run("scan", "--show-files")
    assert code == 0
    assert out.splitlines() == ["src/attn/backend.py"]
    assert "src/attn/root: not read: symbolic link to /" in err


def test_show_settings_and_show_files_are_exclusive(project: Path) -> None:
    code, _out, err = run("scan", "--show-settings", "--show-files")
    assert code == 2
    assert "exclusive" in err
