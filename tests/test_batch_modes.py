"""Modes no code puts a batch in (`WORKER_MODES`): where the scanned tree has speculative
workers, a worker mode none of them puts a batch in does not run, and no obligation is made in
it (SGLang 0.5.13 keeps `ForwardMode.DRAFT_EXTEND` without the EAGLE v1 worker). A graph
runner's own mode does not count: it replays the batches it is handed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from idxcheck.app.run import scan
from idxcheck.model.config import Config
from idxcheck.profiles.schema import load_profile
from idxcheck.source.prefilter import batch_modes

ENUM = Path("fixtures/runtime/forward_mode.py").read_text()

V2_WORKER = """from forward_mode import ForwardMode


def verify(batch):
    batch.forward_mode = (
        ForwardMode.IDLE if batch.forward_mode.is_idle() else ForwardMode.TARGET_VERIFY
    )


def draft_extend(batch):
    batch.forward_mode = (
        ForwardMode.IDLE
        if batch.forward_mode.is_idle()
        else ForwardMode.DRAFT_EXTEND_V2
    )
"""

V1_WORKER = """from forward_mode import ForwardMode


def draft_extend_after_decode(batch):
    batch.forward_mode = ForwardMode.DRAFT_EXTEND
"""

RUNNER = """from forward_mode import ForwardMode


class DraftExtendRunner:
    def __init__(self, worker):
        if hasattr(worker, "model_runner"):
            self.forward_mode = ForwardMode.DRAFT_EXTEND
        else:
            self.forward_mode = ForwardMode.DRAFT_EXTEND_V2
"""

BACKEND = """import torch


class Backend:
    def __init__(self, model_runner):
        self.steps = model_runner.server_args.speculative_num_steps

    def init_forward_metadata_capture_cuda_graph(self, bs, forward_mode):
        if forward_mode.is_draft_extend():
            self.qo_indptr = torch.arange(0, bs * self.steps + 1, self.steps)
"""

SGLANG = load_profile("sglang")


def test_what_puts_a_batch_in_a_mode() -> None:
    assert batch_modes(V2_WORKER, SGLANG.idioms) == {"IDLE", "TARGET_VERIFY", "DRAFT_EXTEND_V2"}
    assert batch_modes(V1_WORKER, SGLANG.idioms) == {"DRAFT_EXTEND"}
    assert batch_modes(RUNNER, SGLANG.idioms) == set()  # the runner's own capture mode
    assert batch_modes("self.batch.forward_mode = ForwardMode.DRAFT_EXTEND\n", SGLANG.idioms) == {
        "DRAFT_EXTEND"
    }
    assert batch_modes("ForwardBatch(bs, forward_mode=ForwardMode.DECODE)", SGLANG.idioms) == {
        "DECODE"
    }
    assert (
        batch_modes(
            'raise ValueError(f"{forward_batch.forward_mode=}") # ForwardMode.', SGLANG.idioms
        )
        == set()
    )
    assert (
        batch_modes("if batch.forward_mode == ForwardMode.EXTEND:\n    pass\n", SGLANG.idioms)
        == set()
    )


def findings(tmp_path: Path, *files: tuple[str, str], config: Config | None = None) -> list[str]:
    (tmp_path / "forward_mode.py").write_text(ENUM)
    (tmp_path / "backend.py").write_text(BACKEND)
    for name, text in files:
        (tmp_path / name).write_text(text)
    result = scan([str(tmp_path)], config)
    assert result.errors == []
    return [f"{f.code} {f.mode}" for f in result.findings if f.span.path.endswith("backend.py")]


def test_a_worker_mode_no_worker_uses_does_not_run(tmp_path: Path) -> None:
    assert findings(tmp_path, ("worker_v2.py", V2_WORKER), ("runner.py", RUNNER)) == []


def test_a_v1_worker_makes_it_run(tmp_path: Path) -> None:
    found = findings(
        tmp_path, ("worker_v2.py", V2_WORKER), ("worker_v1.py", V1_WORKER), ("runner.py", RUNNER)
    )
    assert found == ["IDX001 DRAFT_EXTEND"]


def test_without_the_workers_every_mode_of_the_enum_runs(tmp_path: Path) -> None:
    assert findings(tmp_path, ("runner.py", RUNNER)) == ["IDX001 DRAFT_EXTEND"]


def test_the_cached_tree_facts_follow_the_workers(tmp_path: Path) -> None:
    config = replace(Config(), cache_dir=str(tmp_path / "cache"))
    tree = tmp_path / "tree"
    tree.mkdir()
    assert findings(tree, ("worker_v2.py", V2_WORKER), config=config) == []
    found = findings(tree, ("worker_v1.py", V1_WORKER), config=config)
    assert found == ["IDX001 DRAFT_EXTEND"]
    (tree / "worker_v1.py").write_text(V1_WORKER.replace("DRAFT_EXTEND", "DECODE"))
    assert findings(tree, config=config) == []
