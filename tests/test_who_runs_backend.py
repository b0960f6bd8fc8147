"""Who runs the backend: the speculative algorithm (an enum read from the scanned tree) and the
worker (draft or target) are conditions a backend and its graph runners share; exactly one
algorithm runs; and a draft worker whose backend a factory builds runs only the backends that
factory accepts (`idxcheck.facts.algorithms`)."""

from __future__ import annotations

from pathlib import Path

from idxcheck.app.run import scan, scan_source
from idxcheck.model.config import Config

STRICT = Config(raise_on_unsupported=True)

# An enum of our own, with the two algorithms the SGLang profile's draft factory names.
ENUM = """from enum import Enum, auto


class SpeculativeAlgorithm(Enum):
    RELAY = auto()
    DSPARK = auto()
    DFLASH = auto()
    NONE = auto()

    def is_relay(self):
        return self == SpeculativeAlgorithm.RELAY

    def is_dspark(self):
        return self == SpeculativeAlgorithm.DSPARK

    def is_dflash(self):
        return self in (SpeculativeAlgorithm.DFLASH,)

    def is_none(self):
        return self is SpeculativeAlgorithm.NONE

    def rows(self, window, on_draft):
        if on_draft and self.is_dspark():
            return window - 1
        return window

    def plain_rows(self, window, on_draft):
        return window

"""

RUNNER = """
class SpanGraphRunner:
    def __init__(self, model_runner):
        self.capture_forward_mode = ForwardMode.DLLM_EXTEND
        self.captured_req_width = model_runner.spec_algorithm.rows(
            model_runner.server_args.speculative_num_draft_tokens, model_runner.is_draft_worker
        )

"""

BACKEND = """
class SpanBackend:
    def __init__(self, model_runner):
        span = model_runner.server_args.speculative_num_draft_tokens
        self.span = WIDTH

    def init_forward_metadata(self, forward_batch):
        if forward_batch.forward_mode.is_dllm_extend():
            n = forward_batch.batch_size
            self.meta = Meta(qo_indptr=torch.arange(0, n * self.span + 1, self.span))

"""


def _scan(width: str, extra: str = "") -> list[tuple[int, str, str]]:
    text = "import torch\n" + ENUM + RUNNER + BACKEND.replace("WIDTH", width) + extra
    result = scan_source(text, "span.py", STRICT)
    assert result.errors == []
    return [(f.span.line, f.code, f.mode) for f in result.findings]


def test_the_bug_fixture_names_the_worker_and_the_algorithm() -> None:
    (finding,) = scan(["fixtures/bugs/worker_dependent.py"], STRICT).findings
    assert finding.code == "IDX001"
    assert ("--speculative-algorithm LOOKAHEAD", True) in finding.conditions
    assert ("a draft worker runs the backend", True) in finding.conditions
    assert finding.launch is not None
    assert "--speculative-algorithm LOOKAHEAD" in finding.launch.command
    assert "--speculative-algorithm EAGLE" not in finding.launch.command
    assert any("draft worker" in item for item in finding.launch.runtime)


def test_the_same_condition_on_both_sides_is_proved() -> None:
    width = (
        "span - 1 if model_runner.is_draft_worker and "
        "model_runner.spec_algorithm.is_dspark() else span"
    )
    assert _scan(width) == []
    # A parsed configured name is the same algorithm as the runtime's.
    parsed = (
        "span - 1 if model_runner.is_draft_worker and SpeculativeAlgorithm.from_string("
        "model_runner.server_args.speculative_algorithm).is_dspark() else span"
    )
    assert _scan(parsed) == []


def test_a_constructor_flag_is_the_same_worker() -> None:
    """`is_draft_worker` handed to the backend's constructor is the worker of its runners."""
    flagged = BACKEND.replace(
        "(self, model_runner):", "(self, model_runner, is_draft_worker=False):"
    )
    width = "span - 1 if is_draft_worker and model_runner.spec_algorithm.is_dspark() else span"
    text = "import torch\n" + ENUM + RUNNER + flagged.replace("WIDTH", width)
    result = scan_source(text, "span.py", STRICT)
    assert result.errors == []
    assert result.findings == []
    assert result.stats.proved > 0


def test_exactly_one_algorithm_runs() -> None:
    """Not RELAY, DFLASH or NONE is DSPARK only because the server runs exactly one."""
    width = (
        "span - 1 if model_runner.is_draft_worker and not ("
        "model_runner.spec_algorithm.is_relay() or model_runner.spec_algorithm.is_dflash() "
        "or model_runner.spec_algorithm.is_none()) else span"
    )
    assert _scan(width) == []


def test_another_condition_is_refuted() -> None:
    # The target worker's width on every worker, and the draft's width on the wrong algorithm.
    assert [code for _, code, _ in _scan("span")] == ["IDX001"]
    wrong = (
        "span - 1 if model_runner.is_draft_worker and "
        "model_runner.spec_algorithm.is_dflash() else span"
    )
    assert [code for _, code, _ in _scan(wrong)] == ["IDX001"]


