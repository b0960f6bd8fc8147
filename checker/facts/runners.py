"""What the runtime lays out, read from the graph runners of the scanned tree.

A runner class stores the query tokens per request it captures (`num_tokens_per_bs`,
`captured_req_width`) and the forward mode it captures in (`capture_forward_mode`,
`forward_mode`, or the `forward_mode=ForwardMode.X` of the batch it builds). Its `__init__` is
interpreted like a backend method, so each width comes with the path condition under which the
runner lays it out (speculative or not, draft worker or not), and widths computed by the
runtime's width functions (`resolve_num_tokens_per_req`) are read from their definitions."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from idxcheck.facts.batch_fields import carried_fields
from idxcheck.facts.runtime_model import RunnerWidth
from idxcheck.model.spans import Span
from idxcheck.profiles.schema import Profile
from idxcheck.source.files import (
    Block,
    ClassSource,
    FunctionSource,
    SourceError,
    SourceFile,
    reading,
)
from idxcheck.source.lazy_import import lazy_module
from idxcheck.sym.terms import (
    TRUE,
    Atom,
    BinOp,
    Const,
    Formula,
    Ite,
    RuntimeInt,
    Sym,
    Tagged,
    Term,
    Unknown,
    cmp,
    conj,
    neg,
)

if TYPE_CHECKING:
    import libcst as cst

    from idxcheck.interp.state import ScanContext
    from idxcheck.interp.values import Value
else:
    # Loaded on first use: a scan whose tree facts come from the cache reads no runner.
    cst = lazy_module("libcst")


@dataclass
class RunnerFacts:
    widths: list[RunnerWidth] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, message)


def width_definitions(
    files: Iterable[SourceFile], names: Iterable[str]
) -> dict[str, FunctionSource]:
    """The definitions of the runtime's width functions in the scanned tree (a module-level
    function, or a method of one class), when each name has exactly one."""
    wanted = set(names)
    found: dict[str, list[FunctionSource]] = {}
    for source in files:
        if not any(f"def {name}" in source.text for name in wanted):
            continue
        for block in source.blocks:
            try:
                if block.kind == "def" and block.name in wanted:
                    found.setdefault(block.name, []).append(source.function_source(block))
                elif block.kind == "class" and any(
                    f"def {n}" in _block_text(source, block) for n in wanted
                ):
                    cls = source.class_source(block)
                    for name in wanted & set(cls.methods):
                        found.setdefault(name, []).append(cls.methods[name])
            except SourceError:
                continue
    return {name: defs[0] for name, defs in found.items() if len(defs) == 1}


class WidthDefinitions(Mapping[str, FunctionSource]):
    """`width_definitions`, found on first use: a scan whose tree facts come from the cache
    parses them only if an analysed method calls one."""

    def __init__(self, files: Iterable[SourceFile], names: Iterable[str]) -> None:
        self._files = list(files)
        self._names = tuple(names)
        self._found: dict[str, FunctionSource] | None = None

    def _definitions(self) -> dict[str, FunctionSource]:
        if self._found is None:
            self._found = width_definitions(self._files, self._names)
        return self._found

    def __getitem__(self, name: str) -> FunctionSource:
        return self._definitions()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._definitions())

    def __len__(self) -> int:
        return len(self._definitions())


def _block_text(source: SourceFile, block: object) -> str:
    return source.block_text(block)  # type: ignore[arg-type]


def is_runner(source: SourceFile, block: object, width_attrs: Iterable[str]) -> bool:
    text = _block_text(source, block)
    return any(re.search(rf"self\.{attr}\s*=[^=]", text) for attr in width_attrs)


def runner_blocks(
    source: SourceFile, width_attrs: Sequence[str], config_classes: Sequence[str] = ()
) -> list[Block]:
    """The file's classes that set a runner width attribute (`is_runner`), and its
    configuration classes that define one as a property (`states_width`)."""
    attrs = tuple(width_attrs)
    configs = tuple(config_classes)

    def find() -> tuple[int, ...]:
        sets = any(f"self.{attr}" in source.text for attr in attrs)
        defines = bool(configs) and any(f"def {attr}(" in source.text for attr in attrs)
        if not sets and not defines:
            return ()  # each of the tests below needs this much
        return tuple(
            index
            for index, block in enumerate(source.blocks)
            if block.kind == "class"
            and (
                (sets and is_runner(source, block, attrs))
                or (defines and block.name in configs and states_width(source, block, attrs))
            )
        )

    key = "runner-blocks\0" + "\0".join(attrs) + "\0\0" + "\0".join(configs)
    found = reading(source, key, find)
    return [source.blocks[index] for index in found]


def states_width(source: SourceFile, block: object, width_attrs: Iterable[str]) -> bool:
    """Whether the class defines a property named as a runner width attribute."""
    text = _block_text(source, block)
    return any(re.search(rf"@property\s+def {attr}\(\s*self\s*\)", text) for attr in width_attrs)


def read_runner(cls: ClassSource, ctx: ScanContext) -> RunnerFacts:
    # The interpreter is loaded where a runner is read: a scan that takes the tree facts from
    # the cache imports this module for its text tests only.
    from idxcheck.interp.choices import iter_choice
    from idxcheck.interp.interpreter import ClassInterpreter, batch_field_path, none_atom
    from idxcheck.interp.values import ChoiceV, IntV, MemberV

    facts = RunnerFacts()
    profile = ctx.profile
    if cls.name in profile.config_classes:
        return _read_width_properties(cls, ctx)
    init = cls.methods.get("__init__")
    if init is None:
        return facts
    interp = ClassInterpreter(ctx, cls.methods, cls.name, record=False)
    attrs: dict[str, Value] = {}
    interp.run_collecting(init, attrs)
    for error in interp.errors:
        facts.errors.append((cls.file.path, error))
    width_attr = next((a for a in profile.runner_width_attrs if a in attrs), None)
    if width_attr is None:
        return facts
    if _mirrored(cls, width_attr):
        # A wrapper that copies its width from the runners it owns (which are read on their
        # own); its `__init__` value is a placeholder.
        return facts
    mode_value: Value | None = next(
        (attrs[a] for a in profile.runner_mode_attrs if a in attrs), None
    )
    block_text = _block_text(cls.file, cls.block)
    modes_of_width = profile.runner_width_modes.get(width_attr, ())
    if mode_value is None and modes_of_width:
        # A width the profile knows the modes of (vLLM's `uniform_decode_query_len`).
        mode_value = ChoiceV(tuple((TRUE, MemberV(m)) for m in modes_of_width))
    if mode_value is None:
        keyword = profile.idioms.runner_mode_keyword
        members = set(keyword.findall(block_text)) if keyword is not None else set()
        if len(members) != 1:
            facts.errors.append(
                (cls.file.path, f"runner `{cls.name}`: the forward mode it captures is not known")
            )
            return facts
        mode_value = MemberV(members.pop())
    span, text = _assignment(cls, width_attr)
    draft = bool(re.search(profile.draft_runner, cls.name))
    # The lengths its width is (`WIDTH_LENGTHS`) that its batches always carry are not None
    # where that width is compared: the width and the lengths are one fact of the runner.
    carried = [
        neg(none_atom(batch_field_path(profile, f)))
        for f in carried_fields(cls, profile.runner_batch_classes)
        if f in profile.width_lengths
    ]
    idioms = profile.idioms
    for mode_pc, mode in iter_choice(mode_value, TRUE):
        if not isinstance(mode, MemberV):
            continue
        for width_pc, width in iter_choice(attrs[width_attr], TRUE):
            if not isinstance(width, IntV):
                continue
            term, params = _free_params(width.term, cls.name, profile.runner_symbols)
            cond = conj(mode_pc, width_pc, *(_param_range(p, profile) for p in params), *carried)
            selector = None
            if mode.name == idioms.draft_decode_mode and draft and not profile.compare_draft_decode:
                continue
            if mode.name == idioms.draft_decode_mode and idioms.draft_decode_selector is not None:
                # Which decode batches this runner serves: the draft worker's carry a
                # speculative input, the target's do not.
                target = Atom(*idioms.draft_decode_selector)
                cond = conj(cond, neg(target) if draft else target)
                selector = target.key
            facts.widths.append(
                RunnerWidth(
                    mode=mode.name,
                    term=term,
                    text=text,
                    source=f"{cls.name} ({cls.file.path}:{span.line}) lays out `{text}`",
                    cond=cond,
                    span=span,
                    runner=cls.name,
                    selector=selector,
                )
            )
    return facts


def _read_width_properties(cls: ClassSource, ctx: ScanContext) -> RunnerFacts:
    """The widths a configuration class states as properties named as runner width attributes
    (`VllmConfig.uniform_decode_query_len`), for the modes the profile gives that attribute.
    The property is interpreted with `self` the configuration object, so that its attributes
    are the profile's configuration symbols (`self.num_speculative_tokens`)."""
    from idxcheck.interp.choices import iter_choice
    from idxcheck.interp.interpreter import ClassInterpreter
    from idxcheck.interp.values import ConfigV, IntV

    facts = RunnerFacts()
    profile = ctx.profile
    if not profile.config_object_names:
        return facts
    for attr in profile.runner_width_attrs:
        fn = cls.methods.get(attr)
        modes = profile.runner_width_modes.get(attr, ())
        if fn is None or not modes or not _is_property(fn):
            continue
        interp = ClassInterpreter(ctx, cls.methods, cls.name, record=False)
        value, _ = interp.run(fn, {"self": ConfigV(profile.config_object_names[0])})
        for error in interp.errors:
            facts.errors.append((cls.file.path, error))
        span, text = _returned(fn)
        for width_pc, width in iter_choice(value, TRUE):
            if not isinstance(width, IntV):
                continue
            term, params = _free_params(width.term, cls.name, profile.runner_symbols)
            cond = conj(width_pc, *(_param_range(p, profile) for p in params))
            for mode in modes:
                facts.widths.append(
                    RunnerWidth(
                        mode=mode,
                        term=term,
                        text=text,
                        source=f"{cls.name}.{attr} ({cls.file.path}:{span.line}) is `{text}`",
                        cond=cond,
                        span=span,
                        runner=f"{cls.name}.{attr}",
                        from_config=True,
                    )
                )
    return facts


