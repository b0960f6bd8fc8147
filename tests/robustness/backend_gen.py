"""Random backend-like classes with a known ground truth, for the fuzz tests.

A generated backend reads `speculative_num_steps`, `speculative_eagle_topk` and
`speculative_num_draft_tokens` in `__init__`, and builds query index pointers (an `arange`
stride, the `cumsum` of `torch.full`) and grid scalars (`max_extend_len`, ...) under
forward-mode branches, with widths drawn from a small expression language: the config
attributes, `+ 1`, `2 *`, `max`/`min`, conditional expressions and `if`/`else` statements on
config or opaque conditions, helpers of the class, attributes precomputed in `__init__`, and
the width the runtime publishes (`spec_info.num_tokens_per_req`).

Each width is also a small IR that this module evaluates concretely, so the truth of every
(site, forward mode) pair is computed by brute force over a configuration grid: a stride is
wrong when it differs from the runtime's tokens per request for some configuration in the
domain, a grid scalar when it is smaller. The runtime width of each mode is the SGLang
profile's default (the generated file holds no graph runner)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from hypothesis import strategies as st

# ---------------------------------------------------------------------------------------------
# Configurations


@dataclass(frozen=True)
class Cfg:
    steps: int
    topk: int
    ndt: int


def in_domain(cfg: Cfg) -> bool:
    """The SGLang profile's domain (checker/profiles/sglang.py), for these three symbols."""
    if not (1 <= cfg.steps <= 32 and 1 <= cfg.topk <= 16 and 2 <= cfg.ndt <= 128):
        return False
    if cfg.topk == 1:
        return cfg.ndt == cfg.steps + 1
    return cfg.ndt - 1 <= cfg.topk + (cfg.steps - 1) * cfg.topk * cfg.topk


def grid(max_steps: int = 4, max_topk: int = 3, max_ndt: int = 12) -> list[Cfg]:
    """Every configuration of the domain within small bounds. The expressions generated use
    constants of at most 2 and thresholds of at most 2, so any violation has a witness here."""
    return [
        cfg
        for steps, topk, ndt in itertools.product(
            range(1, max_steps + 1), range(1, max_topk + 1), range(2, max_ndt + 1)
        )
        if in_domain(cfg := Cfg(steps, topk, ndt))
    ]


GRID = grid()

# Forward modes that have a runtime width in the profile, with that width and the predicate
# that selects them.
MODE_WIDTH: dict[str, Callable[[Cfg], int]] = {
    "TARGET_VERIFY": lambda c: c.ndt,
    "DRAFT_EXTEND_V2": lambda c: c.ndt,
    "DRAFT_EXTEND": lambda c: c.steps + 1,
}
# predicate text -> modes it is true in
BRANCHES: dict[str, frozenset[str]] = {
    "mode.is_target_verify()": frozenset({"TARGET_VERIFY"}),
    "mode.is_draft_extend_v2()": frozenset({"DRAFT_EXTEND_V2"}),
    "mode.is_draft_extend(include_v2=True)": frozenset({"DRAFT_EXTEND", "DRAFT_EXTEND_V2"}),
    "mode.is_draft_extend()": frozenset({"DRAFT_EXTEND"}),
}

# ---------------------------------------------------------------------------------------------
# Width expressions


@dataclass(frozen=True)
class Sym:
    name: str  # steps | topk | ndt


@dataclass(frozen=True)
class Runtime:
    """The width the runtime publishes for the current forward: right by construction."""


@dataclass(frozen=True)
class Add:
    arg: Expr
    k: int


@dataclass(frozen=True)
class Scale:
    k: int
    arg: Expr


@dataclass(frozen=True)
class Ext:
    fn: str  # max | min
    a: Expr
    b: Expr


@dataclass(frozen=True)
class Cond:
    text: str  # Python source, in terms of `self.<sym>` or an opaque attribute
    opaque: str | None = None  # the name of an opaque condition (free), else None

    def holds(self, cfg: Cfg, opaque: dict[str, bool]) -> bool:
        if self.opaque is not None:
            return opaque[self.opaque]
        return bool(eval(self.text, {}, {"self": cfg}))  # our own text


@dataclass(frozen=True)
class Pick:
    cond: Cond
    then: Expr
    other: Expr


Expr = Sym | Runtime | Add | Scale | Ext | Pick

