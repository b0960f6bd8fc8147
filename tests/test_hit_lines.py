"""The lines whose code is analysed: a role's words count where they make a role name (the name
they are part of, cut at anything but a letter, digit or `_`), runner words and tree-fact
patterns count wherever they are."""

from __future__ import annotations

import re

import pytest

from idxcheck.engine import Prefilter, scan_source
from idxcheck.profile import load_profile

PREFILTER = Prefilter(load_profile("sglang"))


@pytest.mark.parametrize(
    "line",
    [
        "self.qo_indptr = x",
        "metadata.cu_seqlens_q[: bs + 1] = y",
        "kernel[grid](q, max_extend_len=n)",
        'buffers = {"max_seqlen_q": n}',
        "self.cuda_graph_qo_indptr_buf = torch.zeros(n)",
        "n = self.num_tokens_per_bs",  # a runner word: anywhere
        "    def init_cuda_graph_state(self, max_bs, max_num_tokens):",
        "x = (cu_seqlens_q)",
    ],
)
def test_role_names_and_runner_words_are_hits(line: str) -> None:
    assert PREFILTER.hit_lines(f"a = 1\n{line}\n") == [2]


@pytest.mark.parametrize(
    "line",
    [
        "if const_expr(seqlen.has_cu_seqlens_q):",  # the role's words inside another name
        "kv_qo_indptr = x",
        "_qo_indptr_kernel[grid](x)",
        "use_max_seqlen_q_heuristic = True",
    ],
)
def test_role_words_inside_other_names_are_not(line: str) -> None:
    assert PREFILTER.hit_lines(f"a = 1\n{line}\n") == []


def test_hits_are_the_prefilter_matches_less_the_other_names() -> None:
    text = "\n".join(
        ["x.has_cu_seqlens_q = 1", "y.cu_seqlens_q = 2", "z = kv_qo_indptr + qo_indptr"]
    )
    everything = sorted(
        {text.count("\n", 0, m.start()) + 1 for m in PREFILTER.regex.finditer(text)}
    )
    assert everything == [1, 2, 3] and PREFILTER.hit_lines(text) == [2, 3]


KERNEL_CLASS = """
class Kernel:
    def __call__(self, seqlen, q):
        if seqlen.has_cu_seqlens_q:
            self.qo_indptr_ptr = q
        return q
"""


def test_a_class_without_a_role_name_is_not_parsed() -> None:
    result = scan_source(KERNEL_CLASS, "kernel.py")
    assert result.stats.parsed == 0 and not result.findings
    with_role = scan_source(re.sub("has_cu_seqlens_q", "cu_seqlens_q", KERNEL_CLASS), "k.py")
    assert with_role.stats.parsed == 1
