"""Library models of the interpreter (`interp.library`) on backends written for the test: what
each model gives exactly, and what stays UNSUPPORTED with the reason of the value it was
handed."""

from __future__ import annotations

from pathlib import Path

from idxcheck.app.run import scan
from idxcheck.interp.entries import entries_of
from idxcheck.model.config import Config
from idxcheck.sym.terms import Atom, Const, Sym, Unknown, binop, disj, ite

GRID = """
class RowsBackend:
    def __init__(self, model_runner):
        self.drafts = model_runner.server_args.speculative_num_draft_tokens

    def init_forward_metadata(self, forward_batch):
        if forward_batch.forward_mode.is_draft_extend_v2():
            if forward_batch.spec_info is None:
                lens = {first}
            else:
                lens = {second}
            self.forward_metadata = Rows(max_seqlen_q={grid})
"""

SWA = """
import torch


class SwaBackend:
    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.cuda_graph_swa_loc = torch.zeros((max_num_tokens,), dtype=torch.int32)

    def _fill(self, out_cache_loc):
        buf = self.cuda_graph_swa_loc
        if out_cache_loc is None or out_cache_loc.shape[0] > buf.shape[0]:
            return None
        n = out_cache_loc.shape[0]
        buf[:n].copy_(out_cache_loc)
        return buf[:n]

    def prepare_replay(self, forward_batch, *, static_forward_batch=None):
        batch = static_forward_batch if static_forward_batch is not None else forward_batch
        return self._fill(batch.out_cache_loc)
"""


def _scan(root: Path, text: str) -> tuple[list[int], list[str], int]:
    (root / "backend.py").write_text(text)
    result = scan([str(root)], Config())
    assert result.errors == []
    return (
        sorted(f.span.line for f in result.findings),
        [n.reason for n in result.notes],
        result.stats.proved,
    )


def _grid(first: str, second: str, grid: str) -> str:
    return GRID.format(first=first, second=second, grid=grid)


def test_max_of_a_sequence_that_differs_by_path_is_the_extreme_of_each(tmp_path: Path) -> None:
    clean = _grid("(self.drafts, 1)", "(1, self.drafts)", "int(max(lens))")
    assert _scan(tmp_path, clean) == ([], [], 1)
    buggy = _grid("(self.drafts, 1)", "(1, self.drafts - 1)", "int(max(lens))")
    lines, reasons, _ = _scan(tmp_path, buggy)
    assert lines == [12] and reasons == []


def test_max_default_of_an_empty_sequence_and_a_key(tmp_path: Path) -> None:
    assert _scan(tmp_path, _grid("()", "()", "max(lens, default=self.drafts)"))[:2] == ([], [])
    lines, _, _ = _scan(tmp_path, _grid("()", "()", "max(lens, default=self.drafts - 1)"))
    assert lines == [12]
    # `key=` orders by something else than the values: not modelled, whatever the values.
    lines, reasons, _ = _scan(tmp_path, _grid("(1,)", "(2,)", "max(lens, key=abs)"))
    assert lines == [] and reasons == ["`max()` with a `key=` function"]
    # An empty sequence without a default raises: no value to compare.
    _, reasons, _ = _scan(tmp_path, _grid("()", "()", "max(lens)"))
    assert reasons == ["`max()` of an empty sequence"]


def test_max_and_pad_of_a_value_not_modelled_keep_its_reason(tmp_path: Path) -> None:
    _, reasons, _ = _scan(tmp_path, _grid("helper()", "helper()", "max(lens)"))
    assert reasons == [
        "`max()` of a value that is not modelled: call to `helper`: "
        "name `helper` is not defined in the analysed code"
    ]
    text = GRID.replace("self.forward_metadata = Rows(max_seqlen_q={grid})", "{grid}").format(
        first="helper()",
        second="helper()",
        grid="self.forward_metadata = Rows(cu_seqlens_q=F.pad(lens, (1, 0)))",
    )
    _, reasons, _ = _scan(tmp_path, text)
    assert reasons == [
        "padding a value that is not modelled: call to `helper`: "
        "name `helper` is not defined in the analysed code"
    ]


def test_static_forward_batch_is_an_object_of_the_runtime(tmp_path: Path) -> None:
    """DeepSeek-V4's breakable-graph replay (SGLang 0.5.23) hands the padded batch as the
    keyword `static_forward_batch`: its tensors are the runtime's, of lengths not known here.
    A parameter of another name stays a value whose callers are elsewhere."""
    assert _scan(tmp_path, SWA) == ([], [], 2)
    _, reasons, proved = _scan(tmp_path, SWA.replace("static_forward_batch", "padded"))
    unknown = (
        "parameter `padded` of `SwaBackend.prepare_replay`, whose callers are not in the class"
    )
    assert proved == 0 and reasons == [unknown, unknown]


def test_arange_entries_pair_each_step_with_the_end_of_its_own_path() -> None:
    """`arange(0, (1 + bs) * n, n)` of a width `n` chosen per path, one of them not modelled:
    the end is the product taken on each path, so its cases are the step's; a case of one
    path never meets the end of another (whose conditions `conj` cannot tell apart when they
    are disjunctions), and a path whose width is not modelled gives no count."""
    first = disj(Atom("a", "a"), Atom("b", "b"))
    second = disj(Atom("c", "c"), Atom("d", "d"))
    rows = binop("+", Const(1), Sym("bs"))
    unknown = Unknown("not modelled")
    step = ite(first, Sym("n"), ite(second, Const(1), unknown))
    end = ite(first, binop("*", rows, Sym("n")), ite(second, rows, unknown))
    assert entries_of(Const(0), end, step) == rows
    # A path whose end is not a whole number of its steps has no count.
    wrong = ite(first, binop("*", rows, Sym("n")), ite(second, Sym("bs"), unknown))
    assert entries_of(Const(0), wrong, step) is None