def _is_property(fn: FunctionSource) -> bool:
    return any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "property"
        for d in fn.node.decorators
    )


def _returned(fn: FunctionSource) -> tuple[Span, str]:
    """Where the value of the function's first `return` statement of its body is, and its
    text."""
    for stmt in fn.node.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Return) and small.value is not None:
                loc = fn.loc(small.value)
                return loc.span, " ".join(loc.text.split())
    return Span(fn.file.path, fn.def_line, 0, fn.def_line, 0), fn.name


def _mirrored(cls: ClassSource, attr: str) -> bool:
    pattern = re.compile(rf"self\.{attr}\s*=[^=]")
    return any(
        name != "__init__" and pattern.search(fn.raw_text()) for name, fn in cls.methods.items()
    )


def _assignment(cls: ClassSource, attr: str) -> tuple[Span, str]:
    """Where `self.<attr>` is first assigned in `__init__`, and the text assigned (joined over
    the lines of a parenthesised right-hand side)."""
    init = cls.methods["__init__"]
    lines = init.raw_text().split("\n")  # CPython's lines: the text's line ends are "\n"
    pattern = re.compile(rf"self\.{attr}\s*=\s*(.*)")
    for offset, line in enumerate(lines):
        match = pattern.search(line)
        if not match:
            continue
        number = init.def_line + offset
        column = line.index("self.")
        text = match.group(1).strip()
        depth = text.count("(") - text.count(")")
        follow = offset + 1
        while depth > 0 and follow < len(lines):
            more = lines[follow].strip()
            text += " " + more
            depth += more.count("(") - more.count(")")
            follow += 1
        text = " ".join(text.split())
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1].strip()
        return Span(cls.file.path, number, column, number, len(line.rstrip())), text or attr
    return Span(cls.file.path, init.def_line, 0, init.def_line, 0), attr


