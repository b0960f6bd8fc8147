"""The finding of a refuted obligation, made from its parts (`model.findings.make_finding`, the
one place a finding is made, for meta rules too). The rule supplies its message and its hooks;
the builder formats, it composes no rule's text."""

from __future__ import annotations

from dataclasses import dataclass, replace

from idxcheck.check.checker import Outcome
from idxcheck.check.kernel import KernelVerdict
from idxcheck.check.obligations import ANY_RUNNER, Obligation
from idxcheck.interp.values import LayoutV, RuntimeV
from idxcheck.model.findings import Finding, Related, make_finding
from idxcheck.model.kinds import Severity
from idxcheck.model.replay import ReplayBlock
from idxcheck.model.spans import Loc
from idxcheck.profiles.schema import Profile
from idxcheck.sym.evaluate import Assignment, NotConcrete, eval_term, primary_tag, selected_tags
from idxcheck.sym.render import render_formula, render_term
from idxcheck.sym.terms import (
    Term,
    conj,
    formula_atoms,
    formula_symbols,
    neg,
    specialise_formula,
    specialise_term,
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


class FindingBuilder:
    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.names = dict(profile.display)

    def build(self, outcome: Outcome, companions: dict[str, Term]) -> Finding:
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
        holds = render_formula(specialise_formula(untag_formula(ob.claim.holds), ob.mode))
        return make_finding(
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
        )

    def _parts(
        self,
        outcome: Outcome,
        env: Assignment,
        width_value: int | None,
        companions: dict[str, Term],
    ) -> _Parts:
        ob = outcome.obligation
        subject = specialise_term(ob.claim.subject, ob.mode)
        chosen = primary_tag(selected_tags(subject, env))
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
        width_text = render_term(ob.runner.term, self.names)
        target_text = (
            render_term(specialise_term(ob.claim.target, ob.mode), self.names)
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
        return tuple((texts[key], value) for key, value in outcome.atoms.items() if key in texts)

    def _explain(self, outcome: Outcome, site_text: str, width_text: str) -> tuple[str, ...]:
        ob = outcome.obligation
        names = self.names
        violation = render_formula(
            neg(specialise_formula(untag_formula(ob.claim.holds), ob.mode)), names
        )
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


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _evaluate(term: Term | None, env: Assignment) -> int | None:
    if term is None:
        return None
    try:
        return eval_term(specialise_term(term, env.mode or ""), env)
    except NotConcrete:
        return None
