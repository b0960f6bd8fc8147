"""The only module that imports z3.

Decides whether a violation formula is satisfiable under the domain and an obligation's
assumptions, with a deterministic resource limit (z3's `rlimit`, not wall-clock), and turns a
model into a minimal, readable counterexample: symbols are minimised one at a time in the
profile's order, and for each symbol the least value any counterexample needs is reported
when it is above what the domain allows."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import z3
import z3.z3

from idxcheck.model.budget import DEFAULT_RLIMIT
from idxcheck.model.verdicts import Verdict
from idxcheck.solve.types import SolveResult
from idxcheck.sym.terms import (
    And,
    Atom,
    BinOp,
    BoolConst,
    Cmp,
    Const,
    Formula,
    Ite,
    ModeIs,
    Not,
    Or,
    RuntimeInt,
    RuntimeWidth,
    Sym,
    Tagged,
    Term,
    Unknown,
    formula_symbols,
    untag_formula,
)

_SEARCH_FLOOR = 0

# z3's Python layer re-checks the sorts and contexts of every argument of every term it builds
# when `Z3_DEBUG` is on (its default, `__debug__`). The terms built here come from typed IR
# nodes, and z3's C API checks sorts itself (a wrong one raises `Z3Exception` either way):
# the Python checks only cost time, a large share of building a term, itself a large share of
# deciding obligations (bench/RESULTS.md, "Measurements that stood in code comments").
z3.z3.Z3_DEBUG = False


# What every solver is built with, besides its `rlimit` and `timeout` (`_backstop_ms`). z3's
# nonlinear integer arithmetic has parts that count no resource, where a question runs past any
# `rlimit` (a path condition such as `a*a*b*b*c == 7*c*c*c*a + 13*b*b*b + 999983` over three
# symbols did): the SMT core's calls into nlsat (`arith.nl.nra`: resultants of ever larger
# polynomials while isolating roots) and its optimisation of monomial bounds
# (`arith.nl.optimize_bounds`: integer roots of ever larger bounds). Without them z3 answers
# `unknown` (incomplete) where it would have gone on; the default solver still asks nlsat
# itself, as a tactic that counts its work. The verdicts of the fixtures and of the real
# SGLang trees are the same either way. `ctrl_c`: z3 would take SIGINT for the length of each
# check and answer `unknown`, so Ctrl-C made an UNKNOWN verdict and the scan went on;
# `_Interrupts` ends the scan instead.
SOLVER_PARAMS: tuple[tuple[str, bool | int], ...] = (
    ("random_seed", 0),
    ("ctrl_c", False),
    ("arith.nl.nra", False),
    ("arith.nl.optimize_bounds", False),
)

# The same root-taking also runs from the SMT core's propagation of monomial bounds, which no
# parameter turns off (rarely: one of 48 random quartic equalities at the default rlimit). A
# wall-clock backstop ends such a check: BACKSTOP_BASE_MS plus a millisecond for each
# BACKSTOP_RLIMIT_PER_MS of the budget, about ten times what the budget takes where z3 counts
# (two to four million a second), so that it decides nothing the rlimit would have. A check
# it ends is UNKNOWN ("z3: timeout"), the one answer that depends on the machine, as z3's own
# default tactics already do: they give some of their stages 2 to 15 s.
BACKSTOP_BASE_MS = 10_000
BACKSTOP_RLIMIT_PER_MS = 200


def _backstop_ms(rlimit: int) -> int:
    return min(BACKSTOP_BASE_MS + rlimit // BACKSTOP_RLIMIT_PER_MS, 2**32 - 1)


class _Interrupts:
    """Ctrl-C during a check. Python runs its SIGINT handler only between bytecodes, and a
    check is one call into z3, which may last: a thread woken through the signal wakeup fd
    (written by Python's own C handler) interrupts z3, whose check then returns; `checked`
    turns that return into the KeyboardInterrupt the handler raises, so an interrupted check is
    never a verdict (nor cached). A second SIGINT while z3 has still not returned (a part of it
    that does not look at interrupts) ends the process at once, with status 130.

    One watcher per process (a forked worker starts its own: the parent's thread is not
    forked, and the parent's pipe must not wake the parent), installed from the main thread
    only, where Python allows a wakeup fd. A wakeup fd set by someone else is kept: the
    watcher passes every byte on to it."""

    def __init__(self) -> None:
        self.pid = 0
        self.fds: tuple[int, int] | None = None
        self.forward = -1
        self.checking = False
        self.interrupted = False

    def install(self) -> None:
        if self.pid == os.getpid() or threading.current_thread() is not threading.main_thread():
            return
        read, write = os.pipe()
        os.set_blocking(write, False)
        try:
            previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        except ValueError:  # not the main thread of the main interpreter
            os.close(read)
            os.close(write)
            return
        self.forward = -1 if self.fds is not None and previous == self.fds[1] else previous
        self._close_inherited()
        self.pid, self.fds = os.getpid(), (read, write)
        threading.Thread(
            target=self._watch, args=(read,), name="z3-interrupts", daemon=True
        ).start()

    def _close_inherited(self) -> None:
        """The pipe a forked process inherited from its parent's watcher."""
        if self.fds is not None and self.pid != os.getpid():
            for fd in self.fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.fds = None

    def after_fork(self) -> None:
        """In a forked child: the wakeup fd back to what it was before this watcher's, so that
        a signal here wakes no thread of the parent's until the child installs its own."""
        if self.fds is not None:
            try:
                current = signal.set_wakeup_fd(-1)
                signal.set_wakeup_fd(self.forward if current == self.fds[1] else current)
            except ValueError:
                pass
        self._close_inherited()
        self.checking = self.interrupted = False

    def _watch(self, read: int) -> None:
        while True:
            try:
                data = os.read(read, 256)
            except OSError:
                return
            if not data:
                return
            if self.forward != -1:
                try:
                    os.write(self.forward, data)
                except OSError:
                    pass
            if signal.SIGINT in data and self.checking:
                if self.interrupted:
                    os.write(2, b"idxcheck: interrupted\n")
                    os._exit(130)
                self.interrupted = True
                z3.main_ctx().interrupt()

    def checked(self, solver: z3.Solver) -> z3.CheckSatResult:
        self.checking, self.interrupted = True, False
        try:
            result = solver.check()
        finally:
            self.checking = False
        if self.interrupted:
            raise KeyboardInterrupt
        return result


_INTERRUPTS = _Interrupts()
os.register_at_fork(after_in_child=_INTERRUPTS.after_fork)


def _check(solver: z3.Solver) -> z3.CheckSatResult:
    """`solver.check()`, which Ctrl-C ends (`_Interrupts`)."""
    return _INTERRUPTS.checked(solver)


def solver_version() -> str:
    return str(z3.get_version_string())


# A node's translation with the variables it holds, by the node's identity (the node is kept
# in the entry, so that its id is not reused while the entry lives).
_Translated = tuple[object, z3.ExprRef, dict[str, z3.ArithRef], dict[str, z3.BoolRef]]


class _Translator:
    """Translates terms and formulas to z3 and collects the variables of what it translated
    (`ints`, `bools`: a counterexample is read over exactly these).

    Terms and formulas are DAGs, and the questions of one file share most of their parts (the
    path conditions of its sites share their conjuncts): each node is translated once, into
    `memo`, which translators share, with the variables under it."""

    def __init__(
        self, memo: dict[int, _Translated] | None = None, ctx: z3.Context | None = None
    ) -> None:
        self.ints: dict[str, z3.ArithRef] = {}
        self.bools: dict[str, z3.BoolRef] = {}
        self._memo: dict[int, _Translated] = {} if memo is None else memo
        # The z3 context the translations live in (None: z3's main one).
        self.ctx = ctx

    def int_var(self, name: str) -> z3.ArithRef:
        var = self.ints.get(name)
        if var is None:
            var = z3.Int(name, self.ctx)
            self.ints[name] = var
        return var

    def bool_var(self, key: str) -> z3.BoolRef:
        var = self.bools.get(key)
        if var is None:
            var = z3.Bool(f"atom:{key}", self.ctx)
            self.bools[key] = var
        return var

    def term(self, term: Term) -> z3.ArithRef:
        return self._translated(term, _Translator._term)

    def formula(self, formula: Formula) -> z3.BoolRef:
        return self._translated(formula, _Translator._formula)

    def _translated(
        self, node: Any, translate: Callable[[_Translator, Any], z3.ExprRef]
    ) -> z3.ExprRef:
        found = self._memo.get(id(node))
        if found is None or found[0] is not node:
            # Translated by a translator of its own, whose variables are the node's.
            alone = _Translator(self._memo, self.ctx)
            found = (node, translate(alone, node), alone.ints, alone.bools)
            self._memo[id(node)] = found
        self.ints.update(found[2])
        self.bools.update(found[3])
        return found[1]

    def _term(self, term: Term) -> z3.ArithRef:
        if isinstance(term, Tagged):
            return self.term(term.inner)
        if isinstance(term, Const):
            return z3.IntVal(term.value, self.ctx)
        if isinstance(term, Sym):
            return self.int_var(term.name)
        if isinstance(term, RuntimeWidth):
            return self.int_var("@runtime_width")
        if isinstance(term, RuntimeInt):
            # Only ever in a path condition (the engine splits claims on them): a value the
            # runtime computes, free for the solver.
            return self.int_var(f"@runtime:{term.source}")
        if isinstance(term, Unknown):
            return self.int_var(f"@unknown:{term.reason}")
        if isinstance(term, BinOp):
            a, b = self.term(term.left), self.term(term.right)
            if term.op == "+":
                return a + b
            if term.op == "-":
                return a - b
            if term.op == "*":
                return a * b
            if term.op == "//":
                # Python floor division; z3's integer division is Euclidean, which agrees for
                # positive divisors.
                return z3.If(b > 0, a / b, z3.If(b < 0, (-a) / (-b), z3.IntVal(0, self.ctx)))
            if term.op == "%":
                return z3.If(b > 0, a % b, z3.If(b < 0, -((-a) % (-b)), a))
            if term.op == "max":
                return z3.If(a >= b, a, b)
            if term.op == "min":
                return z3.If(a <= b, a, b)
            raise ValueError(f"unknown operator {term.op}")
        if isinstance(term, Ite):
            return z3.If(self.formula(term.cond), self.term(term.then), self.term(term.other))
        raise TypeError(f"not a term: {term!r}")

    def _formula(self, formula: Formula) -> z3.BoolRef:
        if isinstance(formula, BoolConst):
            return z3.BoolVal(formula.value, self.ctx)
        if isinstance(formula, Cmp):
            a, b = self.term(formula.left), self.term(formula.right)
            return {
                "==": lambda: a == b,
                "!=": lambda: a != b,
                "<": lambda: a < b,
                "<=": lambda: a <= b,
                ">": lambda: a > b,
                ">=": lambda: a >= b,
            }[formula.op]()
        if isinstance(formula, And):
            return z3.And(*(self.formula(a) for a in formula.args))
        if isinstance(formula, Or):
            return z3.Or(*(self.formula(a) for a in formula.args))
        if isinstance(formula, Not):
            return z3.Not(self.formula(formula.arg))
        if isinstance(formula, Atom):
            return self.bool_var(formula.key)
        if isinstance(formula, ModeIs):
            raise ValueError("forward modes are substituted before solving")
        raise TypeError(f"not a formula: {formula!r}")


def _linear_term(term: Term) -> bool:
    if isinstance(term, Tagged):
        return _linear_term(term.inner)
    if isinstance(term, BinOp):
        if not (_linear_term(term.left) and _linear_term(term.right)):
            return False
        if term.op == "*":
            return _constant(term.left) or _constant(term.right)
        if term.op in ("//", "%"):
            return _constant(term.right)
        return True
    if isinstance(term, Ite):
        return _linear_formula(term.cond) and _linear_term(term.then) and _linear_term(term.other)
    return True


def _constant(term: Term) -> bool:
    while isinstance(term, Tagged):
        term = term.inner
    return isinstance(term, Const)


def _linear_formula(formula: Formula) -> bool:
    """Whether z3 reads `formula` in linear integer arithmetic: no product of two symbols, no
    division or remainder by a symbol."""
    if isinstance(formula, Cmp):
        return _linear_term(formula.left) and _linear_term(formula.right)
    if isinstance(formula, (And, Or)):
        return all(_linear_formula(a) for a in formula.args)
    if isinstance(formula, Not):
        return _linear_formula(formula.arg)
    return True


def formula_symbol_names(formula: Formula) -> set[str]:
    return formula_symbols(formula)


def relevant_domain(domain: Sequence[Formula], symbols: Iterable[str]) -> list[Formula]:
    """The domain constraints connected to `symbols` through shared symbols."""
    wanted = set(symbols)
    chosen: list[Formula] = []
    pending = list(domain)
    changed = True
    while changed:
        changed = False
        rest: list[Formula] = []
        for constraint in pending:
            names = formula_symbol_names(constraint)
            if names & wanted:
                chosen.append(constraint)
                if not names <= wanted:
                    wanted |= names
                    changed = True
            else:
                rest.append(constraint)
        pending = rest
    return chosen


class Solver:
    def __init__(
        self,
        domain: Sequence[Formula],
        order: Sequence[str],
        rlimit: int = DEFAULT_RLIMIT,
    ) -> None:
        self.domain = list(domain)
        self.order = list(order)
        self.rlimit = rlimit
        _INTERRUPTS.install()
        # Whether the domain constraints (by identity: they live as long as this solver) and
        # an obligation's assumptions have a model. The obligations of one site share their
        # assumptions, and finding a model of a long path condition is the dearest query of a
        # proof: each is asked of z3 once.
        self._reachable: dict[tuple[object, ...], z3.CheckSatResult] = {}
        # Domain constraints that multiply or divide symbols (`topk * topk`) put every query
        # that includes them in z3's nonlinear arithmetic, where finding a model takes far
        # longer than in linear arithmetic (bench/RESULTS.md, "What each change did", and
        # "Measurements that stood in code comments"). Each query is asked first without them:
        # `_relaxed` says why the answer is then the same.
        self._nonlinear = {id(c) for c in self.domain if not _linear_formula(c)}
        # Each node of the formulas a question is made of (a domain constraint, a path
        # condition, a violation) translated once per file (`_Translator`): one obligation
        # asks two or three questions of the same parts, the obligations of a site share
        # their assumptions, and the path conditions of a file share their conjuncts.
        # `forget_translations` empties it.
        self._translations: dict[int, _Translated] = {}

    def forget_translations(self) -> None:
        """Drop the translations kept so far (a scan's next file shares few of them)."""
        self._translations.clear()

    def _translator(self) -> _Translator:
        return _Translator(self._translations)

    def _new(
        self, translator: _Translator, parts: Sequence[Formula], core: bool = False
    ) -> z3.Solver:
        # `core`: z3's SMT core alone. The default solver first turns bounded integers into
        # bit-vectors for a SAT solver: on the path conditions of a real backend (a few
        # bounded symbols, dozens of opaque conditions) the core answers far faster
        # (bench/RESULTS.md, "What each change did").
        ctx = translator.ctx
        solver = z3.Tactic("smt", ctx).solver() if core else z3.Solver(ctx=ctx)
        solver.set("rlimit", self.rlimit)
        solver.set("timeout", _backstop_ms(self.rlimit))
        for name, value in SOLVER_PARAMS:
            solver.set(name, value)
        for part in parts:
            solver.add(translator.formula(part))
        if "@runtime_width" in translator.ints:
            # The width the runtime publishes is a count of tokens per request.
            solver.add(translator.ints["@runtime_width"] >= 1)
        return solver

    def _relaxed(
        self, domain: Sequence[Formula], rest: Sequence[Formula]
    ) -> z3.CheckSatResult | None:
        """Whether `domain` and `rest` together have a model, asked of z3's SMT core without
        the nonlinear domain constraints, or None when that does not tell. Without them the
        question is weaker: no model then means none with them either, and a model that
        satisfies them too is a model of the whole. So the answer is the one z3 gives for
        the whole question, except where that would be `unknown`."""
        nonlinear = [c for c in domain if id(c) in self._nonlinear]
        translator = self._translator()
        relaxed = self._new(
            translator, [*(c for c in domain if id(c) not in self._nonlinear), *rest], core=True
        )
        result = _check(relaxed)
        if result == z3.unsat:
            return result
        if result == z3.sat:
            model = relaxed.model()
            # Symbols that only the nonlinear constraints mention are completed (to 0) by
            # the evaluation: the completed model is the one checked.
            if all(
                z3.is_true(model.eval(translator.formula(c), model_completion=True))
                for c in nonlinear
            ):
                return result
        return None

    def _decide(self, domain: Sequence[Formula], rest: Sequence[Formula]) -> z3.CheckSatResult:
        found = self._relaxed(domain, rest)
        if found is not None:
            return found
        return _check(self._new(self._translator(), [*domain, *rest]))

    def satisfiable(self, formula: Formula) -> bool | None:
        symbols = formula_symbol_names(formula)
        result = self._decide(relevant_domain(self.domain, symbols), [formula])
        if result == z3.unknown:
            return None
        return bool(result == z3.sat)

    def check(self, assumptions: Formula, violation: Formula) -> SolveResult:
        """PROVED when `violation` is impossible under the assumptions, UNREACHABLE when the
        assumptions themselves are, REFUTED (with a minimal model) otherwise."""
        symbols = formula_symbol_names(assumptions) | formula_symbol_names(violation)
        domain = relevant_domain(self.domain, symbols)
        key = (*map(id, domain), untag_formula(assumptions))
        translator = self._translator()
        solver = None
        if self._relaxed(domain, [assumptions, violation]) == z3.unsat:
            result = z3.unsat
        else:
            # The whole question, on a solver that a counterexample is read from.
            solver = self._new(translator, [*domain, assumptions, violation])
            result = _check(solver)
        if result == z3.unknown:
            assert solver is not None
            return SolveResult(Verdict.UNKNOWN, reason=f"z3: {solver.reason_unknown()}")
        if result == z3.unsat:
            reach = self._reachable.get(key)
            if reach is None:
                reach = self._decide(domain, [assumptions])
                self._reachable[key] = reach
            if reach == z3.unsat:
                return SolveResult(Verdict.UNREACHABLE)
            if reach == z3.unknown:
                return SolveResult(Verdict.UNKNOWN, reason="z3 could not decide reachability")
            return SolveResult(Verdict.PROVED)
        assert solver is not None
        # A model of the assumptions with the violation is one of the assumptions alone.
        self._reachable[key] = z3.sat
        # The counterexample is read in a z3 context of its own, where the question alone was
        # translated: z3's model depends on the order its context made its terms in, which in
        # the shared one depends on the questions asked before (another process, another
        # order of files), and the opaque conditions listed would differ from run to run.
        fresh = _Translator(None, z3.Context())
        alone = self._new(fresh, [*domain, assumptions, violation])
        if _check(alone) == z3.sat:
            translator, solver = fresh, alone
        names = self._ordered(translator.ints)
        model = self._minimise(translator, solver, names)
        atoms = self._atoms(translator, solver, model, [*domain, assumptions, violation])
        needs = self._needs(domain, assumptions, violation, names, model)
        return SolveResult(Verdict.REFUTED, model, atoms, needs)

    def _ordered(self, ints: Mapping[str, z3.ArithRef]) -> list[str]:
        visible = [n for n in ints if not n.startswith("@")]
        ranked = [n for n in self.order if n in visible]
        return ranked + sorted(n for n in visible if n not in ranked)

    def _minimise(
        self, translator: _Translator, solver: z3.Solver, names: list[str]
    ) -> dict[str, int]:
        fixed: dict[str, int] = {}
        for name in names:
            var = translator.ints[name]
            model = solver.model()
            current = model.eval(var, model_completion=True).as_long()
            low = _SEARCH_FLOOR if current >= _SEARCH_FLOOR else current
            solver.push()
            solver.add(var >= low)
            if _check(solver) != z3.sat:
                solver.pop()
                low = current
                solver.push()
                solver.add(var >= low)
                _check(solver)
            # Binary search the least value with a model, keeping earlier symbols fixed.
            best = current
            hi = current
            while low < hi:
                mid = (low + hi) // 2
                solver.push()
                solver.add(var <= mid)
                outcome = _check(solver)
                solver.pop()
                if outcome == z3.sat:
                    hi = mid
                    best = mid
                else:
                    low = mid + 1
            solver.pop()
            solver.add(var == best)
            fixed[name] = best
            if _check(solver) != z3.sat:  # pragma: no cover - the value was just seen satisfiable
                break
        return fixed

    def _atoms(
        self,
        translator: _Translator,
        solver: z3.Solver,
        model_ints: dict[str, int],
        question: Sequence[Formula] = (),
    ) -> dict[str, bool]:
        """The opaque conditions this counterexample needs: a minimal set of them, with their
        values, under which every value of the others still fails, the integers kept. Each
        condition of the model is dropped in turn and the solver asked again whether what is
        left still forces a failure (`question`: the domain, the assumptions and the
        violation); the conditions that are left are the ones a person must check."""
        if _check(solver) != z3.sat:
            return {}
        model = solver.model()
        values = {
            key: z3.is_true(model.eval(var, model_completion=True))
            for key, var in sorted(translator.bools.items())
        }
        if not values:
            return {}
        # Every integer of the question at its value in the model, the hidden ones (runtime
        # values, unknown terms) included: only the opaque conditions vary.
        pinned = [var == model.eval(var, model_completion=True) for var in translator.ints.values()]
        failing = z3.And(*(translator.formula(part) for part in question))
        kept = dict(values)
        for key in list(values):
            rest = {k: v for k, v in kept.items() if k != key}
            check = self._new(_Translator(None, translator.ctx), [])
            check.add(*pinned)
            for name, value in rest.items():
                check.add(translator.bools[name] == z3.BoolVal(value, translator.ctx))
            check.add(z3.Not(failing))
            if _check(check) == z3.unsat:  # the others alone force the failure
                kept = rest
        return kept

    def _needs(
        self,
        domain: list[Formula],
        assumptions: Formula,
        violation: Formula,
        names: list[str],
        model: dict[str, int],
    ) -> dict[str, int]:
        """For each symbol, the least value it takes in any counterexample, when the domain
        alone allows less: "needs topk >= 2"."""
        needs: dict[str, int] = {}
        for name in names:
            with_violation = self._least(name, [*domain, assumptions, violation], model.get(name))
            without = self._least(name, [*domain, assumptions], model.get(name))
            if with_violation is not None and without is not None and with_violation > without:
                needs[name] = with_violation
        return needs

    def _least(self, name: str, parts: list[Formula], upper: int | None) -> int | None:
        if upper is None:
            return None
        translator = self._translator()
        solver = self._new(translator, parts)
        var = translator.int_var(name)
        low, hi, best = _SEARCH_FLOOR, upper, None
        solver.push()
        solver.add(var <= upper)
        if _check(solver) != z3.sat:
            return None
        solver.pop()
        while low <= hi:
            mid = (low + hi) // 2
            solver.push()
            solver.add(var <= mid)
            outcome = _check(solver)
            solver.pop()
            if outcome == z3.sat:
                best = mid
                hi = mid - 1
            elif outcome == z3.unsat:
                low = mid + 1
            else:
                return None
        return best
