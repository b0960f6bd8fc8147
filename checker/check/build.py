"""The finding of a refuted obligation, made from its parts (`model.findings.make_finding`, the
one place a finding is made, for meta rules too). The rule supplies its message and its hooks;
the builder formats, it composes no rule's text."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from idxcheck.check.checker import Outcome
from idxcheck.check.kernel import KernelVerdict
from idxcheck.check.launch import launch_of
from idxcheck.check.obligations import ANY_RUNNER, Obligation
from idxcheck.facts.modes import ModeModel
from idxcheck.interp.values import LayoutV, RuntimeV
from idxcheck.model.findings import Consumer, Finding, Fix, Related, make_finding
from idxcheck.model.kinds import ALGORITHM_ATOM, WORKER_ATOM, BindingKind, Severity
from idxcheck.model.replay import ReplayBlock
from idxcheck.model.spans import Loc
from idxcheck.profiles.schema import Profile
from idxcheck.sym.evaluate import Assignment, NotConcrete, eval_term, primary_tag, selected_tags
from idxcheck.sym.poly import Poly, to_poly
from idxcheck.sym.poly import to_term as poly_term
from idxcheck.sym.render import render_formula, render_term
from idxcheck.sym.terms import (
    Cmp,
    Const,
    Formula,
    ModeIs,
    Term,
    conj,
    formula_atoms,
    formula_symbols,
    neg,
    specialise_formula,
    specialise_term,
    untag,
    untag_formula,
)

# A rule whose counterexample does not fix the batch replays two requests, the smallest batch
# where one request can read another's rows.
REPLAY_DEFAULT_BS = 2


@dataclass(frozen=True)
class _Parts:
    """What a refuted obligation's finding says before the kernel verdict refines it."""

    primary: Loc
    site_text: str
    width_text: str
    message: str
    counterexample: dict[str, int]
    counterexample_text: str
    explain: tuple[str, ...]
    replay: ReplayBlock
    own_symbols: frozenset[str]
    # Whether `primary` is where the site's value was written (a place on its provenance
    # chain), not the layout or binding it falls back to.
    tagged: bool = False
    # The call of a function the value came out of, where the place to fix is inside it.
    through: Loc | None = None