def _param_range(name: str, profile: Profile) -> Formula:
    """What a runner's free parameter ranges over: from 0, and below the configuration symbol
    the profile bounds a parameter of that name by (a per-step runner's `step`)."""
    low = cmp(">=", Sym(name), Const(0))
    bound = profile.runner_param_bounds.get(name.rsplit(".", 1)[-1])
    if bound is None:
        return low
    return conj(low, cmp("<", Sym(name), Sym(bound[0])))


def _free_params(term: Term, owner: str, known: dict[str, str]) -> tuple[Term, list[str]]:
    """A runner width that depends on a constructor argument (the MTP `step`) or on a runtime
    attribute (`eagle_worker.draft_extend_num_front_tokens`) is free over it: each value is a
    runner the backend must serve. A width computed by a call not modelled stays unknown."""
    params: list[str] = []

    def walk(node: Term) -> Term:
        if isinstance(node, Tagged):
            return Tagged(walk(node.inner), node.loc)
        if isinstance(node, BinOp):
            return BinOp(node.op, walk(node.left), walk(node.right))
        if isinstance(node, Ite):
            return Ite(node.cond, walk(node.then), walk(node.other))
        if isinstance(node, RuntimeInt):
            if node.source in known:
                return Sym(known[node.source])  # a symbol of the domain, constrained there
            if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", node.source):
                name = f"{owner}.{node.source}"
            elif re.fullmatch(r"[A-Za-z_][A-Za-z_0-9.]*", node.source):
                name = node.source
            else:
                return Unknown(f"the runner width depends on `{node.source}`")
            if name not in params:
                params.append(name)
            return Sym(name)
        return node

    return walk(term), params
