"""The widest decode of vLLM 0.34.0 (`max_decode_query_len`) adds the query slots a drafter
appends to a verified request (`SpeculativeConfig.max_num_new_slots_for_drafting`), a symbol of
the vLLM profile. With it the width function is read from the tree, so a builder's
`reorder_batch_threshold` is known, and with it the widest decode its `_build_decode` is handed:
a padded verify width copied from the threshold is one token per request only where the
threshold's fallback (decode context parallelism) keeps verify steps out of the decode path.
Without the symbol, the threshold was unknown and that fallback was refuted against 1 + k:
0.34.0's ROCm AITER MLA `_build_decode` (`max_qo_len = self._varlen_decode_qlen`,
docs/triage/vllm-0.34.0.md).

The tree below is written for the test, in the shape of that builder."""

from __future__ import annotations

from pathlib import Path

from idxcheck.app.run import scan
from idxcheck.model.config import Config

AUTO = Config(profile="auto")

WIDTH = """\
def max_decode_query_len(config):
    spec = config.speculative_config
    if spec is None:
        return 1
    return spec.num_speculative_tokens + spec.max_num_new_slots_for_drafting + 1
"""

BUILDER = """\
from vllm.width import max_decode_query_len


class PaddedVerifyBuilder:
    def __init__(self, kv_cache_spec, layer_names, vllm_config, device):
        self.device = device
        self.reorder_batch_threshold = max_decode_query_len(vllm_config)
        if vllm_config.parallel_config.decode_context_parallel_size > 1:
            # Context-parallel decodes take one token per request.
            self.reorder_batch_threshold = 1
        self._padded_width = 0
        if vllm_config.speculative_config is not None and vllm_config.padded_verify:
            assert self.reorder_batch_threshold == max_decode_query_len(vllm_config)
            self._padded_width = self.reorder_batch_threshold

    def _build_decode(self, seq_lens_device, query_start_loc_cpu, num_decode_tokens):
        if self._padded_width > 0:
            max_qo_len = self._padded_width
        else:
            lens = query_start_loc_cpu[1:] - query_start_loc_cpu[:-1]
            max_qo_len = lens.max().item()
        return DecodeMetadata(max_qo_len=max_qo_len)
"""


def write_tree(root: Path, builder: str, width: str = WIDTH) -> Path:
    package = root / "vllm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "width.py").write_text(width)
    (package / "builder.py").write_text(builder)
    return package


def line_of(text: str, needle: str) -> int:
    (line,) = [n for n, row in enumerate(text.splitlines(), 1) if needle in row]
    return line


def padded_findings(package: Path) -> set[tuple[int, str, str]]:
    result = scan([str(package)], AUTO)
    assert result.errors == []
    return {(f.span.line, f.code, f.mode) for f in result.findings}


def test_a_padded_width_copied_from_the_threshold_is_proved(tmp_path: Path) -> None:
    package = write_tree(tmp_path, BUILDER)
    result = scan([str(package)], AUTO)
    assert result.errors == [] and result.findings == []
    site = line_of(BUILDER, "DecodeMetadata(max_qo_len=max_qo_len)")
    decided = {o.verdict.name for o in result.outcomes if o.span.line == site}
    assert decided == {"PROVED"}


def test_a_drafting_attribute_the_profile_does_not_name_leaves_the_threshold_unknown(
    tmp_path: Path,
) -> None:
    # The same tree with an attribute of the speculative config that is no symbol of the
    # profile: the widest decode, and so the threshold, are not known; the fallback of one
    # token per request is compared with every verify step (the false positive of 0.34.0
    # before the symbol).
    width = WIDTH.replace("max_num_new_slots_for_drafting", "draft_padding_rows")
    package = write_tree(tmp_path, BUILDER, width)
    fallback = line_of(BUILDER, "self.reorder_batch_threshold = 1")
    assert padded_findings(package) == {(fallback, "IDX002", "UNIFORM_DECODE")}


def test_a_padded_width_narrower_than_the_threshold_is_flagged(tmp_path: Path) -> None:
    # The threshold takes verify steps as decodes, the padded width is one token: a bug the
    # known width must not hide.
    builder = BUILDER.replace(
        "            assert self.reorder_batch_threshold == max_decode_query_len(vllm_config)\n",
        "",
    ).replace("self._padded_width = self.reorder_batch_threshold", "self._padded_width = 1")
    package = write_tree(tmp_path, builder)
    narrow = line_of(builder, "self._padded_width = 1")
    assert padded_findings(package) == {(narrow, "IDX002", "UNIFORM_DECODE")}
