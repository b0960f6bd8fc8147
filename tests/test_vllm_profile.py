"""The vLLM profile on hand-written vLLM-shaped builders (fixtures/vllm), and the choice of a
profile per file: a `vllm` package is vLLM's, the rest SGLang's, unless a profile is named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from idxcheck.app.config_file import ConfigError, FileSettings, Overrides, resolve
from idxcheck.app.run import scan
from idxcheck.app.selection import profile_of_file, profile_of_path
from idxcheck.model.config import Config

from .conftest import FIXTURES, ROOT
from .expectations import expectations

PACKAGE = FIXTURES / "vllm" / "vllm"
AUTO = Config(profile="auto", raise_on_unsupported=True)


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def found(result_findings: list) -> set[tuple[str, int, str]]:  # type: ignore[type-arg]
    return {(f.span.path, f.span.line, f.code) for f in result_findings}


def test_the_vllm_fixtures_are_flagged_where_they_expect() -> None:
    result = scan([rel(PACKAGE.parent)], AUTO)
    assert result.errors == []
    expected: set[tuple[str, int, str]] = set()
    for path in sorted(PACKAGE.glob("*.py")):
        expected |= expectations(path, rel(path))
    assert expected and found(result.findings) == expected
    (stride,) = [f for f in result.findings if f.span.path.endswith("buggy_builder.py")]
    # Compared with the runner of the same tree, in the phase of the entry point.
    assert stride.mode == "UNIFORM_DECODE"
    assert any(r.role == "runner" and "ToyModelRunner" in r.message for r in stride.related)
    assert stride.counterexample == {"bs": 2, "num_speculative_tokens": 1}
    assert "num_reqs=2 num_speculative_tokens=1" in stride.counterexample_text


@pytest.mark.parametrize("clean", ["clean_builder.py", "split_batch_clean.py"])
def test_the_clean_builders_are_proved_and_fully_modelled(clean: str) -> None:
    result = scan([rel(PACKAGE / clean), rel(PACKAGE / "runner.py")], AUTO)
    assert result.errors == [] and result.findings == []
    assert result.stats.proved > 0 and result.stats.unsupported == 0


def test_a_split_batch_is_known_in_a_phase_of_one_width() -> None:
    """In a captured verify batch every request is a decode of the builder whose threshold
    takes speculative requests, and none is of the one whose threshold is 1: the decode part's
    stride-1 layout is a finding in the first (CAPTURE and UNIFORM_DECODE, the phases of one
    width), and its branch is not taken in the second."""
    result = scan([rel(PACKAGE / "split_batch_bug.py"), rel(PACKAGE / "runner.py")], AUTO)
    assert {(f.code, f.mode) for f in result.findings} == {
        ("IDX001", "CAPTURE"),
        ("IDX001", "UNIFORM_DECODE"),
    }
    assert all(f.counterexample == {"bs": 2, "num_speculative_tokens": 1} for f in result.findings)
    clean = scan([rel(PACKAGE / "split_batch_clean.py"), rel(PACKAGE / "runner.py")], AUTO)
    by_phase: dict[tuple[str, int], set[str]] = {}
    for o in clean.outcomes:
        if o.code == "IDX001":
            by_phase.setdefault((o.function.split(".")[0], o.span.line), set()).add(o.verdict.name)
    # The prefill part of the builder that takes speculative requests as decodes is empty in
    # every phase of one width; the single-token builder's decode layout is built only where
    # the width is 1, and proved there.
    prefill_line = next(
        line for (cls, line) in by_phase if cls == "DecodePartFromLayoutBuilder" and line > 25
    )
    assert by_phase[("DecodePartFromLayoutBuilder", prefill_line)] == {"UNREACHABLE"}
    assert by_phase[("SingleTokenSplitBuilder", 49)] == {"PROVED"}


def test_the_threshold_of_the_builder_is_read_from_its_class(tmp_path: Path) -> None:
    package = tmp_path / "vllm"
    shutil.copytree(PACKAGE, package)
    clean = scan([str(package)], AUTO)
    assert {f.span.path for f in clean.findings} == {
        str(package / "buggy_builder.py"),
        str(package / "split_batch_bug.py"),
    }
    # The single-token builder is clean because its threshold keeps a verify step out of its
    # decode path; with the spec-as-decode threshold its stride-1 layout is the bug.
    path = package / "clean_builder.py"
    path.write_text(
        path.read_text().replace(
            "self.reorder_batch_threshold = 1", "self.reorder_batch_threshold = 4"
        )
    )
    widened = scan([str(package)], AUTO)
    flagged = {(f.span.path, f.code) for f in widened.findings}
    assert (str(path), "IDX001") in flagged


def test_without_a_runner_the_profile_default_is_used_and_said(tmp_path: Path) -> None:
    package = tmp_path / "vllm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(PACKAGE / "buggy_builder.py", package)
    result = scan([str(package)], AUTO)
    (stride,) = result.findings
    assert stride.mode == "UNIFORM_DECODE"
    assert any(r.role == "profile" and "vLLM profile" in r.message for r in stride.related)


# A configuration class in the shape of vLLM's (0.33.0 on): the width of a uniform decode is its
# property, with `self` the configuration object.
CONFIG_CLASS = """\
class VllmConfig:
    speculative_config: object = None

    @property
    def spec_tokens(self) -> int:
        return self.speculative_config.num_speculative_tokens

    @property
    def uniform_decode_query_len(self) -> int:
        \"\"\"Every request of a uniform decode: the sampled token and the drafts.\"\"\"
        return self.num_speculative_tokens + 1