class FindingBuilder:
    def __init__(
        self,
        profile: Profile,
        modes: ModeModel | None = None,
        registry: dict[str, set[str]] | None = None,
    ) -> None:
        self.profile = profile
        # Short names, for counterexamples (`topk=2`); in terms and formulas a symbol is
        # written in braces (`{num_draft_tokens}`), never as a name the code may also use.
        self.names = dict(profile.display)
        self.shown = {symbol: "{" + short + "}" for symbol, short in profile.display.items()}
        self.modes = modes
        # Backend class -> the names it is registered under (`--attention-backend NAME`).
        # First the name the class is called by, then a name that builds it alone.
        self.backends: dict[str, list[str]] = {}
        for name, classes in sorted((registry or {}).items()):
            for cls in classes:
                self.backends.setdefault(cls, []).append(name)
        for cls, names in self.backends.items():
            names.sort(
                key=lambda n: (
                    n.lower().replace("_", "") not in cls.lower(),
                    len((registry or {})[n]) > 1,
                    n,
                )
            )

    def build(
        self,
        outcome: Outcome,
        companions: dict[str, Term],
        attrs: dict[str, Term] | None = None,
        other_modes: frozenset[str] = frozenset(),
        read: Consumer | None = None,
    ) -> Finding:
        """The finding of a refuted obligation; `attrs`: the integer attributes of its class,
        `other_modes`: the other modes its function is checked in (for the fix), `read`: who
        reads the value (a note where nothing does)."""
        ob = outcome.obligation
        atoms = dict(outcome.atoms)
        width_env = Assignment(ints=outcome.model, mode=ob.mode, atoms=atoms)
        try:
            width_value = eval_term(ob.runner.term, width_env)
        except NotConcrete:
            width_value = None
        env = Assignment(ints=outcome.model, mode=ob.mode, width=width_value, atoms=atoms)
        parts = self._parts(outcome, env, width_value, companions)
        related = self._related(ob, parts)
        severity = ob.rule.severity
        if outcome.kernel is not None:
            parts, severity = self._with_kernel(ob, outcome.kernel, parts, companions, atoms)
            kernel = outcome.kernel.launcher
            related = (
                *related,
                Related(
                    "kernel",
                    f"`{kernel.name}` launches grid cdiv({kernel.param}, BLOCK_M)",
                    kernel.span,
                ),
            )
        else:
            grid = ob.rule.kernel_grid(ob.binding.name, self.profile)
            if grid is not None:
                parts = replace(
                    parts, explain=(*parts.explain, *ob.rule.explain_without_kernel(grid[0]))
                )
        if read is not None:
            parts, severity, related = self._with_consumer(ob, read, parts, severity, related)
        holds = render_formula(specialise_formula(untag_formula(ob.claim.holds), ob.mode))
        class_name = ob.binding.function.split(".")[0] if "." in ob.binding.function else ""
        launch = launch_of(
            self.profile.launch,
            parts.counterexample,
            ob.mode,
            class_name,
            self.backends.get(class_name, ()),
            arch=outcome.kernel.row.arch
            if outcome.kernel is not None and outcome.kernel.row is not None
            else "",
            algorithm=_algorithm_of(atoms),
            draft_worker=atoms.get(WORKER_ATOM) is True,
        )
        # A value nothing reads needs no fix: the note says so, and nothing is rewritten.
        fix = None if severity == Severity.NOTE else self._fix(ob, parts, attrs or {}, other_modes)
        finding = make_finding(
            code=ob.rule.code,
            name=ob.rule.name,
            severity=severity,
            span=parts.primary.span,
            function=ob.binding.function,
            mode=ob.mode,
            message=parts.message,
            counterexample=parts.counterexample,
            counterexample_text=parts.counterexample_text,
            needs_text=", ".join(
                f"{self.names.get(k, k)} > {v - 1}" for k, v in outcome.needs.items() if k != "bs"
            ),
            conditions=self._conditions(ob, outcome),
            related=related,
            identity=(ob.rule.code, ob.binding.function, ob.mode, holds),
            explain=parts.explain,
            replay=parts.replay,
            launch=launch,
            fix=fix,
        )
        return replace(finding, consumer=read) if read is not None else finding

    def _with_consumer(
        self,
        ob: Obligation,
        read: Consumer,
        parts: _Parts,
        severity: Severity,
        related: tuple[Related, ...],
    ) -> tuple[_Parts, Severity, tuple[Related, ...]]:
        """The finding with the value's consumer: named as a related location where it is
        read, a note where nothing reads it."""
        if read.status == "unread":
            target = ob.binding.loc.text if ob.binding.kind == BindingKind.ATTRIBUTE else ""
            what = target or ob.binding.name
            message = parts.message + f"; nothing reads `{what}` in {ob.mode}"
            explain = (*parts.explain, f"reader: none: {read.text}")
            return replace(parts, message=message, explain=explain), Severity.NOTE, related
        if read.status in ("call", "read") and read.span != ob.binding.loc.span:
            return (
                replace(parts, explain=(*parts.explain, f"reader: {read.text}")),
                severity,
                (*related, Related("reader", read.text.split(" at ")[0], read.span)),
            )
        return replace(parts, explain=(*parts.explain, f"reader: {read.text}")), severity, related

    def _fix(
        self, ob: Obligation, parts: _Parts, attrs: dict[str, Term], other_modes: frozenset[str]
    ) -> Fix | None:
        """The finding's expression rewritten as an attribute of its class that holds the
        runtime's width (the same configuration symbols), else, where the function holds the
        runtime object that publishes the width per forward, as that (the original kept as
        the default where it publishes none); guarded by the mode where its function also
        runs in other modes. None where neither holds it, the expression is not in the
        binding's function (an attribute written in `__init__`), or no mode test can be
        written there."""
        if (
            not ob.rule.fixable
            or not parts.tagged
            or ob.other is not None
            or ob.runner is ANY_RUNNER
            or "." not in ob.binding.function
        ):
            return None
        span = parts.primary.span
        start, end = ob.binding.scope
        if span.path != ob.binding.loc.span.path or not (start < span.line <= end):
            return None
        target = ob.claim.target if ob.claim.target is not None else ob.runner.term
        wanted = _normal(untag(specialise_term(target, ob.mode)))
        if wanted is None:
            return None
        matching = sorted(
            (len(name), name) for name, term in attrs.items() if _normal(term) == wanted
        )
        width = render_term(ob.runner.term, self.shown)
        holder = ob.binding.width_holder
        if matching:
            attribute = "self." + matching[0][1]
            holds = f"`{attribute}` holds the runtime's width `{width}`"
        elif ob.claim.target is None and holder and self.profile.runtime_width_attrs:
            published = self.profile.runtime_width_attrs[0]
            attribute = f'getattr({holder}, "{published}", {parts.site_text})'
            holds = (
                f"`{holder}.{published}` is the width the runtime publishes per forward "
                f"(`{width}` here; the original stays where it publishes none)"
            )
        else:
            return None
        if not other_modes:
            return Fix(holds, attribute, parts.site_text)
        predicate = self._predicate(ob.mode)
        if predicate is None or not ob.binding.mode_expr:
            return None
        test = f"{ob.binding.mode_expr}.{predicate}()"
        return Fix(
            f"{holds} in {ob.mode}; the function also runs in {', '.join(sorted(other_modes))}",
            f"({attribute} if {test} else {parts.site_text})",
            parts.site_text,
            (f"({attribute} if {test} else ", ")"),
        )

    def _predicate(self, mode: str) -> str | None:
        """A predicate of the tree's forward-mode enum that holds in `mode` alone."""
        if self.modes is None:
            return None
        exact = ModeIs(frozenset({mode}))
        for name in sorted(self.modes.predicates):
            if self.modes.call(name, [], {}) == exact:
                return name
        return None

    def _parts(
        self,
        outcome: Outcome,
        env: Assignment,
        width_value: int | None,
        companions: dict[str, Term],
    ) -> _Parts:
        ob = outcome.obligation
        subject = specialise_term(ob.claim.subject, ob.mode)
        chain = selected_tags(subject, env)
        chosen = primary_tag(chain)
        fallback = ob.value.loc if isinstance(ob.value, LayoutV) else ob.binding.loc
        primary = chosen[0] if chosen else fallback
        if chosen:
            site_text = chosen[1]
        elif isinstance(ob.value, LayoutV):
            site_text = ob.value.text
        elif isinstance(ob.value, RuntimeV):
            site_text = ""  # no term of its own: laid out from what the runtime passes in
        else:
            site_text = render_term(subject)
        width_text = render_term(ob.runner.term, self.shown)
        target_text = (
            render_term(specialise_term(ob.claim.target, ob.mode), self.shown)
            if ob.claim.target is not None
            else width_text
        )
        message = ob.rule.format_message(
            what=ob.claim.what,
            site=site_text,
            width=target_text,
            mode=ob.mode,
            name=ob.binding.name,
        )
        own_symbols = frozenset(formula_symbols(conj(ob.assumptions, ob.claim.holds)))
        counterexample = {
            name: value
            for name, value in outcome.model.items()
            if name in own_symbols or name not in self.profile.context_symbols
        }
        bs = outcome.model.get("bs", REPLAY_DEFAULT_BS)
        replay = ReplayBlock(
            mode=ob.mode,
            bs=bs,
            capture_bs=bs,
            tokens_per_req=width_value,
            qo_stride=_evaluate(companions.get("qo_stride"), env),
            max_len=_evaluate(companions.get("max_len"), env),
            segments_per_req=_evaluate(companions.get("segments_per_req"), env),
            block_m=None,
            head_dim=None,
        )
        return _Parts(
            primary,
            site_text,
            width_text,
            message,
            counterexample,
            self._text(counterexample),
            self._explain(outcome, site_text, width_text),
            replay,
            own_symbols,
            bool(chosen),
            _through_call(chain, primary),
        )

    def _text(self, counterexample: dict[str, int]) -> str:
        return " ".join(f"{self.names.get(k, k)}={v}" for k, v in counterexample.items())

    def _related(self, ob: Obligation, parts: _Parts) -> tuple[Related, ...]:
        """Where else the finding shows: the binding, the dataclass that named it, the index
        pointer's construction, the capture it is compared with, the runner or profile default
        that gave the width, the entry point that reaches it."""
        primary = parts.primary
        related: list[Related] = []
        if ob.binding.loc.span.line != primary.span.line:
            # Where the value got its role: the place it reaches, or the name it is bound to.
            text = (
                f"reaches {ob.binding.destination} here"
                if ob.binding.destination is not None
                else f"bound to `{ob.binding.name}` here"
            )
            related.append(Related("binding", text, ob.binding.loc.span))
        through = parts.through
        if through is not None and through.span.line != ob.binding.loc.span.line:
            related.append(
                Related(
                    "call",
                    f"the value comes out of the call `{_clip(through.text)}` here",
                    through.span,
                )
            )
        if ob.binding.declared_by is not None and ob.binding.declared_by[1] != primary.span.path:
            # A dataclass of another file: an edit there alone can rename what the call binds.
            cls_name, path = ob.binding.declared_by
            related.append(
                Related(
                    "dataclass",
                    f"`{ob.binding.name}` is the field of `{cls_name}` ({path}) at this "
                    "argument's position",
                    path=path,
                )
            )
        if isinstance(ob.value, LayoutV) and ob.value.loc.span.line not in (
            primary.span.line,
            ob.binding.loc.span.line,
        ):
            related.append(
                Related(
                    "layout",
                    f"index pointer built here: `{_clip(ob.value.text)}`",
                    ob.value.loc.span,
                )
            )
        if ob.other is not None:
            related.append(
                Related("capture", f"`{ob.other.name}` built at capture here", ob.other.loc.span)
            )
        for role, text, loc in ob.binding.related:
            related.append(Related(role, text, loc.span))
        runner = self._runner(ob, parts.width_text)
        if runner is not None:
            related.append(runner)
        if len(ob.binding.chain) > 1:
            related.append(Related("entry", "reached from " + " -> ".join(ob.binding.chain)))
        return tuple(related)

    def _runner(self, ob: Obligation, width_text: str) -> Related | None:
        """Where the runtime width came from: the profile's default or a runner of the tree."""
        runner = ob.runner
        if runner is ANY_RUNNER or ob.other is not None:
            return None
        if runner.from_profile:
            return Related(
                "profile",
                f"runtime width `{width_text}` from the {self.profile.name} profile default ({runner.source}); no runner for {ob.mode} in the scanned files",
            )
        if runner.capacity:
            return Related(
                "runner",
                f"{runner.runner or 'runner'} holds up to `{runner.capacity}` tokens per request in {ob.mode}; each request has at most `{runner.text}` ({runner.source})",
                runner.span,
            )
        return Related(
            "runner",
            f"{runner.runner or 'runner'} lays out `{runner.text}` tokens per request in {ob.mode}",
            runner.span,
        )

    def _conditions(self, ob: Obligation, outcome: Outcome) -> tuple[tuple[str, bool], ...]:
        texts = formula_atoms(conj(ob.assumptions, ob.claim.holds))
        # The algorithm the counterexample needs is named once: the others are then false.
        named = _algorithm_of(outcome.atoms)
        return tuple(
            (texts[key], value)
            for key, value in outcome.atoms.items()
            if key in texts and not (named and key.startswith(ALGORITHM_ATOM) and not value)
        )

    def _explain(self, outcome: Outcome, site_text: str, width_text: str) -> tuple[str, ...]:
        ob = outcome.obligation
        names = self.shown
        failing = neg(specialise_formula(untag_formula(ob.claim.holds), ob.mode))
        violation = render_formula(failing, names)
        plain = _cancelled(failing)
        if plain is not None:
            violation += f", that is {render_formula(plain, names)}"
        return (
            f"site: `{site_text}` bound to `{ob.binding.name}` in {ob.binding.function} ({ob.binding.kind})",
            *(f"tree constraint: {c.text} ({c.span.path}:{c.span.line})" for c in ob.constraints),
            f"path condition in {ob.mode}: {render_formula(specialise_formula(ob.binding.pc, ob.mode), names)}",
            f"runtime width: {width_text} ({ob.runner.source})",
            f"fails whenever: {violation}",
            *(
                f"domain: {c.text} ({c.why})"
                for c in self.profile.domain
                if c.text.startswith("implies(")
                and formula_symbols(c.formula) & set(outcome.needs)
                and formula_symbols(c.formula) <= set(outcome.model)
            ),
        )

    def _with_kernel(
        self,
        ob: Obligation,
        kernel: KernelVerdict,
        parts: _Parts,
        companions: dict[str, Term],
        atoms: dict[str, bool],
    ) -> tuple[_Parts, Severity]:
        """The finding refined by the kernel verdict: the block size that drops rows, with its
        counterexample and replay, or a warning when no real block size does."""
        rows = ", ".join(sorted({str(r.block_m) for r in kernel.latent_rows}, key=int))
        if kernel.row is None:
            message = (
                parts.message
                + f"; latent: no block size of `{kernel.launcher.name}` (BLOCK_M {rows}) drops rows in the domain"
            )
            if kernel.biting:
                message += f"; it bites with BLOCK_M {', '.join(map(str, kernel.biting))}"
            return replace(parts, message=message), Severity.WARNING
        row = kernel.row
        counterexample = {
            k: v
            for k, v in kernel.model.items()
            if k in parts.counterexample or k in parts.own_symbols
        }
        counterexample["head_dim"] = kernel.head_dim or 0
        counterexample["block_m"] = row.block_m
        message = (
            parts.message
            + f"; with BLOCK_M {row.block_m} ({row.arch}, head dim {kernel.head_dim}) rows are dropped"
        )
        replay = replace(
            parts.replay,
            block_m=row.block_m,
            head_dim=kernel.head_dim,
            bs=kernel.model.get("bs", parts.replay.bs),
            capture_bs=kernel.model.get("bs", parts.replay.capture_bs),
        )
        try:
            env = Assignment(ints=kernel.model, mode=ob.mode, atoms=atoms)
            tokens = eval_term(ob.runner.term, env)
            at_block = Assignment(ints=kernel.model, mode=ob.mode, width=tokens)
            replay = replace(
                replay,
                tokens_per_req=tokens,
                max_len=_evaluate(companions.get("max_len"), at_block),
                qo_stride=_evaluate(companions.get("qo_stride"), at_block),
                segments_per_req=_evaluate(companions.get("segments_per_req"), at_block),
            )
        except NotConcrete:
            pass
        explain = parts.explain
        latent_text = ", ".join(
            f"{r.block_m} ({r.arch}, head dim {r.head_lo}-{r.head_hi})" for r in kernel.latent_rows
        )
        if latent_text:
            explain = (
                *explain,
                f"latent under BLOCK_M {latent_text}: no configuration drops rows there",
            )
        refined = replace(
            parts,
            message=message,
            counterexample=counterexample,
            counterexample_text=self._text(counterexample) + f" arch={row.arch}",
            replay=replay,
            explain=explain,
        )
        return refined, ob.rule.severity


