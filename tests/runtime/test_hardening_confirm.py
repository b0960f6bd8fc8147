"""`idxcheck confirm` bounds what it replays and reads any report without an internal error.

A report is input: its numbers size the buffers and the grid of a replay (a head dim of 10**7
took all of a machine's memory; a max_len of 2**31 a grid the interpreter never finished), and
its text may be anything. Each replay is reckoned before anything is allocated and refused
above the limits, with the reason on the finding; a file that is no report is a usage error
naming it. The commands run in child processes whose address space is capped, so that a replay
that does allocate fails there instead of taking the machine."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from idxcheck.runtime_kernels.confirm import case_from_finding
from idxcheck.runtime_kernels.replay import (
    MAX_GRID_PROGRAMS,
    MAX_REPLAY_BYTES,
    ReplayCase,
    ReplayTooLarge,
    check_replay_size,
    replay_bytes,
)

ROOT = Path(__file__).resolve().parents[2]
# What a child may map: torch, triton and a small replay fit in a fraction of it.
ADDRESS_SPACE = 6 << 30
BOUND_S = 120


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            [sys.executable, "-m", "idxcheck", *args],
            cwd=ROOT,
            input=stdin,
            capture_output=True,
            timeout=BOUND_S,
            preexec_fn=_capped,
            env={**os.environ, "TRITON_INTERPRET": "1"},
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`idxcheck {' '.join(args)}` ran past {BOUND_S} s")


def _finding(**replay: Any) -> dict[str, Any]:
    block: dict[str, Any] = {
        "mode": "DRAFT_EXTEND_V2",
        "bs": 2,
        "capture_bs": 2,
        "tokens_per_req": 4,
        "qo_stride": 3,
        "max_len": 3,
        "segments_per_req": 1,
        "block_m": None,
        "head_dim": 32,
    }
    block.update(replay)
    return {"code": "IDX001", "verdict": "REFUTED", "mode": "DRAFT_EXTEND_V2", "replay": block}


def _report(tmp_path: Path, *findings: dict[str, Any]) -> Path:
    path = tmp_path / "findings.json"
    doc = {"version": "0.1.0", "findings": list(findings), "errors": [], "stats": {}}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _confirmations(path: Path) -> list[dict[str, Any]]:
    return [f["confirmation"] for f in json.loads(path.read_text())["findings"]]


@pytest.mark.parametrize(
    ("replay", "reason"),
    [
        ({"head_dim": 10**7}, "would allocate about"),
        ({"max_len": 2**31}, "programs"),
        ({"qo_stride": 2**40}, "qo_indptr would reach"),
        ({"bs": 3000, "capture_bs": 3000}, "would allocate about"),
        ({"bs": 10**6, "capture_bs": 10**6}, "kv_indptr would reach"),
        ({"tokens_per_req": 10**4000}, "past int32"),
    ],
)
def test_a_replay_too_large_is_skipped_before_it_allocates(
    tmp_path: Path, replay: dict[str, Any], reason: str
) -> None:
    path = _report(tmp_path, _finding(**replay), _finding())
    done = _run("confirm", str(path), "--device", "cpu", "--no-probe")
    assert done.returncode == 1, done.stderr.decode()  # the small finding is confirmed
    refused, small = _confirmations(path)
    assert refused["status"] == "skipped", refused
    assert refused["reason"].startswith("cannot replay: ") and reason in refused["reason"]
    assert len(refused["reason"]) < 400  # a 4,000-digit number is not printed
    assert small["status"] == "confirmed"


def test_the_replay_itself_refuses_a_case_too_large() -> None:
    """`replay()` reckons its case too (a caller of the API, an emitted test), before any
    buffer exists: in a capped child, where allocating it would fail otherwise."""
    code = (
        "from idxcheck.runtime_kernels.replay import ReplayCase, replay\n"
        "try:\n"
        "    replay(ReplayCase(bs=2, tokens_per_req=4, qo_stride=3, max_len=3, head_dim=10**7),"
        " device='cpu')\n"
        "except RuntimeError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        preexec_fn=_capped,
        env={**os.environ, "TRITON_INTERPRET": "1"},
    )
    assert "would allocate about" in done.stdout, done.stdout + done.stderr


def test_the_reckoning_bounds_what_a_replay_allocates() -> None:
    """The limits refuse the report's cases and let a real finding's (SGLang 0.5.23's largest
    replay: one request of 33 tokens at head dim 576) and larger ones through; the reckoning
    grows with every size a replay allocates by."""
    real = ReplayCase(bs=1, tokens_per_req=33, qo_stride=3, max_len=33, head_dim=576, block_m=32)
    check_replay_size(real)
    check_replay_size(ReplayCase(bs=64, tokens_per_req=8, qo_stride=8, max_len=8, head_dim=576))
    base = ReplayCase(bs=2, tokens_per_req=4, qo_stride=3, max_len=3, head_dim=32)
    for bigger in (
        ReplayCase(bs=4, tokens_per_req=4, qo_stride=3, max_len=3, head_dim=32),
        ReplayCase(bs=2, capture_bs=8, tokens_per_req=4, qo_stride=3, max_len=3, head_dim=32),
        ReplayCase(bs=2, tokens_per_req=40, qo_stride=3, max_len=3, head_dim=32),
        ReplayCase(bs=2, tokens_per_req=4, qo_stride=300, max_len=3, head_dim=32),
        ReplayCase(bs=2, tokens_per_req=4, qo_stride=3, max_len=3, head_dim=320),
        ReplayCase(bs=2, tokens_per_req=4, qo_stride=3, max_len=3, head_dim=32, v_head_dim=64),
    ):
        assert replay_bytes(bigger) > replay_bytes(base), bigger
    with pytest.raises(ReplayTooLarge, match="allocate"):
        check_replay_size(
            ReplayCase(bs=2, tokens_per_req=4, qo_stride=3, max_len=3, head_dim=10**7)
        )
    assert (
        replay_bytes(ReplayCase(bs=2, tokens_per_req=4, qo_stride=3, max_len=3, head_dim=10**7))
        > MAX_REPLAY_BYTES
    )
    grid = ReplayCase(
        bs=2, tokens_per_req=4, qo_stride=3, max_len=16 * MAX_GRID_PROGRAMS, head_dim=32
    )
    with pytest.raises(ReplayTooLarge, match="programs"):
        check_replay_size(grid)
    with pytest.raises(ValueError, match="block_m"):
        ReplayCase(bs=2, tokens_per_req=4, qo_stride=3, max_len=3, block_m=0)


@pytest.mark.parametrize(
    ("replay", "reason"),
    [
        ({"head_dim": "x" * 10_000}, "replay.head_dim must be an integer"),
        ({"bs": [1] * 10_000}, "replay.bs must be an integer, got a list"),
        ({"mode": {"a": 1}}, "replay.mode must be a forward mode's name"),
        ({"mode": "M" * 100_000}, "replay.mode must be a forward mode's name"),
        ({"block_m": 0}, "block_m must be >= 1"),
        ({"tokens_per_req": 0}, "must be >= 1"),
    ],
)
def test_a_replay_block_of_the_wrong_shape_is_skipped_with_a_short_reason(
    replay: dict[str, Any], reason: str
) -> None:
    with pytest.raises(ValueError, match=reason) as raised:
        case_from_finding(_finding(**replay))
    assert len(str(raised.value)) < 200


def _deep(depth: int) -> bytes:
    return b'{"findings": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"not json", "is not JSON"),
        (b'{"findings": [], "note": "caf\xe9"}', "is not UTF-8"),
        (b'\xff\xfe{"findings": []}', "is not UTF-8"),
        (_deep(100_000), "nested too deeply"),
        (_deep(500), "levels deep"),
        (b'{"findings": [], "stats": {"n": ' + b"7" * 5000 + b"}}", "is not JSON idxcheck reads"),
        (b"[]", "not a JSON object"),
        (b'{"findings": {"a": 1}}', "no findings list"),
        (b'{"findings": [1, "two"]}', "findings[0] is not an object"),
    ],
)
def test_a_malformed_report_is_a_usage_error_naming_the_file(
    tmp_path: Path, content: bytes, why: str
) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(content)
    done = _run("confirm", str(path), "--device", "cpu")
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, err
    assert "internal error" not in err and "Traceback" not in err
    assert str(path) in err and why in err, err
    assert len(err) < 2000
    assert path.read_bytes() == content  # left as it was
    piped = _run("confirm", "-", "--device", "cpu", stdin=content)
    assert piped.returncode == 2 and why in piped.stderr.decode("utf-8", "replace")
    assert "standard input" in piped.stderr.decode("utf-8", "replace")


def test_kernel_help_says_the_module_is_imported_and_run() -> None:
    for command in ("confirm", "scan"):
        done = _run(command, "--help")
        text = " ".join(done.stdout.decode().split())
        assert "MODULE is imported and FUNCTION run" in text, text