"""


def test_without_a_runner_the_configuration_s_width_is_used(tmp_path: Path) -> None:
    package = tmp_path / "vllm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(PACKAGE / "buggy_builder.py", package)
    (package / "config.py").write_text(CONFIG_CLASS)
    result = scan([str(package)], AUTO)
    (stride,) = result.findings
    assert stride.mode == "UNIFORM_DECODE"
    assert stride.counterexample == {"bs": 2, "num_speculative_tokens": 1}
    assert any(
        r.role == "runner"
        and "VllmConfig.uniform_decode_query_len" in r.message
        and "`self.num_speculative_tokens + 1`" in r.message
        for r in stride.related
    )
    assert not any(r.role == "profile" for r in stride.related)
    assert "UNIFORM_DECODE" not in {w.mode for w in result.profile_widths}
    # A runner of the tree states the width itself: it is the one compared with.
    shutil.copy(PACKAGE / "runner.py", package)
    result = scan([str(package)], AUTO)
    (stride,) = result.findings
    runners = [r.message for r in stride.related if r.role == "runner"]
    assert runners and all("ToyModelRunner" in m for m in runners)


def test_a_width_property_of_another_class_states_nothing(tmp_path: Path) -> None:
    # Only the configuration classes the profile names state a width by a property.
    package = tmp_path / "vllm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(PACKAGE / "buggy_builder.py", package)
    (package / "config.py").write_text(CONFIG_CLASS.replace("class VllmConfig", "class Settings"))
    result = scan([str(package)], AUTO)
    (stride,) = result.findings
    assert any(r.role == "profile" for r in stride.related)


SGLANG_BACKEND = FIXTURES / "bugs" / "eagle_draft_extend_v2.py"


def test_a_tree_of_both_projects_scans_each_file_with_its_own_profile(tmp_path: Path) -> None:
    shutil.copytree(PACKAGE, tmp_path / "vllm")
    (tmp_path / "sglang_side").mkdir()
    shutil.copy(SGLANG_BACKEND, tmp_path / "sglang_side" / "backend.py")
    result = scan([str(tmp_path)], Config(profile="auto"))
    assert result.errors == []
    modes = {Path(f.span.path).name: f.mode for f in result.findings}
    assert modes["buggy_builder.py"] == "UNIFORM_DECODE"
    assert modes["backend.py"] == "DRAFT_EXTEND_V2"
    assert "UNIFORM_DECODE" in result.mode_order and "DRAFT_EXTEND_V2" in result.mode_order
    # A profile named applies to every file: SGLang's finds no phase in the vLLM builder.
    named = scan([str(tmp_path)], Config(profile="sglang"))
    assert {Path(f.span.path).name for f in named.findings} == {"backend.py"}


def test_a_vllm_package_is_a_folder_of_that_name_with_an_init(tmp_path: Path) -> None:
    (tmp_path / "vllm" / "v1").mkdir(parents=True)
    builder = tmp_path / "vllm" / "v1" / "builder.py"
    builder.write_text("")
    assert profile_of_file(str(builder)) == "sglang"  # no __init__.py: not a package
    (tmp_path / "vllm" / "__init__.py").write_text("")
    assert profile_of_file(str(builder)) == "vllm"
    assert profile_of_path(str(tmp_path / "vllm")) == "vllm"
    assert profile_of_path(str(tmp_path)) == "sglang"


def test_the_profile_is_chosen_per_file_unless_named_or_constrained() -> None:
    assert resolve(None, Overrides())[0].profile == "auto"
    assert resolve(None, Overrides(profile="vllm"))[0].profile == "vllm"
    in_file = FileSettings(path="pyproject.toml", root=".", profile="vllm")
    assert resolve(in_file, Overrides())[0].profile == "vllm"
    # A domain is written in one profile's symbols: SGLang's, unless a profile is named.
    constrained = resolve(None, Overrides(domain=("speculative_eagle_topk == 1",)))[0]
    assert constrained.profile == "sglang"
    named = resolve(None, Overrides(profile="vllm", domain=("num_speculative_tokens <= 4",)))[0]
    assert named.profile == "vllm"
    with pytest.raises(ConfigError, match="'auto' picks a profile per file"):
        resolve(None, Overrides(profile="auto", domain=("speculative_eagle_topk == 1",)))


LAYERED = """import torch
from typing import Generic, TypeVar

