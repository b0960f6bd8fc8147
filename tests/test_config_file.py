"""`[tool.idxcheck]`: found upward from the scanned paths, each key has its effect, flags win,
mistakes are exit 2 with the file and key named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from idxcheck.cli import main

BUG = Path("fixtures/bugs/eagle_draft_extend_v2.py").resolve()
FIX = Path("fixtures/correct/eagle_full_fix.py").resolve()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def findings(*args: str) -> list[dict]:  # type: ignore[type-arg]
    code, out, err = run("scan", "--format", "json", *args)
    assert code in (0, 1), err
    return json.loads(out)["findings"]  # type: ignore[no-any-return]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with the config at its root, two backends below, run from a subfolder."""
    root = tmp_path / "proj"
    (root / "src" / "attn").mkdir(parents=True)
    (root / "src" / "legacy").mkdir()
    shutil.copy(BUG, root / "src" / "attn" / "backend.py")
    shutil.copy(BUG, root / "src" / "legacy" / "old_backend.py")
    shutil.copy(FIX, root / "src" / "attn" / "fixed.py")
    monkeypatch.chdir(root / "src")
    return root


def write(root: Path, body: str) -> None:
    (root / "pyproject.toml").write_text(f'[project]\nname = "p"\n\n[tool.idxcheck]\n{body}\n')


def test_found_upward_and_excludes_are_anchored_at_its_folder(project: Path) -> None:
    assert {f["path"] for f in findings(".")} == {"attn/backend.py", "legacy/old_backend.py"}
    write(project, 'exclude = ["src/legacy"]')
    assert {f["path"] for f in findings(".")} == {"attn/backend.py"}
    # The same file, run with other paths, means the same thing (a path below the working
    # folder is shown relative to it, however it was given).
    assert {f["path"] for f in findings(str(project / "src"))} == {"attn/backend.py"}


def test_a_pyproject_without_the_table_is_passed_over(project: Path) -> None:
    write(project, 'select = ["IDX002"]')
    (project / "src" / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    assert {f["code"] for f in findings(".")} == {"IDX002"}


def test_select_ignore_and_flags_override(project: Path) -> None:
    write(project, 'select = ["IDX001"]')
    assert {f["code"] for f in findings(".")} == {"IDX001"}
    assert {f["code"] for f in findings(".", "--select", "IDX002")} == {"IDX002"}
    write(project, 'ignore = ["IDX001"]')
    assert {f["code"] for f in findings(".")} == {"IDX002"}
    assert {f["code"] for f in findings(".", "--isolated")} == {"IDX001", "IDX002"}


def test_per_file_ignores(project: Path) -> None:
    write(
        project,
        "[tool.idxcheck.per-file-ignores]\n"
        '"src/legacy/*" = ["IDX001", "IDX002"]\n'
        '"fixed.py" = ["IDX001"]',
    )
    code, out, _ = run("scan", ".")
    assert code == 1
    assert "legacy/old_backend.py" not in out.split("Found")[0]
    assert "2 ignored by per-file-ignores" in out


def test_domain_widths_rlimit_strict_and_profile(project: Path) -> None:
    assert findings(".")
    write(project, 'domain = ["speculative_eagle_topk == 1"]')
    assert findings(".") == []  # under topk == 1 the old expression is right
    assert findings(
        ".", "--domain", "speculative_eagle_topk >= 1"
    )  # the flag replaces the file's list
    write(project, 'widths = { DRAFT_EXTEND_V2 = "speculative_num_steps + 1" }')
    # A runtime laying out num_steps + 1 agrees with the old backends and not with the fix.
    assert {f["path"] for f in findings(".")} == {"attn/fixed.py"}
    write(project, 'rlimit = 5000000\nstrict = true\nprofile = "sglang"')
    assert findings(".")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('selec = ["IDX001"]', "unknown key 'selec' (did you mean 'select'?)"),
        ('select = "IDX001"', "select must be a list of strings"),
        ('select = ["IDX999"]', "select: unknown rule code 'IDX999'"),
        ("rlimit = 0", "rlimit must be a positive integer"),
        ('strict = "yes"', "strict must be true or false"),
        ('profile = "tensorrt"', "profile: unknown profile 'tensorrt'"),
        ('domain = ["topk =="]', "domain: cannot parse constraint 'topk =='"),
        ('widths = { VERIFY = "1" }', "widths: unknown forward mode 'VERIFY'"),
        ('widths = { DECODE = "1 +" }', "widths.DECODE: cannot parse term"),
        (
            'per-file-ignores = { "a.py" = "IDX001" }',
            "per-file-ignores.'a.py' must be a list of rule codes",
        ),
        ("select = [", "invalid TOML"),
    ],
)
def test_bad_configuration_is_exit_2_naming_file_and_key(
    project: Path, body: str, message: str
) -> None:
    write(project, body)
    code, out, err = run("scan", ".")
    assert code == 2, out
    assert message in err
    assert str(project / "pyproject.toml") in err


def test_config_option_names_a_file(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "idxcheck.toml"
    other.write_text('select = ["IDX002"]\n')
    assert {f["code"] for f in findings(".", "--config", str(other))} == {"IDX002"}
    code, _, err = run("scan", ".", "--config", str(tmp_path / "missing.toml"))
    assert code == 2 and "cannot read" in err
