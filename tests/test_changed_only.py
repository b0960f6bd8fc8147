"""`idxcheck scan --changed-only FILE...`: the whole project is checked, and the findings that
touch a changed file are reported, so a change to what a backend depends on is caught too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from idxcheck.app.api import scan
from idxcheck.app.changed import ChangedFiles
from idxcheck.cli import main
from idxcheck.model.findings import Related
from idxcheck.model.spans import Span

from .gitrepo import Repo
from .sarif_check import assert_valid_sarif_file

BUG = Path("fixtures/bugs/eagle_draft_extend_v2.py").read_text()
FIX = Path("fixtures/correct/eagle_full_fix.py").read_text()
MODES = Path("fixtures/runtime/forward_mode.py").read_text()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    repo = Repo(tmp_path / "project")
    repo.write("srt/model_executor/forward_mode.py", MODES)
    repo.write("srt/layers/attention/draft_backend.py", BUG)
    repo.write("srt/layers/attention/fixed_backend.py", FIX)
    repo.write("srt/utils.py", "def helper():\n    return 1\n")
    repo.commit("initial")
    monkeypatch.chdir(repo.root)
    return repo


def changed(*files: str) -> tuple[int, list[str], dict]:  # type: ignore[type-arg]
    result = CliRunner().invoke(main, ["scan", "--changed-only", "--format", "json", *files])
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.stdout)
    return result.exit_code, sorted({f["path"] for f in doc["findings"]}), doc


def test_a_changed_backend_reports_its_findings(repo: Repo) -> None:
    code, paths, doc = changed("srt/layers/attention/draft_backend.py")
    assert (code, paths) == (1, ["srt/layers/attention/draft_backend.py"])
    # The scan covered the project, so the enum of the tree was read, not the profile default.
    assert doc["mode_model"] == "srt/model_executor/forward_mode.py"


def test_an_unrelated_change_passes_despite_old_findings(repo: Repo) -> None:
    assert changed("srt/utils.py")[:2] == (0, [])
    assert changed("srt/layers/attention/fixed_backend.py")[:2] == (0, [])


def test_a_changed_forward_mode_enum_rechecks_every_backend(repo: Repo) -> None:
    code, paths, _ = changed("srt/model_executor/forward_mode.py")
    assert (code, paths) == (1, ["srt/layers/attention/draft_backend.py"])


def test_from_a_subfolder_paths_stay_as_given(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo.root / "srt" / "layers")
    code, paths, _ = changed("attention/draft_backend.py")
    assert code == 1
    assert [Path(p).resolve() for p in paths] == [
        repo.root / "srt/layers/attention/draft_backend.py"
    ]


def test_related_locations_in_a_changed_file_count() -> None:
    finding = scan(["fixtures/bugs/eagle_draft_extend_v2.py"]).result.findings[0]
    runner = Related(
        "runner", "lays out num_draft_tokens", Span("fixtures/runtime/forward_mode.py", 3, 0, 3, 5)
    )
    with_runner = type(finding)(**{**finding.__dict__, "related": (*finding.related, runner)})
    files = ChangedFiles(["fixtures/runtime/forward_mode.py"])
    assert not files.touches(finding)
    assert files.touches(with_runner)


def test_with_a_diff_base_only_what_the_change_brought_is_reported(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook on a pull request: the changed files' findings that the base commit had are
    not reported, those the change brought are, and the base scan names the ref's files as the
    work tree's (a run from a subfolder too)."""
    base = repo.git("rev-parse", "HEAD").strip()
    draft = "srt/layers/attention/draft_backend.py"
    fixed = "srt/layers/attention/fixed_backend.py"
    repo.write(draft, BUG + "\n# a comment on the known bug\n")
    repo.write(fixed, FIX.replace("return self.num_draft_tokens", "return 1"))

    code, paths, doc = changed(draft, "--diff-base", base)
    assert (code, paths) == (0, [])
    assert doc["baselined"] == 2  # the draft backend's two known findings

    code, paths, doc = changed(draft, fixed, "--diff-base", base)
    assert (code, paths) == (1, [fixed])
    assert doc["baselined"] == 2
    regressed = doc["findings"]

    monkeypatch.chdir(repo.root / "srt" / "layers")
    code, paths, doc = changed(
        "attention/draft_backend.py", "attention/fixed_backend.py", "--diff-base", base
    )
    assert code == 1
    assert [f["code"] for f in doc["findings"]] == [f["code"] for f in regressed]
    assert [Path(p).resolve() for p in paths] == [repo.root / fixed]