M = TypeVar("M")


class BaseBuilder(Generic[M]):
    reorder_batch_threshold: int = 1

    def __init__(self, vllm_config):
        self.vllm_config = vllm_config

    def _init_reorder_batch_threshold(self, threshold, spec_as_decode):
        self.reorder_batch_threshold = threshold
        if spec_as_decode:
            self.reorder_batch_threshold = max(threshold, max_decode_query_len(self.vllm_config))


class CommonBuilder(BaseBuilder[M]):
    def __init__(self, vllm_config):
        super().__init__(vllm_config)
        self._init_reorder_batch_threshold(self.reorder_batch_threshold, SPEC_AS_DECODE)


class LeafBuilder(CommonBuilder[dict]):
    def _build_decode(self, seq_lens_device, query_start_loc_cpu, num_decode_tokens):
        num_reqs = seq_lens_device.size(0)
        qo_indptr = torch.arange(0, num_reqs + 1, step=1)
        return DecodeMetadata(qo_indptr=qo_indptr)
"""


@pytest.mark.parametrize(("spec_as_decode", "flagged"), [("False", False), ("True", True)])
def test_the_threshold_is_followed_through_generic_bases_and_init_helpers(
    tmp_path: Path, spec_as_decode: str, flagged: bool
) -> None:
    # The class attribute of the base, raised at construction by a helper only `__init__`
    # calls, reached through generic bases (`CommonBuilder[M]`).
    package = tmp_path / "vllm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(PACKAGE / "runner.py", package)
    (package / "layered.py").write_text(LAYERED.replace("SPEC_AS_DECODE", spec_as_decode))
    result = scan([str(package)], Config(profile="auto"))
    assert result.errors == []
    assert (
        bool([f for f in result.findings if f.function == "LeafBuilder._build_decode"]) is flagged
    )


CAPTURED = '''import torch


class GraphBuilderBase:
    _cudagraph_support = AttentionCGSupport.NEVER

    @classmethod
    def get_cudagraph_support(cls, vllm_config, kv_cache_spec):
        """The support this builder declares."""
        return cls._cudagraph_support


class CapturedBuilder(GraphBuilderBase):
    _cudagraph_support = AttentionCGSupport.SUPPORT
    READER

    def build_for_cudagraph_capture(self, common_attn_metadata):
        num_reqs = common_attn_metadata.query_start_loc.shape[0] - 1
        qo_indptr = torch.arange(0, num_reqs + 1, step=1, dtype=torch.int32)
        return DecodeMetadata(qo_indptr=qo_indptr)
'''
OWN_READER = """
    @classmethod
    def get_cudagraph_support(cls, vllm_config, kv_cache_spec):
        return AttentionCGSupport.UNIFORM_BATCH if vllm_config else cls._cudagraph_support
"""


@pytest.mark.parametrize(
    ("support", "reader", "flagged"),
    [
        ("UNIFORM_SINGLE_TOKEN_DECODE", "", False),
        ("NEVER", "", False),
        ("UNIFORM_BATCH", "", True),
        # A reader of its own decides at run time: the class constant bounds nothing.
        ("UNIFORM_SINGLE_TOKEN_DECODE", OWN_READER, True),
    ],
)
def test_the_cuda_graph_support_of_a_builder_bounds_its_capture(
    tmp_path: Path, support: str, reader: str, flagged: bool
) -> None:
    package = tmp_path / "vllm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(PACKAGE / "runner.py", package)
    text = CAPTURED.replace("SUPPORT", support).replace("    READER\n", reader)
    (package / "captured.py").write_text(text)
    result = scan([str(package)], Config(profile="auto"))
    assert result.errors == []
    found = [
        f for f in result.findings if f.function == "CapturedBuilder.build_for_cudagraph_capture"
    ]
    assert bool(found) is flagged
    assert all(f.mode == "CAPTURE" for f in found)


QUERY_LENGTHS = """import enum
import torch
from typing import ClassVar