UNBOUND = """
import torch


class RowsBackend:
    def __init__(self, model_runner):
        self.drafts = model_runner.server_args.speculative_num_draft_tokens

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        if forward_batch.forward_mode.is_draft_extend_v2():
            if forward_batch.spec_info is not None:
                rows = torch.arange(0, (bs + 1) * ({width}), {width}, dtype=torch.int32)
            self.forward_metadata = Rows(cu_seqlens_q=rows{read})
"""


def test_a_local_not_assigned_on_a_path_is_read_on_the_others_only(tmp_path: Path) -> None:
    """Slicing or indexing a local that one path never assigned raises there (NameError), as
    reading its attribute does: the other paths are checked, none is UNSUPPORTED."""
    for read in ("[: bs + 1]", "[0:]"):
        clean = UNBOUND.format(width="self.drafts", read=read)
        lines, reasons, proved = _scan(tmp_path, clean)
        assert (lines, reasons) == ([], []) and proved > 0
        lines, reasons, _ = _scan(tmp_path, UNBOUND.format(width="self.drafts - 1", read=read))
        assert lines == [13] and reasons == []


PADDED = """
import torch


class PadBackend:
    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.cuda_graph_loc = torch.zeros((max_bs,), dtype=torch.int32)

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        loc = torch.zeros(bs, dtype=torch.int64) if spec_info is None else None
        assert loc is not None
        padded = torch.nn.functional.pad(loc, pad=(0, {rows} - len(loc)), value=0)
        n = padded.shape[0]
        self.cuda_graph_loc[:n].copy_(padded)
"""


def test_a_padded_vector_is_as_long_as_its_widths_add(tmp_path: Path) -> None:
    """`F.pad(x, (0, rows - len(x)))` of a vector of known length is `rows` long (the length of
    a value that differs by path is each path's): DeepSeek-V4 pads `out_cache_loc` so."""
    assert _scan(tmp_path, PADDED.format(rows="bs")) == ([], [], 1)
    lines, reasons, _ = _scan(tmp_path, PADDED.format(rows="bs + 1"))
    assert lines == [14] and reasons == []


MASK_COUNT = """
import torch


class MaskBackend:
    def __init__(self, model_runner):
        self.drafts = model_runner.server_args.speculative_num_draft_tokens

    def init_forward_metadata(self, forward_batch):
        if forward_batch.forward_mode.is_target_verify():
            live = {count}
            step = self.drafts
            self.forward_metadata = Rows(cu_seqlens_q=torch.arange(0, (live + 1) * step, step))
"""


def test_the_count_of_a_mask_is_a_count_of_the_runtime(tmp_path: Path) -> None:
    """`(x > 0).sum().item()` counts the entries of an elementwise comparison (a Python bool
    has no `.sum()`): a count the batch decides, as vLLM's GDN builder counts its speculative
    requests. A layout of that many requests is not a whole number of the batch's requests:
    UNSUPPORTED with that reason, no longer for a call that is not modelled."""
    lines, reasons, _ = _scan(
        tmp_path, MASK_COUNT.format(count="(forward_batch.seq_lens > 0).sum().item()")
    )
    assert lines == []
    assert reasons == [
        "`torch.arange(0, (live + 1) * step, step)` has "
        "<runtime (forward_batch.seq_lens > 0).sum().item()> segments, "
        "not a whole number per request"
    ]
    # Another method of a comparison is still not modelled: the layout has no closed form.
    _, reasons, _ = _scan(
        tmp_path, MASK_COUNT.format(count="(forward_batch.seq_lens > 0).mean().item()")
    )
    assert reasons == [
        "the length of `torch.arange(0, (live + 1) * step, step)` has no closed form"
    ]


CHOSEN_CLASS = """
import torch


class BaseBuilder:
    meta_cls: type[M]

    def __init__(self, model_runner):
        self.drafts = model_runner.server_args.speculative_num_draft_tokens

    def init_forward_metadata(self, forward_batch):
        if forward_batch.forward_mode.is_target_verify():
            bs = forward_batch.batch_size
            step = {step}
            self.forward_metadata = self.meta_cls(
                cu_seqlens_q=torch.arange(0, (bs + 1) * step, step),
            )


class RowsBuilder(BaseBuilder):
    meta_cls = RowsMeta
"""


def test_a_metadata_class_the_subclass_chooses_builds_from_its_keywords(tmp_path: Path) -> None:
    """`meta_cls: type[M]` declared in a base, `meta_cls = RowsMeta` in its subclass (vLLM's
    Mamba builders): `self.meta_cls(cu_seqlens_q=...)` builds a metadata object in both, its
    keywords its fields, so the pointer is checked in the base and in the subclass."""
    assert _scan(tmp_path, CHOSEN_CLASS.format(step="self.drafts"))[:2] == ([], [])
    lines, reasons, _ = _scan(tmp_path, CHOSEN_CLASS.format(step="self.drafts - 1"))
    assert lines == [14] and reasons == []