META = """from dataclasses import dataclass

import torch


@dataclass
class DraftMeta:
    FIELDS
"""

POSITIONAL = """import torch

from meta import DraftMeta


class Backend:
    def __init__(self, model_runner):
        self.ndt = model_runner.server_args.speculative_num_draft_tokens
        self.steps = model_runner.server_args.speculative_num_steps

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, forward_mode, spec_info):
        if forward_mode.is_draft_extend_v2():
            qo_indptr = torch.arange(0, bs * self.ndt + 1, self.ndt)
            self.forward_metadata = DraftMeta(self.steps + 1, qo_indptr)

    def forward_extend(self, q, k, v, layer, forward_batch):
        meta = self.forward_metadata
        return extend_attention(q, k, v, meta.qo_indptr, meta.max_extend_len)
"""


def test_a_reordered_dataclass_reports_the_backend_it_breaks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend builds its metadata by field order; the edit that moves `max_extend_len` to
    the first field is in the dataclass's file alone, and the hook on that file reports the
    backend's findings it brought."""
    repo = Repo(tmp_path / "project")
    repo.write("pkg/forward_mode.py", MODES)
    repo.write(
        "pkg/meta.py", META.replace("FIELDS", "qo_indptr: torch.Tensor\n    max_extend_len: int")
    )
    repo.write("pkg/backend.py", POSITIONAL)
    repo.commit("initial")
    monkeypatch.chdir(repo.root)
    assert changed("pkg/meta.py")[:2] == (0, [])
    repo.write(
        "pkg/meta.py", META.replace("FIELDS", "max_extend_len: int\n    qo_indptr: torch.Tensor")
    )
    code, paths, doc = changed("pkg/meta.py")
    assert (code, paths) == (1, ["pkg/backend.py"])
    for finding in doc["findings"]:
        dataclass = [r for r in finding["related"] if r["role"] == "dataclass"]
        assert [(r["path"], r["line"]) for r in dataclass] == [("pkg/meta.py", None)]
        assert "`max_extend_len` is the field of `DraftMeta`" in dataclass[0]["message"]
    # The backend's own file changed instead: reported as before.
    assert changed("pkg/backend.py")[:2] == (1, ["pkg/backend.py"])
    # In SARIF, the dataclass's file is a related location without a region.
    CliRunner().invoke(main, ["scan", "--changed-only", "pkg/meta.py", "--format", "sarif=r.sarif"])
    result = assert_valid_sarif_file(repo.root / "r.sarif")["runs"][0]["results"][0]
    assert {"artifactLocation": {"uri": "pkg/meta.py", "uriBaseId": "%SRCROOT%"}} in [
        r.get("physicalLocation") for r in result["relatedLocations"]
    ]


def test_a_dataclass_of_the_same_file_is_no_related_location(tmp_path: Path) -> None:
    """The field order of a dataclass in the backend's own file is shown by the backend's
    file already; only another file's dataclass is named."""
    meta = META.replace("FIELDS", "max_extend_len: int\n    qo_indptr: torch.Tensor")
    backend = POSITIONAL.replace("from meta import DraftMeta\n", meta.split("import torch\n")[1])
    (tmp_path / "forward_mode.py").write_text(MODES)
    (tmp_path / "backend.py").write_text(backend)
    findings = scan([str(tmp_path)]).result.findings
    assert findings and all(r.role != "dataclass" for f in findings for r in f.related)
