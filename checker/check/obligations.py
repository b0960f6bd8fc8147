"""What an obligation is, and the values it is made of, specialised to one forward mode."""

from __future__ import annotations

from dataclasses import dataclass

from idxcheck.facts.constraints import TreeConstraint
from idxcheck.facts.runtime_model import RunnerWidth
from idxcheck.interp.state import Binding
from idxcheck.interp.values import LayoutV, Value
from idxcheck.model.kinds import BindingKind
from idxcheck.rules import Claim, NoClaim, Rule
from idxcheck.sym.terms import Formula, RuntimeWidth, specialise_term

# Mode-independent rules (shapes, capacities) on paths no forward-mode condition reaches.
ANY_MODE = "any mode"


ANY_RUNNER = RunnerWidth(mode=ANY_MODE, term=RuntimeWidth(), text="", source="any runner")


@dataclass(frozen=True)
class Obligation:
    rule: Rule
    binding: Binding
    value: Value
    mode: str
    runner: RunnerWidth
    claim: Claim
    assumptions: Formula
    constraints: tuple[TreeConstraint, ...] = ()
    other: Binding | None = None  # for pairwise rules: the binding compared with


# Bindings one evaluation makes (the arguments of one call). Two of them pair only when the
# same run made them: two runs of the same code (a method run as an entry point, and inlined
# from another entry) make two calls, each on its own path, and one's grid scalar with the
# other's index pointer are values no single call holds together. A field written on an
# object after it was made may pair with the object's arguments from another run (a
# metadata object made at capture, refilled at replay).
PER_EVALUATION = frozenset(
    {BindingKind.KEYWORD, BindingKind.POSITIONAL, BindingKind.ARGUMENT, BindingKind.PARAMETER}
)


def may_pair(binding: Binding, partner: Binding) -> bool:
    """Whether two bindings of one group can be values held together."""
    one_call = binding.kind in PER_EVALUATION and partner.kind in PER_EVALUATION
    return not one_call or binding.chain == partner.chain


def specialise_value(value: Value, mode: str) -> Value:
    if isinstance(value, LayoutV):
        return LayoutV(
            specialise_term(value.start, mode),
            specialise_term(value.stride, mode),
            specialise_term(value.entries, mode) if value.entries is not None else None,
            value.loc,
            value.text,
            value.source,
        )
    from idxcheck.interp.values import IntV

    if isinstance(value, IntV):
        return IntV(specialise_term(value.term, mode))
    return value


@dataclass(frozen=True)
class Unclaimed:
    """A rule that asks nothing of a binding in a mode, and why (`NoClaim`): UNSUPPORTED when
    the value is not modelled, else consistent by construction."""

    binding: Binding
    rule: Rule
    mode: str
    reason: NoClaim
