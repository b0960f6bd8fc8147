from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from idxcheck import cli
from idxcheck.cli import main


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_clean_scan_exits_zero() -> None:
    code, out = run("scan", "fixtures/correct")
    assert code == 0, out
    assert out.splitlines()[-1].startswith("No findings")  # after the notes, if any


def test_findings_exit_one_with_counterexample() -> None:
    code, out = run("scan", "fixtures/bugs/eagle_draft_extend_v2.py")
    assert code == 1
    assert "fixtures/bugs/eagle_draft_extend_v2.py:29:19: IDX001 qo_indptr stride" in out
    assert "counterexample: bs=2 topk=2 num_steps=1 num_draft_tokens=3 (needs topk > 1)" in out


def test_usage_errors_exit_two() -> None:
    assert run("scan", "--changed-only")[0] == 2  # no path: the current folder, but not here
    assert run("scan", "--select", "IDX999", "fixtures")[0] == 2
    assert run("scan", "--domain", "topk ==", "fixtures/correct")[0] == 2
    assert run("rule", "IDX999")[0] == 2


def test_missing_path_is_a_per_file_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    code, out = run("scan", str(tmp_path / "missing.py"), "fixtures/correct")
    assert code == 1
    assert "missing.py: error: no such file or directory" in out


def test_json_output_to_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "out.json"
    code, _ = run("scan", "--format", "json", "-o", str(target), "fixtures/bugs")
    assert code == 1
    doc = json.loads(target.read_text())
    assert doc["stats"]["refuted"] >= len(doc["findings"]) > 0


def test_rule_docs() -> None:
    code, out = run("rule", "IDX001")
    assert code == 0
    assert out.startswith("IDX001 qo-indptr-stride-mismatch (error)")
    assert "**Invariant.**" in out
    code, out = run("rule", "grid-scalar-too-small")
    assert code == 0 and out.startswith("IDX002")
    code, out = run("rules")
    assert code == 0 and "IDX001" in out and "IDX002" in out


def test_python_dash_m() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "idxcheck", "scan", "fixtures/bugs/eagle_partial_fix.py"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "IDX002" in proc.stdout


def test_command_exit_keeps_the_output_and_the_cache(tmp_path: Path) -> None:
    """The command skips the interpreter's teardown: what it printed arrives whole through a
    pipe, with its exit code, and what it stored in the cache answers the next run."""
    env = dict(os.environ, IDXCHECK_CACHE_DIR=str(tmp_path / "cache"))
    target = "fixtures/bugs/eagle_draft_extend_v2.py"
    first = subprocess.run(
        [sys.executable, "-m", "idxcheck", "scan", "--format", "json", target],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert first.returncode == 1, first.stderr
    report = json.loads(first.stdout)
    assert report["exit_code"] == 1 and report["findings"]
    probe = (
        "import sys\n"
        "from idxcheck.cli import main\n"
        "try:\n"
        f"    main(['scan', '--format', 'json', {target!r}])\n"
        "except SystemExit as exc:\n"
        "    print(exc.code, 'z3' in sys.modules, file=sys.stderr)\n"
    )
    second = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False
    )
    assert second.stderr.strip() == "1 False", second.stderr
    assert json.loads(second.stdout)["findings"] == report["findings"]


@pytest.mark.parametrize("loaded", [(), ("torch",)])
def test_entry_skips_teardown_unless_the_runtime_is_loaded(
    monkeypatch: pytest.MonkeyPatch, loaded: tuple[str, ...]
) -> None:
    exits: list[int] = []
    thresholds: list[tuple[int, ...]] = []
    monkeypatch.setattr(cli.os, "_exit", exits.append)
    monkeypatch.setattr("gc.set_threshold", lambda *levels: thresholds.append(levels))
    monkeypatch.setattr(sys, "argv", ["idxcheck", "rules"])
    for name in cli._NEEDS_TEARDOWN:  # other tests of this process may have loaded them
        monkeypatch.delitem(sys.modules, name, raising=False)
    for name in loaded:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    with pytest.raises(SystemExit) as stop:
        cli.entry()  # the patched `_exit` returns, so the usual exit follows it
    assert stop.value.code == 0
    assert exits == ([] if loaded else [0])
    assert thresholds == [cli.COMMAND_GC_THRESHOLD]


def test_scan_does_not_import_the_scanned_code(tmp_path) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "imported"
    source = tmp_path / "backend.py"
    source.write_text(
        f"open({str(marker)!r}, 'w').write('x')\n"
        "import torch\n"
        "class B:\n"
        "    def init_forward_metadata(self, forward_batch):\n"
        "        qo_indptr = torch.arange(0, 3)\n"
    )
    code, _ = run("scan", str(source))
    assert code == 0
    assert not marker.exists()