def _normal(term: Term) -> Poly | Term | None:
    """A term's polynomial normal form (`1 + steps` is `steps + 1`), else the term itself."""
    found = to_poly(term)
    return found if found is not None else term


_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _cancelled(formula: Formula) -> Formula | None:
    """A comparison whose sides share a symbol, with what they share taken away on both
    (`ndt != ndt + front` is `front != 0`); None when nothing cancels."""
    if not isinstance(formula, Cmp):
        return None
    left, right = to_poly(formula.left), to_poly(formula.right)
    if left is None or right is None:
        return None
    if not {s for m in left for s in m} & {s for m in right for s in m}:
        return None
    difference = dict(left)
    for mono, coeff in right.items():
        difference[mono] = difference.get(mono, 0) - coeff
    positive = {m: c for m, c in difference.items() if c > 0}
    negative = {m: -c for m, c in difference.items() if c < 0}
    lhs, rhs = poly_term(positive), poly_term(negative)
    if not positive:
        return Cmp(_FLIPPED[formula.op], rhs, Const(0)) if negative else None
    return Cmp(formula.op, lhs, rhs)


# A call on the provenance chain that is a function of the analysed code's own (not a library's
# or a builtin, not a method of the class, whose place the binding or the entry names).
_OWN_CALL = re.compile(
    r"^(?!self\.|super\(|(?:torch|np|numpy|triton|tl|math|F)\.)[A-Za-z_][\w.]*\("
)
_BUILTIN_CALL = re.compile(r"^(?:max|min|int|len|sum|abs|round|float|bool|getattr|list|tuple)\(")


def _through_call(chain: list[tuple[Loc, str]], primary: Loc) -> Loc | None:
    """The outermost call of a function of the code on the provenance chain outside the
    primary place (where the caller reached the helper whose expression is to fix)."""
    for loc, text in chain:
        if loc is primary:
            return None
        if _OWN_CALL.match(text) and not _BUILTIN_CALL.match(text):
            return loc
    return None


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _evaluate(term: Term | None, env: Assignment) -> int | None:
    if term is None:
        return None
    try:
        return eval_term(specialise_term(term, env.mode or ""), env)
    except NotConcrete:
        return None


def _algorithm_of(atoms: dict[str, bool]) -> str:
    """The speculative algorithm a counterexample needs ("" where it needs none in
    particular)."""
    return next(
        (k[len(ALGORITHM_ATOM) :] for k, v in atoms.items() if k.startswith(ALGORITHM_ATOM) and v),
        "",
    )