def test_a_method_that_returns_its_argument_is_no_predicate() -> None:
    """`plain_rows` returns a parameter: read as a predicate it would be a condition, and the
    runner's width would be lost (nothing to compare with); interpreted, it is the window."""
    runner = RUNNER.replace(".rows(", ".plain_rows(")
    text = "import torch\n" + ENUM + runner + BACKEND.replace("WIDTH", "span - 1")
    result = scan_source(text, "span.py", STRICT)
    assert [f.code for f in result.findings] == ["IDX001"]


REGISTRY = """
DRAFT_ATTENTION_BACKEND_CHOICES = ["plain", "fast"]


@register_attention_backend("NAME")
def make_span(model_runner):
    return SpanBackend(model_runner)
"""


def test_a_draft_factory_that_never_builds_the_backend() -> None:
    """The DSpark draft worker builds only the backends its factory's list names: the full
    window of a backend registered under another name is never wrong there."""
    assert _scan("span", REGISTRY.replace("NAME", "wide")) == []
    assert [code for _, code, _ in _scan("span", REGISTRY.replace("NAME", "fast"))] == ["IDX001"]


def test_the_factory_list_under_its_earlier_name_as_a_tuple() -> None:
    """Releases before the list was `DRAFT_ATTENTION_BACKEND_CHOICES` kept the same choices as
    a tuple, `_SUPPORTED_DRAFT_BACKENDS`: read either way."""
    registry = REGISTRY.replace(
        'DRAFT_ATTENTION_BACKEND_CHOICES = ["plain", "fast"]',
        '_SUPPORTED_DRAFT_BACKENDS = (\n    "plain",\n    "fast",\n)',
    )
    assert _scan("span", registry.replace("NAME", "wide")) == []
    assert [code for _, code, _ in _scan("span", registry.replace("NAME", "fast"))] == ["IDX001"]
    # Two definitions that differ tell nothing: the exclusion is not assumed.
    both = registry + '\nDRAFT_ATTENTION_BACKEND_CHOICES = ["other"]\n'
    assert [code for _, code, _ in _scan("span", both.replace("NAME", "wide"))] == ["IDX001"]


WORKER = """
class StepWorker:
    def draft_extend(self, batch):
        batch.forward_mode = ForwardMode.DRAFT_EXTEND_V2
        return batch
"""


def _scan_tree(tmp_path: Path, worker_file: str) -> list[str]:
    """The backend's draft-extend width is the DSpark draft's, compared with a runner that
    captures in DRAFT_EXTEND_V2; `worker_file` is where the tree puts a batch in that mode."""
    runner = """
class ExtendGraphRunner:
    def __init__(self, model_runner):
        self.capture_forward_mode = ForwardMode.DRAFT_EXTEND_V2
        self.captured_req_width = model_runner.server_args.speculative_num_draft_tokens

"""
    backend = BACKEND.replace("is_dllm_extend()", "is_draft_extend_v2()").replace(
        "WIDTH",
        "span - 1 if model_runner.is_draft_worker and "
        "model_runner.spec_algorithm.is_dspark() else span",
    )
    (tmp_path / "span.py").write_text("import torch\n" + ENUM + runner + backend)
    (tmp_path / worker_file).write_text(WORKER)
    result = scan([str(tmp_path)], STRICT)
    assert result.errors == []
    return [f.code for f in result.findings]


def test_a_mode_only_the_eagle_workers_run_is_not_a_dspark_server_s(tmp_path: Path) -> None:
    """Only the EAGLE workers put a batch in DRAFT_EXTEND_V2: a DSpark server never runs it,
    and the DSpark draft's width there is no finding. A producer elsewhere keeps it one."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert _scan_tree(tmp_path / "a", "eagle_worker_v2.py") == []
    assert _scan_tree(tmp_path / "b", "step_worker.py") == ["IDX001"]


def test_a_backend_of_a_device_the_algorithm_does_not_run_on() -> None:
    """The tree's argument hook says DSpark runs on CUDA or NPU: a backend registered only for
    Intel's XPU never runs with it, nor its draft worker. Where the hook also names XPU, or
    says nothing, the backend is compared as any other."""
    hook = '\ndef check(args):\n    raise ValueError("DSpark speculative decoding only supports {} device.")\n'
    registry = REGISTRY.replace('"plain", "fast"', '"plain", "intel_xpu"').replace(
        "NAME", "intel_xpu"
    )
    assert _scan("span", registry + hook.format("CUDA or NPU")) == []
    codes = [code for _, code, _ in _scan("span", registry + hook.format("CUDA, NPU or XPU"))]
    assert codes == ["IDX001"]
    assert [code for _, code, _ in _scan("span", registry)] == ["IDX001"]
