"""Bindings turned into obligations per forward mode and runner, and decided with the solver."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from idxcheck.check.kernel import KernelVerdict, kernel_verdict
from idxcheck.check.obligations import (
    ANY_MODE,
    ANY_RUNNER,
    Obligation,
    Unclaimed,
    may_pair,
    specialise_value,
)
from idxcheck.check.ports import VerdictStore
from idxcheck.facts.algorithms import (
    AlgorithmModel,
    algorithm_atom,
    exactly_one,
    mentions_algorithm,
)
from idxcheck.facts.constraints import TreeConstraint
from idxcheck.facts.kernels import Launcher
from idxcheck.facts.modes import ModeModel
from idxcheck.facts.runtime_model import RunnerWidth, RuntimeModel
from idxcheck.interp.choices import iter_choice
from idxcheck.interp.layouts import Pairing, buffer_segments_per_request, segments
from idxcheck.interp.state import RUNTIME_ATOM, Binding
from idxcheck.interp.values import BufferV, LayoutV, NoneV, RuntimeV, UnknownV, Value
from idxcheck.model.config import Config
from idxcheck.model.kinds import BindingKind, Phase, Role
from idxcheck.model.verdicts import Verdict
from idxcheck.profiles.schema import Profile
from idxcheck.rules import REGISTRY, NoClaim, Rule
from idxcheck.solve.types import SolveResult
from idxcheck.sym.cases import lift_formula
from idxcheck.sym.simplify import simplify_formula
from idxcheck.sym.terms import (
    FALSE,
    TRUE,
    And,
    Atom,
    Cmp,
    Const,
    Formula,
    Not,
    Or,
    RuntimeInt,
    Term,
    Unknown,
    conj,
    conjuncts,
    const_value,
    disj,
    formula_atom_keys,
    formula_atoms,
    formula_mentions_mode,
    neg,
    relative_to,
    specialise_formula,
    stable_hash,
    substitute_width_formula,
    term_leaves,
    untag_formula,
)


@dataclass(frozen=True)
class Outcome:
    obligation: Obligation
    verdict: Verdict
    reason: str = ""
    model: dict[str, int] = field(default_factory=dict)
    atoms: dict[str, bool] = field(default_factory=dict)
    needs: dict[str, int] = field(default_factory=dict)
    # Kernel-aware severity: the launcher, and the block-size row that drops rows (or None,
    # with the rows it would bite under, when the mismatch is latent).
    kernel: KernelVerdict | None = None


def _leaves_of_formula(formula: Formula) -> list[Term]:
    out: list[Term] = []
    if isinstance(formula, Cmp):
        out.extend(term_leaves(formula.left))
        out.extend(term_leaves(formula.right))
    elif isinstance(formula, (And, Or)):
        for arg in formula.args:
            out.extend(_leaves_of_formula(arg))
    elif isinstance(formula, Not):
        out.extend(_leaves_of_formula(formula.arg))
    return out


# A runtime value read as it is (`spec_info.accept_length_cpu`), not a comparison of one.
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)*")


class Checker:
    """Turns bindings into obligations and decides them, with a cache of verdicts."""

    def __init__(
        self,
        profile: Profile,
        config: Config,
        modes: ModeModel,
        runtime: RuntimeModel,
        rules: Sequence[type[Rule]] = REGISTRY,
    ) -> None:
        self.profile = profile
        self.config = config
        self.modes = modes
        self.runtime = runtime
        self.rules: list[Rule] = [cls() for cls in rules if config.rule_enabled(cls.code)]
        self._solver: Any = None
        # Verdicts by normalised formulas; checks and reachability queries apart, since a check
        # of (P, True) and the reachability of P have the same formulas.
        self._checked: dict[tuple[Formula, Formula], SolveResult] = {}
        self._reached: dict[Formula, bool | None] = {}
        self._mode_cache: dict[int, tuple[Formula, list[tuple[str, Formula]] | None]] = {}
        self.class_constraints: list[TreeConstraint] = []
        # What the profile says of the class under check (`Profile.drafter_domain`).
        self.class_domain: tuple[Formula, ...] = ()
        # Constraints of a mode the tree states (`TreeConstraints.per_mode`).
        self.mode_constraints: dict[str, list[TreeConstraint]] = {}
        self.launchers: dict[str, Launcher] = {}
        # The tree's speculative-algorithm enum: one of its members is the server's algorithm.
        self.algorithms: AlgorithmModel | None = None
        # What the factories that build draft backends say of the class under check
        # (`AlgorithmModel.draft_exclusion`).
        self.draft_exclusion: Formula | None = None
        self.disk: VerdictStore | None = None
        # Called as each obligation is decided: a progress line counts them.
        self.on_decided: Callable[[], None] | None = None

    def kernel_severity(self, outcome: Outcome) -> KernelVerdict | None:
        """Kernel-aware severity of a refuted obligation whose rule sizes a kernel grid."""
        ob = outcome.obligation
        target = ob.rule.kernel_grid(ob.binding.name, self.profile)
        if target is None or outcome.verdict != Verdict.REFUTED:
            return None
        return kernel_verdict(ob, target[0], self.launchers, self.profile, self._kernel_check(ob))

    def kernel_of(self, ob: Obligation, launcher: str) -> KernelVerdict | None:
        """Kernel-aware severity of a refuted obligation against the launcher `launcher`."""
        return kernel_verdict(ob, launcher, self.launchers, self.profile, self._kernel_check(ob))

    def _kernel_check(self, ob: Obligation) -> Callable[[Formula, Formula], SolveResult]:
        """`_check` with what is known of who runs the backend, as `decide` asks it."""

        def check(assumptions: Formula, violation: Formula) -> SolveResult:
            return self._check(self._who_runs(assumptions, ob.claim.holds, ob.mode), violation)

        return check

    def forget_translations(self) -> None:
        """The solver's translations of this file's formulas dropped (`solve.solver._Translator`)."""
        if self._solver is not None:
            self._solver.forget_translations()

    @property
    def solver(self) -> Any:
        if self._solver is None:
            # z3 is imported only once an obligation needs it.
            from idxcheck.solve.solver import Solver

            self._solver = Solver(
                [c.formula for c in self.profile.domain],
                self.profile.symbol_order(),
                self.config.rlimit,
            )
        return self._solver

    def obligations(
        self, binding: Binding, groups: Mapping[tuple[int, Role], Sequence[Binding]] = {}
    ) -> Iterable[Obligation | Unclaimed]:
        """The obligations of `binding` for each rule of its role, per forward mode, runner and
        partner (`groups`: the bindings made together, by their group and role)."""
        for rule in self.rules:
            if binding.role not in rule.roles:
                continue
            partners: Sequence[Binding] = ()
            if rule.pairs_with is not None and binding.group is not None:
                partners = [
                    partner
                    for partner in groups.get((id(binding.group), rule.pairs_with), ())
                    if may_pair(binding, partner)
                ]
            for pc, value in iter_choice(binding.value, binding.pc):
                per_mode = self._per_mode(pc)
                if per_mode is None:
                    if not rule.mode_independent:
                        continue  # no forward mode reaches this value: its runtime width is unknown
                    per_mode = [(ANY_MODE, pc)]
                for mode, pc_mode in per_mode:
                    runners = (
                        self.runtime.for_mode(mode, most=rule.bounds_requests)
                        if mode != ANY_MODE
                        else (ANY_RUNNER,)
                    )
                    if not runners and rule.mode_independent:
                        runners = (ANY_RUNNER,)
                    for pair_pc, pair in self._pairings(partners, mode, pc_mode):
                        for runner in runners:
                            if (
                                runner.selector is not None
                                and runner.selector not in formula_atom_keys(pc_mode)
                            ):
                                continue
                            claim = rule.claim(
                                specialise_value(value, mode), runner.term, pair, binding
                            )
                            if isinstance(claim, NoClaim):
                                yield Unclaimed(binding, rule, mode, claim)
                                continue
                            # The path may test the width the runtime publishes (`if
                            # spec_info.num_tokens_per_req > 1`): it is this runner's.
                            path = substitute_width_formula(conj(pc_mode, pair_pc), runner.term)
                            stated = (*self.class_constraints, *self._stated_for(mode, runner))
                            assumptions = conj(
                                path,
                                runner.cond,
                                claim.assumptions,
                                *(c.formula for c in stated),
                                *self.class_domain,
                                *self._runtime_facts(path, mode),
                            )
                            yield Obligation(
                                rule,
                                binding,
                                value,
                                mode,
                                runner,
                                claim,
                                assumptions,
                                stated,
                            )

    def _pairings(
        self, partners: Sequence[Binding], mode: str, pc_mode: Formula
    ) -> list[tuple[Formula, Pairing | None]]:
        """The index pointers built together with a grid scalar, in one mode."""
        found: list[tuple[Formula, Pairing | None]] = []
        for partner in partners:
            for pc, value in iter_choice(partner.value, partner.pc):
                specialised = specialise_formula(pc, mode)
                if specialised == FALSE:
                    continue
                value = specialise_value(value, mode)
                if isinstance(value, LayoutV):
                    shape = segments(value)
                    if shape.per_request is None:
                        pairing = Pairing(Unknown(shape.problem), False, value.text)
                    elif shape.empty_when != FALSE:
                        pairing = Pairing(
                            Unknown(f"`{value.text}` has no segment in some configurations"),
                            False,
                            value.text,
                        )
                    elif const_value(shape.per_request) == 1:
                        pairing = Pairing(value.stride, True, value.text)
                    else:
                        pairing = Pairing(value.stride, False, value.text)
                elif isinstance(value, RuntimeV):
                    pairing = Pairing(
                        Unknown(f"the segments of `{partner.name}` are runtime lengths"),
                        False,
                        partner.name,
                    )
                elif isinstance(value, UnknownV):
                    pairing = Pairing(Unknown(value.reason), False, partner.name)
                elif isinstance(value, NoneV):
                    # No index pointer handed over: the kernel takes one row per entry.
                    pairing = Pairing(Const(1), False, f"{partner.name}=None", none=True)
                elif not isinstance(value, BufferV):
                    pairing = Pairing(
                        Unknown(f"`{partner.name}` is not an index vector idxcheck models"),
                        False,
                        partner.name,
                    )
                elif isinstance(value, BufferV):
                    # A buffer filled elsewhere: its length still says how many segments it
                    # has. One per request: the grid must cover a request (the runtime width).
                    per_request = buffer_segments_per_request(value)
                    if per_request is not None and const_value(per_request) == 1:
                        pairing = None
                    else:
                        pairing = Pairing(
                            Unknown(
                                f"the segments of the buffer `{partner.name}` are filled elsewhere"
                            ),
                            False,
                            partner.name,
                        )
                else:
                    pairing = None
                found.append((relative_to(specialised, pc_mode), pairing))
        return found or [(TRUE, None)]

    def pairwise_obligations(self, bindings: Sequence[Binding]) -> Iterable[Obligation]:
        """Capture against replay (and against eager) of one target in one mode."""
        for rule in self.rules:
            if not rule.pairwise:
                continue
            by_name: dict[str, list[Binding]] = {}
            for binding in bindings:
                if binding.role in rule.roles and binding.kind != BindingKind.ARGUMENT:
                    by_name.setdefault(binding.name, []).append(binding)
            for group in by_name.values():
                phased: dict[str, dict[Phase, list[tuple[Binding, Formula, Value]]]] = {}
                for binding in group:
                    for pc, value in iter_choice(binding.value, binding.pc):
                        for mode, pc_mode in self._per_mode(pc) or []:
                            phase = self._phase(binding, pc_mode)
                            if phase is not None:
                                phased.setdefault(mode, {}).setdefault(phase, []).append(
                                    (binding, pc_mode, value)
                                )
                for mode, phases in phased.items():
                    runners = self.runtime.for_mode(mode) or (ANY_RUNNER,)
                    runner = runners[0]
                    for later in (Phase.REPLAY, Phase.EAGER):
                        for capture, pc_c, value_c in phases.get(Phase.CAPTURE, []):
                            for binding, pc_b, value_b in phases.get(later, []):
                                if binding is capture or _other_objects(capture, binding):
                                    continue
                                if later == Phase.EAGER and not _same_place(capture, binding):
                                    continue
                                if later == Phase.EAGER and not (
                                    isinstance(value_b, LayoutV) and isinstance(value_c, LayoutV)
                                ):
                                    continue
                                claim = rule.compare(
                                    specialise_value(value_c, mode),
                                    specialise_value(value_b, mode),
                                    runner.term,
                                    Phase.CAPTURE,
                                    packed=mode in self.profile.packed_modes,
                                    width_lengths=self._width_lengths(value_b),
                                )
                                if isinstance(claim, NoClaim):
                                    continue
                                path = substitute_width_formula(
                                    conj(self._without_flag(pc_b), self._without_flag(pc_c)),
                                    runner.term,
                                )
                                path = conj(path, *self._runtime_facts(path, mode))
                                stated = self._stated_for(mode, runner)
                                yield Obligation(
                                    rule,
                                    binding,
                                    value_b,
                                    mode,
                                    runner,
                                    claim,
                                    conj(path, runner.cond, *(c.formula for c in stated)),
                                    stated,
                                    capture,
                                )

    def _width_lengths(self, value: Value) -> bool:
        """A layout from runtime lengths that the profile says are each request's width in a
        mode that does not pack (`WIDTH_LENGTHS`: the forward's extend lengths)."""
        return isinstance(value, RuntimeV) and any(
            re.search(rf"\b{re.escape(name)}\b", value.path) for name in self.profile.width_lengths
        )

    def _stated_for(self, mode: str, runner: RunnerWidth) -> tuple[TreeConstraint, ...]:
        """The tree's constraints of `mode` that hold against `runner`: those that ask for a
        runner that also captures in another mode hold only against a runner of the tree
        that does."""
        return tuple(
            c
            for c in self.mode_constraints.get(mode, ())
            if not c.runners_also_in
            or (
                runner.runner
                and any(w.runner == runner.runner for w in self.runtime.for_mode(c.runners_also_in))
            )
        )

    def _runtime_facts(self, formula: Formula, mode: str) -> list[Formula]:
        """The conditions on runtime values in `formula` that the profile knows to be true in
        `mode` (`Profile.runtime_facts`): a path that needs one false does not run there. Only
        the truth of the value itself (`if spec_info.x:`) is known, not a comparison of it."""
        attrs = [a for a, (modes, _) in self.profile.runtime_facts.items() if mode in modes]
        if not attrs:
            return []
        return [
            Atom(key, text)
            for key, text in formula_atoms(formula).items()
            if key == RUNTIME_ATOM + text
            and _DOTTED.fullmatch(text)
            and any(text == attr or text.endswith("." + attr) for attr in attrs)
        ]

    def _phase(self, binding: Binding, pc: Formula) -> Phase | None:
        entry = binding.chain[0].rsplit(".", 1)[-1] if binding.chain else ""
        if entry in self.profile.capture_entries:
            return Phase.CAPTURE
        if entry in self.profile.replay_entries:
            return Phase.REPLAY
        if entry in self.profile.eager_entries:
            return Phase.EAGER
        flag = self.profile.capture_flag
        for part in conjuncts(pc):
            if isinstance(part, Atom) and part.key == flag:
                return Phase.CAPTURE
            if isinstance(part, Not) and isinstance(part.arg, Atom) and part.arg.key == flag:
                return Phase.REPLAY
        return None

    def _without_flag(self, pc: Formula) -> Formula:
        flag = self.profile.capture_flag
        return conj(
            *(
                part
                for part in conjuncts(pc)
                if not (isinstance(part, Atom) and part.key == flag)
                and not (
                    isinstance(part, Not) and isinstance(part.arg, Atom) and part.arg.key == flag
                )
            )
        )

    def _per_mode(self, pc: Formula) -> list[tuple[str, Formula]] | None:
        """The modes in which a path condition may hold, each with the condition left."""
        key = id(pc)
        found = self._mode_cache.get(key)
        if found is not None and found[0] is pc:
            return found[1]
        result: list[tuple[str, Formula]] | None = None
        if formula_mentions_mode(pc):
            result = []
            for mode in self.modes.members:
                if mode in self.runtime.not_run:
                    continue  # no code puts a batch in it
                specialised = specialise_formula(pc, mode)
                if specialised != FALSE:
                    result.append((mode, specialised))
        self._mode_cache[key] = (pc, result)
        return result

    def decide(self, obligation: Obligation, *, kernel_aware: bool = True) -> Outcome:
        """The verdict of one obligation, with kernel-aware severity for a refuted one whose
        rule sizes a kernel grid (`kernel_aware`; capture-replay comparisons have none)."""
        holds = simplify_formula(specialise_formula(obligation.claim.holds, obligation.mode))
        cases = lift_formula(holds)
        if cases is None:
            cases = [(TRUE, holds)]
        regular: list[Formula] = []
        unsupported: list[tuple[Formula, str]] = []
        for guard, case in cases:
            leaves = _leaves_of_formula(case)
            unknown = [leaf for leaf in leaves if isinstance(leaf, Unknown)]
            if any(isinstance(leaf, RuntimeInt) for leaf in leaves):
                continue  # computed from the runtime layout: consistent by construction
            if unknown:
                assert isinstance(unknown[0], Unknown)
                unsupported.append((guard, unknown[0].reason))
            else:
                regular.append(conj(guard, neg(case)))
        verdict = Verdict.PROVED
        outcome = Outcome(obligation, verdict)
        assumptions = self._who_runs(obligation.assumptions, holds, obligation.mode)
        if regular:
            violation = disj(*regular)
            result = self._check(assumptions, violation)
            outcome = Outcome(
                obligation,
                result.verdict,
                result.reason,
                dict(result.model),
                dict(result.atoms),
                dict(result.needs),
            )
        for guard, reason in unsupported:
            if outcome.verdict >= Verdict.UNSUPPORTED:
                break
            reachable = self._reachable(conj(assumptions, guard))
            if reachable is None:
                outcome = Outcome(obligation, Verdict.UNKNOWN, "z3 could not decide reachability")
            elif reachable:
                outcome = Outcome(obligation, Verdict.UNSUPPORTED, reason)
        if not regular and not unsupported and outcome.verdict == Verdict.PROVED:
            outcome = replace(outcome, reason="read from the runtime")
        if kernel_aware:
            outcome = replace(outcome, kernel=self.kernel_severity(outcome))
        if self.on_decided is not None:
            self.on_decided()
        return outcome

    def _who_runs(self, assumptions: Formula, holds: Formula, mode: str) -> Formula:
        """The assumptions, where they or the claim test the algorithm or the worker, with
        what is known of who runs the backend (`idxcheck.facts.algorithms`): the server runs
        exactly one algorithm of the tree's enum, the draft workers that a factory builds
        run only the backends it builds, and a server of some algorithms never runs `mode`
        (`RuntimeModel.algorithms_not_run`)."""
        algorithms = self.algorithms
        if algorithms is None or not mentions_algorithm(conj(assumptions, holds)):
            return assumptions
        found = [assumptions]
        if algorithms.members:
            found.append(exactly_one(algorithms.members, algorithms.setting))
        if self.draft_exclusion is not None:
            found.append(self.draft_exclusion)
        for member in self.runtime.algorithms_not_run.get(mode, ()):
            if member in algorithms.members:
                found.append(neg(algorithm_atom(member, algorithms.setting)))
        for member, rows in self.profile.algorithm_domain.items():
            if member in algorithms.members:
                atom = algorithm_atom(member, algorithms.setting)
                found.extend(disj(neg(atom), row.formula) for row in rows)
        return conj(*found)

    def _check(self, assumptions: Formula, violation: Formula) -> SolveResult:
        key = (untag_formula(assumptions), untag_formula(violation))
        found = self._checked.get(key)
        if found is None:
            disk_key = self._disk_key("check", assumptions, violation)
            stored = self.disk.get_verdict(disk_key) if self.disk is not None else None
            if stored is not None:
                from idxcheck.solve.result import result_from_dict

                found = result_from_dict(stored)  # None: not a stored result, a miss
            if found is None:
                found = self.solver.check(assumptions, violation)
                if self.disk is not None:
                    from idxcheck.solve.result import result_to_dict

                    self.disk.put_verdict(disk_key, result_to_dict(found))
            self._checked[key] = found
        return found

    def _reachable(self, formula: Formula) -> bool | None:
        key = untag_formula(formula)
        if key in self._reached:
            return self._reached[key]
        found: bool | None
        disk_key = self._disk_key("reachable", formula, TRUE)
        stored = self.disk.get_verdict(disk_key) if self.disk is not None else None
        known = False
        if stored is not None:
            from idxcheck.solve.result import reachable_from_dict

            known, found = reachable_from_dict(stored)
        if not known:
            found = self.solver.satisfiable(formula)
            if self.disk is not None:
                self.disk.put_verdict(disk_key, {"reachable": found})
        self._reached[key] = found
        return found

    def _disk_key(self, kind: str, first: Formula, second: Formula) -> str:
        if self.disk is None:
            return ""
        return self.disk.verdict_key(
            kind,
            str(self.config.rlimit),
            "\n".join(c.text for c in self.profile.domain),
            stable_hash(first),
            stable_hash(second),
        )


def _other_objects(a: Binding, b: Binding) -> bool:
    """Two attribute writes of one name on objects written differently (`metadata.cu_seqlens_q`
    at capture, `metadata_expand.cu_seqlens_q` in the eager path): two layouts, not one built
    twice."""
    return (
        a.kind == BindingKind.ATTRIBUTE
        and b.kind == BindingKind.ATTRIBUTE
        and a.owner is not None
        and b.owner is not None
        and a.owner != b.owner
    )


def _same_place(a: Binding, b: Binding) -> bool:
    """An eager layout is compared with the capture's where both are the same place: one
    statement reached from both paths, or a write of the same kind on an object (or to a call)
    written the same way. Fields of one name on other objects (a normal and an expanded
    metadata object) or a keyword of another call are other layouts."""
    return a.loc is b.loc or (a.kind == b.kind and a.owner == b.owner)
