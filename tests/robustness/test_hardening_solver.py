"""Every solver question ends within the deterministic budget, and Ctrl-C ends a scan.

z3's nonlinear integer arithmetic has paths that count no resource (root isolation of
algebraic numbers in its SMT core's nonlinear module, the tightening of monomial bounds to
roots of huge integers): a path condition such as `a*a*b*b*c == 7*c*c*c*a + 13*b*b*b + 999983`
ran past any `rlimit` there. The parts that parameters turn off are off; a wall-clock backstop
far above the budget ends the rest. Each scan below runs in a child process with a wall-clock
bound far above what the budget takes, so a question that never ends fails the test instead of
hanging it."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from idxcheck.model.verdicts import Verdict
from idxcheck.solve.solver import Solver
from idxcheck.sym.parse import parse_formula
from idxcheck.sym.terms import Const, Sym, binop, cmp

# The `rlimit` at which the condition of the report hung (at 500,000 it ended in 0.4 s).
HARD_RLIMIT = 2_000_000
# Wall-clock bound of one scan of a hard condition at HARD_RLIMIT: about 3 s of solving on a
# loaded machine, plus the start of a Python process; a question that never ends runs past it.
BOUND_S = 60.0
VERDICTS = {v.name for v in Verdict}

BACKEND = """\
import torch


class HardBackend:
    def __init__(self, model_runner):
        args = model_runner.server_args
        self.a = args.speculative_num_steps
        self.b = args.speculative_eagle_topk
        self.c = args.speculative_num_draft_tokens
        self.qo_indptr = torch.zeros((model_runner.req_to_token_pool.size + 1,), dtype=torch.int64)

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        if forward_mode.is_draft_extend_v2():
            a, b, c = self.a, self.b, self.c
            if {condition}:
                per_req = self.a + 1
                self.qo_indptr[: bs + 1] = torch.arange(0, bs * per_req + 1, step=per_req)
"""

REPORTED = "a * a * b * b * c == 7 * c * c * c * a + 13 * b * b * b + 999983"


def _monomial(rnd: random.Random, degree: int) -> str:
    return " * ".join(rnd.choice("abc") for _ in range(degree))


def hard_condition(seed: int) -> str:
    """A Diophantine-style equality over the three symbols: two random quartic or quintic
    products on the left, two cubic or quartic ones and a large constant on the right."""
    rnd = random.Random(seed)

    def side(degrees: tuple[int, ...]) -> str:
        return " + ".join(
            f"{rnd.randint(2, 20)} * {_monomial(rnd, rnd.choice(degrees))}" for _ in range(2)
        )

    left, right = side((4, 5)), side((3, 4))
    return f"{left} == {right} + {rnd.randint(10**5, 10**6)}"


def _scan_in_child(tmp_path: Path, condition: str, rlimit: int) -> tuple[dict, float]:
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    (tree / "hard.py").write_text(BACKEND.format(condition=condition), encoding="utf-8")
    started = time.monotonic()
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "idxcheck",
                "scan",
                str(tree),
                "--no-cache",
                "-j",
                "1",
                "--rlimit",
                str(rlimit),
                "--strict",
                "--format",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=BOUND_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the scan of `{condition}` ran past {BOUND_S:g} s at rlimit {rlimit}")
    seconds = time.monotonic() - started
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout), seconds


# Conditions that ran past any budget before: the reported one, and members of the family.
@pytest.mark.parametrize("condition", [REPORTED, hard_condition(1), hard_condition(5)])
def test_a_hard_path_condition_ends_within_the_budget(tmp_path: Path, condition: str) -> None:
    report, _ = _scan_in_child(tmp_path, condition, HARD_RLIMIT)
    sites = [s for s in report["sites"] + report["findings"] if s["path"].endswith("hard.py")]
    assert sites, report
    for site in sites:
        assert site["verdict"] in VERDICTS
    # `--strict`: an obligation the budget did not decide fails the scan, never passes it.
    if any(s["verdict"] == "UNKNOWN" for s in sites):
        assert report["exit_code"] == 1


def _run_family(conditions: list[str], bound: float) -> list[str]:
    """`solve_family` in a child process bounded in wall-clock time."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); import {0} as m; m.solve_family()"
    root = Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run(
            [sys.executable, "-c", code.format(__name__), str(root), *conditions],
            capture_output=True,
            text=True,
            timeout=bound,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"a question of the family ran past {bound:g} s")
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def solve_family() -> None:
    """For each condition of the command line: whether it is satisfiable in the domain, and
    the verdict of an obligation under it (the relaxed pass, the whole question, reachability
    and, for a refutation, minimisation)."""
    symbols = ("a", "b", "c")
    domain = [cmp(">=", Sym(s), Const(1)) for s in symbols]
    solver = Solver(domain, symbols, HARD_RLIMIT)
    violation = cmp(">", binop("+", Sym("a"), Sym("b")), Const(3))
    for text in sys.argv[2:]:
        condition = parse_formula(text)
        print(solver.satisfiable(condition), solver.check(condition, violation).verdict.name)


def test_the_solver_api_ends_its_questions() -> None:
    answers = _run_family([REPORTED, hard_condition(5)], BOUND_S)
    assert len(answers) == 4
    for reachable, verdict in zip(answers[::2], answers[1::2], strict=True):
        assert reachable in ("True", "False", "None") and verdict in VERDICTS


@pytest.mark.slow
def test_the_solver_api_ends_the_questions_of_a_larger_family() -> None:
    answers = _run_family([hard_condition(s) for s in range(24)], BOUND_S * 12)
    assert len(answers) == 48 and set(answers[1::2]) <= VERDICTS


def test_unknown_is_never_a_pass() -> None:
    """With almost no budget, a question whose answer would be PROVED is UNKNOWN, in both of
    the solver's passes (the relaxed one and the whole question)."""
    x, y = Sym("x"), Sym("y")
    domain = [
        cmp(">=", x, Const(1)),
        cmp(">=", y, Const(1)),
        cmp("<=", binop("*", x, y), Const(64)),
    ]
    question = (cmp("<=", x, Const(64)), cmp(">", binop("+", x, y), Const(200)))
    assert Solver(domain, ["x", "y"]).check(*question).verdict is Verdict.PROVED
    starved = Solver(domain, ["x", "y"], rlimit=1).check(*question)
    assert starved.verdict is Verdict.UNKNOWN, starved
    assert starved.reason


def test_a_check_the_rlimit_does_not_stop_ends_at_the_backstop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where z3 counts no resource, the wall-clock backstop ends the check: with it shrunk to
    a fifth of a second under a budget no check exhausts, a hard question is UNKNOWN at once,
    for the backstop's reason."""
    from idxcheck.solve import solver as solver_module

    monkeypatch.setattr(solver_module, "BACKSTOP_BASE_MS", 200)
    monkeypatch.setattr(solver_module, "BACKSTOP_RLIMIT_PER_MS", 10**12)
    domain = [cmp(">=", Sym(s), Const(1)) for s in "abc"]
    solver = Solver(domain, ["a", "b", "c"], rlimit=4_000_000_000)
    started = time.monotonic()
    result = solver.check(
        parse_formula(hard_condition(3)), cmp(">", binop("+", Sym("a"), Sym("b")), Const(3))
    )
    assert result.verdict is Verdict.UNKNOWN and "timeout" in result.reason, result
    assert time.monotonic() - started < 3


# -- Ctrl-C -------------------------------------------------------------------------------------

# Far more than a test waits: the scan is interrupted while z3 is still at it.
LONG_RLIMIT = 2_000_000_000


def _start_scan(tree: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "idxcheck",
            "scan",
            str(tree),
            "--no-cache",
            "--rlimit",
            str(LONG_RLIMIT),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        # and with Ctrl-C's default action, as a shell starts one: a process started with
        # SIGINT ignored keeps it ignored, and Python then installs no handler (the runner of
        # this suite may have left it ignored).
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_until_solving(proc: subprocess.Popen[str], pids: int = 1) -> None:
    """Until `pids` processes of the scan's group have z3 loaded, and a little more."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if _processes_with_z3(proc.pid) >= pids:
            time.sleep(1.5)
            return
        time.sleep(0.1)
    pytest.fail("the scan never reached the solver")


def _group(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    found.append(int(entry))
            except ProcessLookupError:
                pass
    return found


def _processes_with_z3(pgid: int) -> int:
    count = 0
    for pid in _group(pgid):
        try:
            if "libz3" in Path(f"/proc/{pid}/maps").read_text():
                count += 1
        except OSError:
            pass
    return count


def _interrupt(proc: subprocess.Popen[str]) -> tuple[int, str]:
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("Ctrl-C did not end the scan within 20 s")
    return proc.returncode, err


needs_proc = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")


@needs_proc
def test_ctrl_c_during_a_solve_ends_the_scan(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "hard.py").write_text(BACKEND.format(condition=REPORTED), encoding="utf-8")
    proc = _start_scan(tree, "-j", "1")
    _wait_until_solving(proc)
    code, err = _interrupt(proc)
    assert code == 130, err
    assert "idxcheck: interrupted" in err
    assert "Traceback" not in err


@needs_proc
def test_ctrl_c_ends_a_scan_with_workers(tmp_path: Path) -> None:
    """Each worker is solving when the group gets SIGINT: the scan ends, quietly, and leaves
    no process behind."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for name, seed in (("one.py", 1), ("two.py", 5)):
        (tree / name).write_text(BACKEND.format(condition=hard_condition(seed)), encoding="utf-8")
    proc = _start_scan(tree, "-j", "2")
    _wait_until_solving(proc, pids=2)
    code, err = _interrupt(proc)
    assert code == 130, err
    assert "idxcheck: interrupted" in err
    assert "Traceback" not in err
    deadline = time.monotonic() + 10
    while _group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _group(proc.pid), "a worker outlived the scan"
