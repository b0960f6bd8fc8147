"""The lines whose code is analysed: a role's words count where they make a role name (the name
they are part of, cut at anything but a letter, digit or `_`), runner words and tree-fact
patterns count wherever they are in code; nothing counts in a comment."""

from __future__ import annotations

import re

import pytest

from idxcheck.app.run import scan_source
from idxcheck.profiles.schema import load_profile
from idxcheck.source.prefilter import Prefilter

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
        "q: Tensor,  # (total_q, h, d) if there is cu_seqlens_q",  # comments bind nothing
        "# self.init_cuda_graph_state(max_bs, max_num_tokens)",
        "    #def init_cuda_graph_state(self, max_bs, max_num_tokens):",
    ],
)
def test_role_words_inside_other_names_are_not(line: str) -> None:
    assert PREFILTER.hit_lines(f"a = 1\n{line}\n") == []


@pytest.mark.parametrize(
    "line",
    [
        'name = "# not a comment"; qo_indptr = 1',
        's = """#"""; self.qo_indptr = x  # qo_indptr',
        "x = '#'  # one\nqo_indptr = 2",
    ],
)
def test_a_hash_in_a_string_does_not_hide_the_code_after_it(line: str) -> None:
    text = f"a = 1\n{line}\n"
    assert PREFILTER.hit_lines(text) == [2 + line.count("\n")]


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


def test_a_class_whose_role_names_are_in_comments_only_is_not_parsed() -> None:
    text = KERNEL_CLASS.replace("if seqlen.has_cu_seqlens_q:", "if seqlen.ready:  # cu_seqlens_q")
    result = scan_source(text.replace("self.qo_indptr_ptr", "self.ptr"), "kernel.py")
    assert result.stats.parsed == 0
    in_code = text.replace("seqlen.ready:  # cu_seqlens_q", "seqlen.ready or cu_seqlens_q:")
    assert scan_source(in_code.replace("self.qo_indptr_ptr", "self.ptr"), "k.py").stats.parsed == 1


def test_blocks_that_may_hit_are_the_hit_blocks_or_a_superset_before_the_lines_are_found() -> None:
    from idxcheck.source.files import SourceFile
    from idxcheck.source.tree import HitLines

    text = (
        "class Plain:\n    def f(self):\n        return 1\n\n\n"
        "class Commented:\n    def f(self):\n        return 1  # qo_indptr is not here\n\n\n"
        "class Site:\n    def f(self, qo_indptr):\n        self.qo_indptr = qo_indptr\n"
    )
    source = SourceFile.from_bytes("m.py", text.encode())
    hits = HitLines()
    hits.add(source, PREFILTER)
    told = [b.name for b in hits.blocks_that_may_hit(source)]
    assert told == ["Commented", "Site"]  # told from the text: the comment counts
    assert [b.name for b in source.blocks_containing(hits.get("m.py", []))] == ["Site"]
    assert [b.name for b in hits.blocks_that_may_hit(source)] == ["Site"]  # once found
    assert hits.blocks_that_may_hit(SourceFile.from_bytes("n.py", b"x = 1\n")) == []
