"""The real pre-commit runs the hook of this repository (`.pre-commit-hooks.yaml`) against a
project with a buggy commit and then a fixing commit: the hook fails, then passes.

pre-commit builds the hook's environment by pip-installing this repository, which needs PyPI
(hence the `network` mark). The hook repository is a commit of this working tree as it is
(tracked and untracked files that git does not ignore), so the test checks the hook being
developed, not the last commit."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT
from .gitrepo import ENV, Repo

pytestmark = pytest.mark.network

BUG = (ROOT / "fixtures/bugs/eagle_draft_extend_v2.py").read_text()
FIX = (ROOT / "fixtures/correct/eagle_full_fix.py").read_text()
MODES = (ROOT / "fixtures/runtime/forward_mode.py").read_text()


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    repo = Repo(tmp_path_factory.mktemp("hook") / "idxcheck")
    for rel in filter(None, files):
        source = ROOT / rel
        if source.is_file():
            target = repo.root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    repo.commit("idxcheck as in the working tree")
    return repo.root


def pre_commit(
    project: Path, hook_repo: Path, home: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    env = {**ENV, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "try-repo",
            str(hook_repo),
            "idxcheck",
            "--verbose",
            *args,
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_hook_fails_on_the_buggy_commit_and_passes_on_the_fix(
    hook_repo: Path, tmp_path: Path
) -> None:
    home = tmp_path / "pre-commit-home"
    project = Repo(tmp_path / "project")
    project.write("srt/model_executor/forward_mode.py", MODES)
    project.write("README.md", "a serving engine\n")
    clean = project.commit("initial")

    project.write("srt/layers/attention/draft_backend.py", BUG)
    buggy = project.commit("draft-extend v2 backend")
    proc = pre_commit(project.root, hook_repo, home, "--from-ref", clean, "--to-ref", buggy)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "idxcheck" in output and "Failed" in output
    assert "srt/layers/attention/draft_backend.py:29:19: IDX001" in output
    assert "IDX002" in output

    project.write("srt/layers/attention/draft_backend.py", FIX)
    fixed = project.commit("use the draft-token width in draft-extend v2")
    proc = pre_commit(project.root, hook_repo, home, "--from-ref", buggy, "--to-ref", fixed)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Passed" in output

    # A later change to the enum alone brings the backend in again (here: still clean).
    project.write("srt/model_executor/forward_mode.py", MODES + "\n# a comment\n")
    touched = project.commit("touch the enum")
    proc = pre_commit(project.root, hook_repo, home, "--from-ref", fixed, "--to-ref", touched)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout
