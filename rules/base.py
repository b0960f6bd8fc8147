"""What a rule is: one invariant, as one class.

A rule says which roles of bound values it applies to, and for one bound value, one forward
mode and one runtime width, what must hold (a `Claim`), or why it asks nothing (`NoClaim`). The
engine does the rest: modes, runners, path conditions, the solver, reporting. What a finding of
the rule says beyond the generic parts comes from the rule too, through its hooks: its message
(`format_message`), what it gives a replay (`replay_fields`), the kernel grid its value sizes
(`kernel_grid`) and what it adds to the explanation (`explain_without_kernel`). Each rule's
docstring is its documentation (invariant, why it breaks, example, fix), and its VALID/INVALID
cases are backend snippets the test suite scans: INVALID ones mark each line that must be
flagged with `# expect: CODE`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from idxcheck.interp.layouts import Pairing
from idxcheck.interp.values import Value
from idxcheck.model.kinds import Phase, Role, Severity
from idxcheck.profiles.schema import Profile
from idxcheck.sym.terms import TRUE, Formula, Term

if TYPE_CHECKING:
    # Type hints only: the interpreter (and libcst) stay unloaded until a scan analyses code.
    from idxcheck.interp.state import Binding


@dataclass(frozen=True)
class Claim:
    """`holds` must be true wherever the site runs in the mode; `subject` is the term whose
    provenance locates a finding; `what` names it in messages."""

    subject: Term
    holds: Formula
    what: str
    assumptions: Formula = TRUE
    target: Term | None = None  # what the subject is compared with; None: the runtime width


@dataclass(frozen=True)
class NoClaim:
    """Nothing to check for this value. `unsupported` marks what the extractor could not
    model (reported as UNSUPPORTED with `reason`); otherwise the value is consistent by
    construction (read from the runtime) or is not what the rule is about."""

    reason: str
    unsupported: bool = False


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    roles: ClassVar[frozenset[Role]]
    severity: ClassVar[Severity] = Severity.ERROR
    summary: ClassVar[str]
    message: ClassVar[str]
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[str, ...]] = ()
    # A claim that does not depend on the forward mode (a shape, a capacity) is also checked on
    # paths that no mode condition reaches, and reported once for all modes.
    mode_independent: ClassVar[bool] = False
    # Compares two bindings of one target (capture against replay) instead of one binding
    # against the runtime width; such a rule implements `compare`.
    pairwise: ClassVar[bool] = False
    # Its claim holds when the subject is the claim's target (else the runtime width): a
    # finding may offer to write the site as a class attribute that holds that value.
    fixable: ClassVar[bool] = False
    # Compared with the most tokens a request can have, where a mode packs requests of fewer
    # tokens than its runner's width (a grid must cover every request, not the capture's).
    bounds_requests: ClassVar[bool] = False
    # Checked together with the bindings of this role made with the value (the keywords of one
    # call, the fields of one metadata object, the keys of one dict): a grid scalar with the
    # index pointer of its metadata.
    pairs_with: ClassVar[Role | None] = None

    def claim(
        self,
        value: Value,
        width: Term,
        pair: Pairing | None = None,
        binding: Binding | None = None,
    ) -> Claim | NoClaim:
        """What must hold for `value` when the runtime lays out `width` tokens per request;
        `pair` is the index pointer built together with it, when there is one; `binding` is
        where the value was bound (its slice bounds, for shape rules)."""
        raise NotImplementedError

    def compare(
        self,
        other: Value,
        value: Value,
        width: Term,
        other_phase: Phase,
        *,
        packed: bool = False,
        width_lengths: bool = False,
    ) -> Claim | NoClaim:
        """For a pairwise rule: what must hold between `other` (bound in `other_phase`) and
        `value`, the same target bound later, when the runtime lays out `width` tokens per
        request (`packed`: up to `width`, each request's tokens right after the last's;
        `width_lengths`: `value` is laid out from lengths that are each request's `width`)."""
        raise NotImplementedError

    def format_message(self, *, what: str, site: str, width: str, mode: str, name: str) -> str:
        return self.message.format(what=what, site=site, width=width, mode=mode, name=name)

    def replay_fields(self, value: Value, claim: Claim) -> dict[str, Term]:
        """What an obligation of this rule gives the replay of a finding in the same class and
        mode (`qo_stride`, `segments_per_req`, `max_len`), so that a replay builds all of the
        metadata the way the code does. The first obligation that gives the first of them
        gives them all."""
        return {}

    def kernel_grid(self, name: str, profile: Profile) -> tuple[str, str] | None:
        """The kernel launcher (and its parameter) whose grid a value bound to `name` sizes:
        a refutation is then an error only where a real block size of the launcher drops rows."""
        return None

    def explain_without_kernel(self, launcher: str) -> tuple[str, ...]:
        """What the explanation adds when the value sizes the grid of `launcher`, which is not
        in the scanned tree."""
        return ()

    @classmethod
    def doc(cls) -> str:
        return (cls.__doc__ or "").strip()