class QueryLengths(MEMBERS_BASE):
    SINGLE = SINGLE_VALUE
    UNIFORM = 2
    VARYING = 3


class CommonBuilder:
    query_lengths: ClassVar[QueryLengths] = QueryLengths.SINGLE
    reorder_batch_threshold: int = 1

    def __init__(self, vllm_config):
        self.vllm_config = vllm_config
        if self.query_lengths != QueryLengths.SINGLE:
            self.reorder_batch_threshold = max_decode_query_len(vllm_config)


class LeafBuilder(CommonBuilder):
    OVERRIDE

    def _build_decode(self, seq_lens_device, query_start_loc_cpu, num_decode_tokens):
        num_reqs = seq_lens_device.size(0)
        qo_indptr = torch.arange(0, num_reqs + 1, step=1)
        return DecodeMetadata(qo_indptr=qo_indptr)
"""


@pytest.mark.parametrize(
    ("base", "single", "override", "flagged"),
    [
        # The base's member keeps speculative requests out of the single-token decode path.
        ("enum.Enum", "1", "", False),
        # A subclass that takes uniform multi-token decodes lays them out with stride 1.
        ("enum.Enum", "1", "query_lengths = QueryLengths.UNIFORM", True),
        # Members that are not plain (an alias, a str mixin) are not read: the test stays open.
        ("enum.Enum", "2", "", True),
        ("str, enum.Enum", "'1'", "", True),
    ],
)
def test_a_plain_enum_member_of_a_class_body_decides_a_comparison(
    tmp_path: Path, base: str, single: str, override: str, flagged: bool
) -> None:
    package = tmp_path / "vllm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(PACKAGE / "runner.py", package)
    text = (
        QUERY_LENGTHS.replace("MEMBERS_BASE", base)
        .replace("SINGLE_VALUE", single)
        .replace("OVERRIDE", override or "pass")
    )
    (package / "builders.py").write_text(text)
    result = scan([str(package)], Config(profile="auto"))
    assert result.errors == []
    found = [f for f in result.findings if f.function == "LeafBuilder._build_decode"]
    assert bool(found) is flagged


DRAFTER = FIXTURES / "vllm_drafter" / "vllm"


def test_a_drafter_read_at_the_padded_count_is_flagged_where_it_expects() -> None:
    result = scan([rel(DRAFTER.parent)], AUTO)
    assert result.errors == []
    expected: set[tuple[str, int, str]] = set()
    for path in sorted(DRAFTER.glob("*.py")):
        expected |= expectations(path, rel(path))
    assert expected and found(result.findings) == expected
    for finding in result.findings:
        # Past `max_num_seqs * (1 + k)` only where a capture size is above it; a drafter runs
        # under a speculative config (k >= 1).
        cex = finding.counterexample
        assert cex["num_speculative_tokens"] >= 1
        bound = cex["max_bs"] * (1 + cex["num_speculative_tokens"])
        assert cex["max_cudagraph_capture_size"] > bound
        assert finding.message.startswith("slice `padded(")


def test_a_drafter_sized_for_the_largest_capture_is_proved_and_fully_modelled() -> None:
    result = scan([rel(DRAFTER / "clean_drafter.py")], AUTO)
    assert result.errors == [] and result.findings == []
    assert result.stats.proved > 0 and result.stats.unsupported == 0


def test_ranks_that_may_microbatch_are_not_modelled(tmp_path: Path) -> None:
    # Microbatching ranks are raised to the largest count of them, an eager rank's included:
    # the agreed count is then not bounded by the largest capture size, and not guessed.
    package = tmp_path / "vllm"
    shutil.copytree(DRAFTER, package)
    path = package / "clean_drafter.py"
    path.write_text(
        path.read_text().replace("allow_microbatching=False", "allow_microbatching=True")
    )
    result = scan([str(path)], Config(profile="auto"))
    assert result.findings == []
    reasons = {o.reason for o in result.outcomes if o.verdict.name == "UNSUPPORTED"}
    assert any("allow_microbatching" in r and "another rank" in r for r in reasons)