CONFIG_CONDS = (
    Cond("self.topk == 1"),
    Cond("self.topk > 1"),
    Cond("self.steps > 1"),
    Cond("self.ndt == self.steps + 1"),
)
OPAQUE_CONDS = (
    Cond("forward_batch.use_tree_mask", "use_tree_mask"),
    Cond("forward_batch.is_prefill_only", "is_prefill_only"),
)
# Statements that choose between `then` and `other` on something idxcheck cannot know (the
# condition's text is not rendered: the statement is). Each has its own opaque name.
STATEMENT_PICKS = {
    "match": Cond("<match without `case _`>", "match_case"),  # case 1: then; no case: other
    "match_wildcard": Cond(
        "<match with `case _`>", "match_wildcard_case"
    ),  # case 1: then; _: other
    "loop": Cond("<loop body runs>", "loop_runs"),  # other; for ...: then
    "try": Cond("<try body completes>", "try_completes"),  # try: then; except: other
}


def render(e: Expr) -> str:
    """Python source of a width (self-contained: parenthesised where it is compound)."""
    if isinstance(e, Sym):
        return f"self.{e.name}"
    if isinstance(e, Runtime):
        return "forward_batch.spec_info.num_tokens_per_req"
    if isinstance(e, Add):
        sign = "+" if e.k > 0 else "-"
        return f"({render(e.arg)} {sign} {abs(e.k)})"
    if isinstance(e, Scale):
        return f"({e.k} * {render(e.arg)})"
    if isinstance(e, Ext):
        return f"{e.fn}({render(e.a)}, {render(e.b)})"
    return f"({render(e.then)} if {e.cond.text} else {render(e.other)})"


def evaluate(e: Expr, cfg: Cfg, mode: str, opaque: dict[str, bool]) -> int:
    if isinstance(e, Sym):
        return int(getattr(cfg, e.name))
    if isinstance(e, Runtime):
        return MODE_WIDTH[mode](cfg)
    if isinstance(e, Add):
        return evaluate(e.arg, cfg, mode, opaque) + e.k
    if isinstance(e, Scale):
        return e.k * evaluate(e.arg, cfg, mode, opaque)
    if isinstance(e, Ext):
        pick = max if e.fn == "max" else min
        return pick(evaluate(e.a, cfg, mode, opaque), evaluate(e.b, cfg, mode, opaque))
    branch = e.then if e.cond.holds(cfg, opaque) else e.other
    return evaluate(branch, cfg, mode, opaque)


def opaque_names(e: Expr) -> set[str]:
    if isinstance(e, Add | Scale):
        return opaque_names(e.arg)
    if isinstance(e, Ext):
        return opaque_names(e.a) | opaque_names(e.b)
    if isinstance(e, Pick):
        own = {e.cond.opaque} if e.cond.opaque else set()
        return own | opaque_names(e.then) | opaque_names(e.other)
    return set()


def config_only(e: Expr) -> bool:
    """No runtime width and no opaque condition: can be computed in `__init__`."""
    if isinstance(e, Runtime):
        return False
    if isinstance(e, Add | Scale):
        return config_only(e.arg)
    if isinstance(e, Ext):
        return config_only(e.a) and config_only(e.b)
    if isinstance(e, Pick):
        return e.cond.opaque is None and config_only(e.then) and config_only(e.other)
    return True


def widths(allow_runtime: bool = True, allow_opaque: bool = True) -> st.SearchStrategy[Expr]:
    atoms: list[st.SearchStrategy[Expr]] = [
        st.sampled_from([Sym("steps"), Sym("topk"), Sym("ndt")])
    ]
    if allow_runtime:
        atoms.append(st.just(Runtime()))
    conds = CONFIG_CONDS + (OPAQUE_CONDS if allow_opaque else ())

    def extend(inner: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        return st.one_of(
            st.builds(Add, inner, st.sampled_from([1, 2])),
            # `- 1` only of num_draft_tokens (>= 2), so that a width stays positive.
            st.just(Add(Sym("ndt"), -1)),
            st.builds(Scale, st.just(2), inner),
            st.builds(Ext, st.sampled_from(["max", "min"]), inner, inner),
            st.builds(Pick, st.sampled_from(conds), inner, inner),
        )

    return st.recursive(st.one_of(*atoms), extend, max_leaves=4)


# ---------------------------------------------------------------------------------------------
# Sites and classes


@dataclass(frozen=True)
class Site:
    kind: str  # arange | arange_pos | cumsum | grid
    width: Expr
    # inline | local | if_statement | helper | init_attr, or a statement that picks between two
    # widths on an opaque condition: match (may fall through) | match_wildcard | loop | try
    binding: str
    sink: str  # attribute | metadata | dict

    @property
    def code(self) -> str:
        return "IDX002" if self.kind == "grid" else "IDX001"


@dataclass(frozen=True)
class Branch:
    predicate: str  # a key of BRANCHES
    sites: tuple[Site, ...]


@dataclass(frozen=True)
class Backend:
    branches: tuple[Branch, ...]
    elif_chain: bool  # `if/elif` (earlier branches exclude their modes) or separate `if`s
    early_return: bool  # `if mode.is_decode_or_idle(): return` first


@st.composite
def sites(draw: st.DrawFn) -> Site:
    kind = draw(st.sampled_from(["arange", "arange_pos", "cumsum", "grid"]))
    binding = draw(
        st.sampled_from(
            ["inline", "local", "if_statement", "helper", "init_attr", *STATEMENT_PICKS]
        )
    )
    if binding == "helper" and kind == "grid":
        binding = "local"
    if binding == "init_attr":
        width = draw(widths(allow_runtime=False, allow_opaque=False))
    elif binding == "if_statement":
        cond = draw(st.sampled_from(CONFIG_CONDS + OPAQUE_CONDS))
        width = Pick(cond, draw(widths()), draw(widths()))
    elif binding in STATEMENT_PICKS:
        width = Pick(STATEMENT_PICKS[binding], draw(widths()), draw(widths()))
    else:
        width = draw(widths())
    sink = draw(st.sampled_from(["attribute", "metadata", "dict"]))
    return Site(kind, width, binding, sink)


@st.composite
def backends(draw: st.DrawFn) -> Backend:
    chosen = draw(st.lists(st.sampled_from(sorted(BRANCHES)), min_size=1, max_size=3, unique=True))
    branches = tuple(
        Branch(predicate, tuple(draw(st.lists(sites(), min_size=1, max_size=2))))
        for predicate in chosen
    )
    return Backend(branches, draw(st.booleans()), draw(st.booleans()))


# ---------------------------------------------------------------------------------------------
# Rendering


@dataclass
class Rendered:
    text: str
    # (first line, last line) of each site's statements, in the order of Backend.sites()
    lines: list[tuple[int, int]] = field(default_factory=list)
    site_list: list[tuple[Branch, int, Site]] = field(default_factory=list)


QO_NAMES = {"attribute": "qo_indptr", "metadata": "qo_indptr", "dict": "cu_seqlens_q"}
GRID_NAMES = {"attribute": "max_extend_len", "metadata": "max_extend_len", "dict": "max_seq_len_q"}

HEADER = '''"""Generated by tests/robustness/backend_gen.py."""

from dataclasses import dataclass

import torch


@dataclass
class Metadata:
    qo_indptr: torch.Tensor = None
    max_extend_len: int = None


class FuzzBackend:
    def __init__(self, model_runner):
        args = model_runner.server_args
        self.steps = args.speculative_num_steps
        self.topk = args.speculative_eagle_topk
        self.ndt = args.speculative_num_draft_tokens
'''

HELPERS = """
    def _arange_qo(self, bs, n):
        return torch.arange(0, bs * n + 1, step=n, dtype=torch.int32)

    def _cumsum_qo(self, bs, n):
        indptr = torch.zeros((bs + 1,), dtype=torch.int32)
        indptr[1 : bs + 1] = torch.cumsum(torch.full((bs,), n, dtype=torch.int32), dim=0)
        return indptr
"""


def _value_lines(site: Site, index: int, width_text: str, pad: str) -> tuple[list[str], str]:
    """Statements that compute the site's value, and the expression of the value."""
    if site.kind == "grid":
        return [], width_text
    if site.binding == "helper":
        helper = "_cumsum_qo" if site.kind == "cumsum" else "_arange_qo"
        return [], f"self.{helper}(bs, {width_text})"
    if site.kind == "arange":
        return [], f"torch.arange(0, bs * {width_text} + 1, step={width_text}, dtype=torch.int32)"
    if site.kind == "arange_pos":
        return [], f"torch.arange(0, (bs + 1) * {width_text}, {width_text})"
    name = f"indptr_{index}"
    return [
        f"{pad}{name} = torch.zeros((bs + 1,), dtype=torch.int32)",
        f"{pad}{name}[1 : bs + 1] = torch.cumsum(torch.full((bs,), {width_text}, dtype=torch.int32), dim=0)",
    ], name


def _site_lines(site: Site, index: int, pad: str, init: list[str]) -> list[str]:
    lines: list[str] = []
    if site.binding == "init_attr":
        init.append(f"        self.width_{index} = {render(site.width)}")
        width_text = f"self.width_{index}"
    elif site.binding == "local":
        lines.append(f"{pad}n_{index} = {render(site.width)}")
        width_text = f"n_{index}"
    elif site.binding == "if_statement":
        assert isinstance(site.width, Pick)
        lines += [
            f"{pad}if {site.width.cond.text}:",
            f"{pad}    n_{index} = {render(site.width.then)}",
            f"{pad}else:",
            f"{pad}    n_{index} = {render(site.width.other)}",
        ]
        width_text = f"n_{index}"
    elif site.binding in STATEMENT_PICKS:
        assert isinstance(site.width, Pick)
        then, other, n = render(site.width.then), render(site.width.other), f"n_{index}"
        lines += {
            "match": [
                f"{pad}{n} = {other}",
                f"{pad}match forward_batch.kind:",
                f"{pad}    case 1:",
                f"{pad}        {n} = {then}",
            ],
            "match_wildcard": [
                f"{pad}match forward_batch.kind:",
                f"{pad}    case 1:",
                f"{pad}        {n} = {then}",
                f"{pad}    case _:",
                f"{pad}        {n} = {other}",
            ],
            "loop": [
                f"{pad}{n} = {other}",
                f"{pad}for _layer in forward_batch.layers:",
                f"{pad}    {n} = {then}",
            ],
            "try": [
                f"{pad}try:",
                f"{pad}    {n} = {then}",
                f"{pad}except RuntimeError:",
                f"{pad}    {n} = {other}",
            ],
        }[site.binding]
        width_text = n
    else:
        width_text = render(site.width)
    before, value = _value_lines(site, index, width_text, pad)
    lines += before
    name = (GRID_NAMES if site.kind == "grid" else QO_NAMES)[site.sink]
    if site.sink == "attribute":
        lines.append(f"{pad}self.{name} = {value}")
    elif site.sink == "metadata":
        lines.append(f"{pad}self.forward_metadata = Metadata({name}={value})")
    else:
        lines.append(f'{pad}self.forward_metadata = {{"{name}": {value}}}')
    return lines


def render_backend(backend: Backend) -> Rendered:
    init: list[str] = []
    body: list[str] = [
        "",
        "    def init_forward_metadata(self, forward_batch):",
        "        bs = forward_batch.batch_size",
        "        mode = forward_batch.forward_mode",
    ]
    if backend.early_return:
        body += ["        if mode.is_decode_or_idle():", "            return"]
    spans: list[tuple[int, int]] = []
    site_list: list[tuple[Branch, int, Site]] = []
    pending: list[tuple[int, list[str]]] = []  # (index into body where it starts, lines)
    index = 0
    for number, branch in enumerate(backend.branches):
        keyword = "elif" if backend.elif_chain and number else "if"
        body.append(f"        {keyword} {branch.predicate}:")
        for site in branch.sites:
            lines = _site_lines(site, index, " " * 12, init)
            pending.append((len(body), lines))
            body += lines
            site_list.append((branch, number, site))
            index += 1
    head = HEADER.rstrip("\n").split("\n") + init
    helpers = HELPERS.rstrip("\n").split("\n")
    offset = len(head) + len(helpers)
    for start, lines in pending:
        first = offset + start + 1  # 1-based
        spans.append((first, first + len(lines) - 1))
    text = "\n".join(head + helpers + body) + "\n"
    return Rendered(text, spans, site_list)


# ---------------------------------------------------------------------------------------------
# Ground truth


def reaching_modes(backend: Backend, number: int) -> frozenset[str]:
    """The forward modes (with a runtime width) in which branch `number` runs."""
    modes = set(BRANCHES[backend.branches[number].predicate])
    if backend.elif_chain:
        for earlier in backend.branches[:number]:
            modes -= BRANCHES[earlier.predicate]
    return frozenset(modes)


def assignments(names: set[str]) -> Iterator[dict[str, bool]]:
    ordered = sorted(names)
    for values in itertools.product([False, True], repeat=len(ordered)):
        yield dict(zip(ordered, values, strict=True))


# Modes whose requests carry fewer tokens than the width above, packed (the profile's
# `PACKED_MODES`): the most a request can carry, which a grid scalar must cover. EAGLE v1
# draft extend carries an accepted path of the verified tree plus its bonus token.
MODE_MOST: dict[str, Callable[[Cfg], int]] = {
    "DRAFT_EXTEND": lambda c: min(c.steps + 1, c.ndt),
}


def violated(site: Site, mode: str, cfg: Cfg, opaque: dict[str, bool]) -> bool:
    value = evaluate(site.width, cfg, mode, opaque)
    if site.kind == "grid":
        return value < MODE_MOST.get(mode, MODE_WIDTH[mode])(cfg)
    return value != MODE_WIDTH[mode](cfg)


def breaking(site: Site, mode: str, configs: list[Cfg] = GRID) -> Cfg | None:
    """A configuration of the grid under which the site is wrong in `mode`, if any."""
    for cfg in configs:
        for opaque in assignments(opaque_names(site.width)):
            if violated(site, mode, cfg, opaque):
                return cfg
    return None


def breaks_under(site: Site, mode: str, cfg: Cfg) -> bool:
    """Whether some value of the opaque conditions makes the site wrong under `cfg`."""
    return any(violated(site, mode, cfg, o) for o in assignments(opaque_names(site.width)))
