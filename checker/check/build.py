"""The one place where a finding is made from a refuted obligation."""

from __future__ import annotations

import hashlib

from idxcheck.check.checker import Outcome
from idxcheck.check.obligations import ANY_RUNNER
from idxcheck.interp.values import LayoutV, RuntimeV
from idxcheck.model.findings import Finding, Related
from idxcheck.model.verdicts import Verdict
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

REPLAY_DEFAULT_BS = 2


def _fingerprint(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


class FindingBuilder:
    def __init__(self, profile: Profile) -> None:
        self.profile = profile

    def names(self) -> dict[str, str]:
        return dict(self.profile.display)

    def build(self, outcome: Outcome, companions: dict[str, Term]) -> Finding:
        ob = outcome.obligation
        width_env = Assignment(ints=outcome.model, mode=ob.mode, atoms=_atom_values(outcome.atoms))
        try:
            width_value = eval_term(ob.runner.term, width_env)
        except NotConcrete:
            width_value = None
        env = Assignment(ints=outcome.model, mode=ob.mode, width=width_value, atoms=width_env.atoms)
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
        names = self.names()
        width_text = render_term(ob.runner.term, names)
        target_text = (
            render_term(specialise_term(ob.claim.target, ob.mode), names)
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
        related: list[Related] = []
        if ob.binding.loc.span.line != primary.span.line:
            related.append(
                Related("binding", f"bound to `{ob.binding.name}` here", ob.binding.loc.span)
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
        if ob.runner is ANY_RUNNER or ob.other is not None:
            pass
        elif ob.runner.from_profile:
            related.append(
                Related(
                    "profile",
                    f"runtime width `{width_text}` from the {self.profile.name} profile default ({ob.runner.source}); no runner for {ob.mode} in the scanned files",
                )
            )
        elif ob.runner.capacity:
            related.append(
                Related(
                    "runner",
                    f"{ob.runner.runner or 'runner'} holds up to `{ob.runner.capacity}` tokens per request in {ob.mode}; each request has at most `{ob.runner.text}` ({ob.runner.source})",
                    ob.runner.span,
                )
            )
        else:
            related.append(
                Related(
                    "runner",
                    f"{ob.runner.runner or 'runner'} lays out `{ob.runner.text}` tokens per request in {ob.mode}",
                    ob.runner.span,
                )
            )
        if len(ob.binding.chain) > 1:
            related.append(Related("entry", "reached from " + " -> ".join(ob.binding.chain)))
        own_symbols = formula_symbols(conj(ob.assumptions, ob.claim.holds))
        counterexample = {
            name: value
            for name, value in outcome.model.items()
            if name in own_symbols or name not in self.profile.context_symbols
        }
        cex_text = " ".join(f"{names.get(k, k)}={v}" for k, v in counterexample.items())
        needs_text = ", ".join(
            f"{names.get(k, k)} > {v - 1}" for k, v in outcome.needs.items() if k != "bs"
        )
        atoms_text = formula_atoms(conj(ob.assumptions, ob.claim.holds))
        conditions = tuple(
            (atoms_text[key], value) for key, value in outcome.atoms.items() if key in atoms_text
        )
        violation = render_formula(
            neg(specialise_formula(untag_formula(ob.claim.holds), ob.mode)), names
        )
        explain = (
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
        fingerprint = _fingerprint(
            ob.rule.code,
            ob.binding.function,
            ob.mode,
            render_formula(specialise_formula(untag_formula(ob.claim.holds), ob.mode)),
        )
        replay = {
            "mode": ob.mode,
            # A rule whose counterexample does not fix the batch replays two requests, the
            # smallest batch where one request can read another's rows.
            "bs": outcome.model.get("bs", REPLAY_DEFAULT_BS),
            "capture_bs": outcome.model.get("bs", REPLAY_DEFAULT_BS),
            "tokens_per_req": width_value,
            "qo_stride": _evaluate(companions.get("qo_stride"), env),
            "max_len": _evaluate(companions.get("max_len"), env),
            "segments_per_req": _evaluate(companions.get("segments_per_req"), env),
            "block_m": None,
            "head_dim": None,
        }
        severity = ob.rule.severity
        kernel = outcome.kernel
        if kernel is not None:
            rows = ", ".join(sorted({str(r.block_m) for r in kernel.latent_rows}, key=int))
            if kernel.row is not None:
                row = kernel.row
                latent_text = ", ".join(
                    f"{r.block_m} ({r.arch}, head dim {r.head_lo}-{r.head_hi})"
                    for r in kernel.latent_rows
                )
                counterexample = {
                    k: v for k, v in kernel.model.items() if k in counterexample or k in own_symbols
                }
                counterexample["head_dim"] = kernel.head_dim or 0
                counterexample["block_m"] = row.block_m
                cex_text = (
                    " ".join(f"{names.get(k, k)}={v}" for k, v in counterexample.items())
                    + f" arch={row.arch}"
                )
                message += f"; with BLOCK_M {row.block_m} ({row.arch}, head dim {kernel.head_dim}) rows are dropped"
                replay["block_m"] = row.block_m
                replay["head_dim"] = kernel.head_dim
                for key in ("bs", "capture_bs"):
                    replay[key] = kernel.model.get("bs", replay[key])
                try:
                    env2 = Assignment(ints=kernel.model, mode=ob.mode, atoms=width_env.atoms)
                    tokens = eval_term(ob.runner.term, env2)
                    replay["tokens_per_req"] = tokens
                    at_block = Assignment(ints=kernel.model, mode=ob.mode, width=tokens)
                    replay["max_len"] = _evaluate(companions.get("max_len"), at_block)
                    replay["qo_stride"] = _evaluate(companions.get("qo_stride"), at_block)
                    replay["segments_per_req"] = _evaluate(
                        companions.get("segments_per_req"), at_block
                    )
                except NotConcrete:
                    pass
                if latent_text:
                    explain = (
                        *explain,
                        f"latent under BLOCK_M {latent_text}: no configuration drops rows there",
                    )
            else:
                severity = "warning"
                message += f"; latent: no block size of `{kernel.launcher.name}` (BLOCK_M {rows}) drops rows in the domain"
                if kernel.biting:
                    message += f"; it bites with BLOCK_M {', '.join(map(str, kernel.biting))}"
            related.append(
                Related(
                    "kernel",
                    f"`{kernel.launcher.name}` launches grid cdiv({kernel.launcher.param}, BLOCK_M)",
                    kernel.launcher.span,
                )
            )
        elif ob.rule.code == "IDX002" and ob.binding.name in self.profile.kernel_grids:
            explain = (
                *explain,
                f"the launcher `{self.profile.kernel_grids[ob.binding.name][0]}` is not in the scanned tree: plain rule",
            )
        return Finding(
            code=ob.rule.code,
            name=ob.rule.name,
            severity=severity,
            span=primary.span,
            function=ob.binding.function,
            mode=ob.mode,
            message=message,
            verdict=Verdict.REFUTED,
            counterexample=counterexample,
            counterexample_text=cex_text,
            needs_text=needs_text,
            conditions=conditions,
            related=tuple(related),
            fingerprint=fingerprint,
            explain=explain,
            replay=replay,
        )


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _atom_values(atoms: dict[str, bool]) -> dict[str, bool]:
    return dict(atoms)


def _evaluate(term: Term | None, env: Assignment) -> int | None:
    if term is None:
        return None
    try:
        return eval_term(specialise_term(term, env.mode or ""), env)
    except NotConcrete:
        return None
