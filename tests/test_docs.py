"""docs/: the generated pages (one per rule, the rule index, the command reference, the profile
schema) match the rule catalogue and the CLI; links lead to files and headings that exist;
install lines name no package-index release; the documented examples run.
After an intended change: IDXCHECK_UPDATE_DOCS=1 python -m pytest tests/test_readme.py tests/test_docs.py"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from idxcheck.app.config_file import KEYS
from idxcheck.cli.main import FORMATS

from .conftest import ROOT
from .docs_gen import (
    UPDATE,
    cli_output,
    command_paths,
    refresh,
    rule_pages,
    sources,
    stale_blocks,
    updating,
)
from .gitrepo import ENV, Repo

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DOCS = ROOT / "docs"
RULES = DOCS / "rules"
BIN = Path(sys.executable).parent


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def test_rule_pages_match_the_catalogue() -> None:
    want = rule_pages()
    if updating():
        RULES.mkdir(exist_ok=True)
        for stale in RULES.glob("*.md"):
            if stale.name not in want:
                stale.unlink()
        for name, text in want.items():
            (RULES / name).write_text(text, encoding="utf-8")
    have = {p.name: p.read_text(encoding="utf-8") for p in RULES.glob("*.md")}
    assert sorted(have) == sorted(want), (
        f"docs/rules/ lists other rules than the catalogue: {UPDATE}"
    )
    stale = sorted(name for name in want if have[name] != want[name])
    assert not stale, f"docs/rules/ pages {stale} are out of date: {UPDATE}"


def test_generated_blocks_in_docs_match() -> None:
    found = 0
    for page in pages():
        text = page.read_text(encoding="utf-8")
        if not sources(text):
            continue
        found += 1
        if updating():
            text = refresh(text)
            page.write_text(text, encoding="utf-8")
        stale = stale_blocks(text)
        assert not stale, f"{page.relative_to(ROOT)}: blocks {stale} are out of date: {UPDATE}"
    assert found >= 2  # the command reference and the profile schema


def test_command_reference_covers_every_command() -> None:
    listed = sources((DOCS / "commands.md").read_text(encoding="utf-8"))
    want = [f"{path} --help" for path in command_paths()]
    missing = [c for c in want if c not in listed]
    assert not missing, f"docs/commands.md lacks {missing}: add a block for each, then {UPDATE}"
    assert sorted(listed) == sorted(want)


def test_profile_page_holds_the_schema() -> None:
    text = (DOCS / "profiles.md").read_text(encoding="utf-8")
    assert "idxcheck.profiles.constants:markdown" in sources(text)


def without_code(text: str) -> str:
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "x", text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def documents() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *pages()]


def test_links_lead_to_files_and_headings_that_exist() -> None:
    broken = []
    for doc in documents():
        for target in re.findall(r"\]\(([^)\s]+)\)", without_code(doc.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):
                continue  # an external address
            name, _, anchor = target.partition("#")
            path = (doc.parent / name).resolve() if name else doc
            if not path.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_every_page_is_reachable_from_the_index() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = {(DOCS / t.partition("#")[0]).resolve() for t in re.findall(r"\]\(([^)#\s]+)", index)}
    unlinked = [
        str(p.relative_to(ROOT))
        for p in pages()
        if p.parent != RULES and p.name != "README.md" and p.resolve() not in linked
    ]
    assert not unlinked, f"docs/README.md does not link {unlinked}"


def test_every_configuration_key_and_report_format_is_documented() -> None:
    configuration = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert [k for k in KEYS if f"| `{k}` |" not in configuration] == []
    reports = (DOCS / "reports.md").read_text(encoding="utf-8")
    assert [f for f in FORMATS if f"| `{f}` |" not in reports] == []


INDEX_NAME = re.compile(r"idxcheck(\[[\w,]+\])?([<>=!~].*)?")


def index_installs(text: str) -> list[str]:
    """The `pip install` arguments that name idxcheck alone, as from a package index."""
    out = []
    for args in re.findall(r"pip install ([^`\n#&;)|]*)", text):
        try:
            words = shlex.split(args)
        except ValueError:
            words = args.split()
        out += [w for w in words if INDEX_NAME.fullmatch(w)]
    return out


def test_no_install_line_names_a_package_index_release() -> None:
    # idxcheck is installed from a checkout, a git URL or a wheel; no index has a release.
    files = [*documents(), DOCS / "ci" / "idxcheck.yml", ROOT / "CONTRIBUTING.md"]
    found = {str(f.relative_to(ROOT)): index_installs(f.read_text(encoding="utf-8")) for f in files}
    assert {f: words for f, words in found.items() if words} == {}
    workflow = yaml.safe_load((DOCS / "ci" / "idxcheck.yml").read_text())
    assert (
        index_installs(f"pip install '{workflow['jobs']['idxcheck']['env']['IDXCHECK_PIP_SPEC']}'")
        == []
    )
    # The check itself catches what the documents said before.
    assert index_installs("pip install 'idxcheck[runtime]'") == ["idxcheck[runtime]"]
    assert index_installs("python -m pip install idxcheck==0.1.0 && x") == ["idxcheck==0.1.0"]
    assert index_installs('pip install "idxcheck @ git+https://h/o/idxcheck@1"') == []


def version() -> str:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return str(tomllib.load(handle)["project"]["version"])


def test_the_version_is_pyprojects_and_the_docs_say_which() -> None:
    printed = cli_output("idxcheck --version")
    assert printed == f"idxcheck, version {version()}\n"
    assert printed in (DOCS / "getting-started.md").read_text(encoding="utf-8")
    assert f"(`{version()}`)" in (ROOT / "README.md").read_text(encoding="utf-8")
    wheels = {
        w
        for doc in documents()
        for w in re.findall(r"idxcheck-([\w.]+)-py3-none-any\.whl", doc.read_text(encoding="utf-8"))
    }
    wheels |= set(
        re.findall(
            r"idxcheck-([\w.]+)-py3-none-any\.whl", (DOCS / "ci" / "idxcheck.yml").read_text()
        )
    )
    assert wheels == {version()}  # the wheel a build makes is named by the version
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog
    assert re.search(rf"^## \[{re.escape(version())}\]", changelog, re.M)


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S)


def test_the_library_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    exec(python_blocks(DOCS / "api.md")[0], {})
    lines = capsys.readouterr().out.splitlines()
    assert lines
    assert all(line.startswith("fixtures/bugs/") and " IDX001 " in line for line in lines)


def yaml_blocks(path: Path) -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S)


def test_the_hook_repository_snippet_names_this_repositorys_hook() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    configs = [yaml.safe_load(b) for b in yaml_blocks(DOCS / "ci.md") if "repos:" in b]
    remote = next(c["repos"][0] for c in configs if c["repos"][0]["repo"] != "local")
    assert [h["id"] for h in remote["hooks"]] == [hooks[0]["id"]]
    assert "OWNER" in remote["repo"] and remote["rev"] == "REV"  # placeholders, said so
    local = next(c["repos"][0]["hooks"][0] for c in configs if c["repos"][0]["repo"] == "local")
    assert local["entry"] == hooks[0]["entry"]


def test_the_local_hook_snippet_runs_in_pre_commit(tmp_path: Path) -> None:
    block = next(b for b in yaml_blocks(DOCS / "ci.md") if "repo: local" in b)
    env = {
        **os.environ,
        **{k: v for k, v in ENV.items() if k.startswith("GIT_")},
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PRE_COMMIT_COLOR": "never",
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",  # the idxcheck under test
    }
    project = Repo(tmp_path / "project")
    project.write(".pre-commit-config.yaml", block)
    project.write(
        "srt/model_executor/forward_mode.py",
        (ROOT / "fixtures/runtime/forward_mode.py").read_text(),
    )
    clean = project.commit("initial")

    def run(start: str, end: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", "--from-ref", start, "--to-ref", end],
            cwd=project.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    project.write(
        "srt/layers/attention/draft_backend.py",
        (ROOT / "fixtures/bugs/eagle_draft_extend_v2.py").read_text(),
    )
    buggy = project.commit("draft-extend v2 backend")
    proc = run(clean, buggy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "srt/layers/attention/draft_backend.py:29:19: IDX001" in proc.stdout

    project.write(
        "srt/layers/attention/draft_backend.py",
        (ROOT / "fixtures/correct/eagle_full_fix.py").read_text(),
    )
    fixed = project.commit("use the draft-token width in draft-extend v2")
    proc = run(buggy, fixed)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout
