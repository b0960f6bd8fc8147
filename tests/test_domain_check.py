"""Unknown symbols, functions and syntax in `--domain`, `domain` and `widths` stop the run with
exit 2 before the scan, naming each with a "did you mean"; the profile's short names work."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from idxcheck import api
from idxcheck.app import api as app_api
from idxcheck.cli import main
from idxcheck.profiles.schema import available_profiles, load_profile
from idxcheck.sym.parse import ConstraintError, parse_formula, parse_term
from idxcheck.sym.terms import Sym, formula_symbols, symbols_of

BUG = Path("fixtures/bugs/eagle_draft_extend_v2.py").resolve()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def no_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan that starts fails the test: the error must come before it."""

    def scanned(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the scan started")

    monkeypatch.setattr(app_api, "scanned", scanned)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copy(BUG, root / "backend.py")
    monkeypatch.chdir(root)
    return root


def write(root: Path, body: str) -> Path:
    path = root / "pyproject.toml"
    path.write_text(f'[project]\nname = "p"\n\n[tool.idxcheck]\n{body}\n')
    return path


def test_a_misspelt_domain_symbol_is_exit_2_with_a_suggestion(no_scan: None) -> None:
    code, _, err = run("scan", str(BUG), "--domain", "speculative_eagle_tokp == 1")
    assert code == 2
    assert "--domain: " in err and "in 'speculative_eagle_tokp == 1'" in err
    assert "unknown symbol speculative_eagle_tokp (did you mean speculative_eagle_topk?)" in err


def test_every_unknown_name_is_named_and_one_without_a_close_symbol_points_to_the_list(
    no_scan: None,
) -> None:
    code, _, err = run("scan", str(BUG), "--domain", "fooo == 1 and num_stpes > 2")
    assert code == 2
    assert "unknown symbol fooo" in err
    assert "unknown symbol num_stpes (did you mean num_steps?)" in err
    assert "idxcheck symbols" in err


def test_unknown_functions_and_syntax_are_named(no_scan: None) -> None:
    code, _, err = run("scan", str(BUG), "--domain", "implie(topk == 1, num_steps == 2)")
    assert code == 2 and "unknown function implie (did you mean implies?)" in err
    code, _, err = run("scan", str(BUG), "--domain", "topk / 2 == 1")
    assert code == 2 and "unsupported operator /" in err
    code, _, err = run("scan", str(BUG), "--domain", "server_args.topk == 1")
    assert code == 2 and "server_args.topk: symbols are plain names (did you mean topk?)" in err
    code, _, err = run("scan", str(BUG), "--domain", "topk in (1, 2)")
    assert code == 2 and "unsupported comparison" in err
    code, _, err = run("scan", str(BUG), "--domain", "max(topk) == 1")
    assert code == 2 and "max() takes 2 arguments" in err
    code, _, err = run("scan", str(BUG), "--domain", "topk ==")
    assert code == 2 and "cannot parse constraint 'topk =='" in err


def test_an_unknown_profile_on_the_command_line_is_exit_2_before_the_scan(no_scan: None) -> None:
    code, _, err = run("scan", str(BUG), "--profile", "nope")
    assert code == 2 and "--profile: unknown profile 'nope'" in err


def test_the_config_file_names_itself_the_key_and_the_symbol(project: Path, no_scan: None) -> None:
    path = write(project, 'domain = ["fooo == 1"]')
    code, _, err = run("scan", ".")
    assert code == 2
    assert f"{path}: [tool.idxcheck]: domain: unknown symbol fooo" in err
    write(project, 'widths = { DRAFT_EXTEND_V2 = "speculative_num_draft_tokenz" }')
    code, _, err = run("scan", ".")
    assert code == 2
    assert "widths.DRAFT_EXTEND_V2: unknown symbol speculative_num_draft_tokenz" in err
    assert "(did you mean speculative_num_draft_tokens?)" in err


def test_short_names_narrow_the_domain_as_the_long_ones_do(project: Path) -> None:
    assert run("scan", ".")[0] == 1
    # Both findings of the fixture need topk > 1.
    assert run("scan", ".", "--domain", "topk == 1")[0] == 0
    assert run("scan", ".", "--domain", "speculative_eagle_topk == 1")[0] == 0
    write(project, 'domain = ["topk == 1"]')
    assert run("scan", ".")[0] == 0
    write(project, 'widths = { DRAFT_EXTEND_V2 = "num_steps + 1" }')
    assert run("scan", ".")[0] == 0


def test_the_library_api_rejects_an_unknown_symbol() -> None:
    with pytest.raises(ConstraintError, match="unknown symbol fooo"):
        api.scan([str(BUG)], api.Config(domain=("fooo == 1",)))
    with pytest.raises(ConstraintError, match="did you mean num_draft_tokens"):
        api.scan([str(BUG)], api.Config(widths={"DRAFT_EXTEND_V2": "num_draft_token"}))
    with pytest.raises(ConstraintError, match="unknown forward mode 'VERIFY'"):
        api.scan([str(BUG)], api.Config(widths={"VERIFY": "1"}))


def test_parse_checks_names_only_against_the_symbols_it_is_given() -> None:
    aliases = {"topk": "speculative_eagle_topk"}
    symbols = {"speculative_eagle_topk", "bs"}
    formula = parse_formula("topk >= bs", aliases, symbols)
    assert formula_symbols(formula) == {"speculative_eagle_topk", "bs"}
    assert parse_term("bs", aliases, symbols) == Sym("bs")
    # Without a list of symbols any name is one (the profile's own constants).
    assert symbols_of(parse_term("anything + 1")) == {"anything"}
    with pytest.raises(ConstraintError, match=r"unknown symbol tokp \(did you mean topk\?\)"):
        parse_formula("tokp >= 1", aliases, symbols)
    with pytest.raises(ConstraintError, match="unknown symbol x"):
        parse_term("min(bs, x)", aliases, symbols)
    with pytest.raises(ConstraintError, match="unknown function floor"):
        parse_term("floor(bs)")


@pytest.mark.parametrize("name", available_profiles())
def test_each_profile_names_only_its_own_symbols(name: str) -> None:
    """What the users' constraints are checked against (DISPLAY) is every symbol the profile's
    own constraints and widths use."""
    profile = load_profile(name)
    used: set[str] = set()
    for constraint in profile.domain:
        used |= formula_symbols(constraint.formula)
    for constraint in profile.mode_constraints:
        used |= formula_symbols(constraint.formula)
    for width in (*profile.default_widths.values(), *profile.packed_modes.values()):
        used |= symbols_of(width.term)
    for term in profile.phase_widths.values():
        used |= symbols_of(term)
    used |= set(profile.config_symbols.values()) | set(profile.init_param_symbols.values())
    used |= set(profile.runner_symbols.values())
    assert used <= set(profile.display)
