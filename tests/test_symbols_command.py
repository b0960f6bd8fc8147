"""`idxcheck symbols`: a profile's configuration symbols, what sets each and what bounds it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from idxcheck.cli import main
from idxcheck.profiles import sglang, vllm


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def symbols_json(*args: str) -> dict:  # type: ignore[type-arg]
    code, out, err = run("symbols", "--format", "json", *args)
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_text_lists_the_symbols_with_their_flags_and_bounds() -> None:
    code, out, err = run("symbols", "--profile", "sglang")
    assert code == 0, err
    blocks = {b.splitlines()[0]: b for b in out.split("\n\n")[1:] if b.strip()}
    topk = blocks["speculative_eagle_topk (topk)"]
    assert "set by flag: --speculative-eagle-topk N" in topk
    assert "bound: speculative_eagle_topk >= 1" in topk
    assert "bound: speculative_eagle_topk <= 16" in topk
    assert "--speculative-num-steps N" in blocks["speculative_num_steps (num_steps)"]
    front = blocks["num_front_tokens"]
    assert "set by environment: SGLANG_ENABLE_MTP_BOUNDARY_KV_FIX=1" in front
    assert "set by flag: --enable-multi-layer-eagle" in front
    assert "set by model: a hybrid linear-attention model" in front
    assert len(blocks) == len(sglang.DISPLAY)


@pytest.mark.parametrize("module", [sglang, vllm])
def test_json_holds_every_symbol_and_each_domain_constraint_that_names_it(module: object) -> None:
    doc = symbols_json("--profile", module.NAME)  # type: ignore[attr-defined]
    assert doc["profile"] == module.NAME  # type: ignore[attr-defined]
    shown = {s["name"]: s for s in doc["symbols"]}
    display: dict[str, str] = module.DISPLAY  # type: ignore[attr-defined]
    assert list(shown) == list(display)
    settings = getattr(module, "LAUNCH_SETTINGS", {})
    for name, symbol in shown.items():
        assert symbol["display"] == display[name]
        spelled = [
            (f"{s['kind']}: " if s["kind"] in ("model", "runtime") else "") + s["text"]
            for s in symbol["set_by"]
        ]
        assert spelled == list(settings.get(name, ()))
        named = [
            text
            for text, _why in module.DOMAIN  # type: ignore[attr-defined]
            if re.search(rf"\b({re.escape(name)}|{re.escape(display[name])})\b", text)
        ]
        assert [b["constraint"] for b in symbol["bounds"]] == named, name
    topk = shown.get("speculative_eagle_topk")
    if module is sglang:
        assert topk is not None
        assert {"kind": "flag", "text": "--speculative-eagle-topk {}"} in topk["set_by"]


def test_the_profile_is_chosen_as_scan_chooses_it(tmp_path: Path) -> None:
    package = tmp_path / "vllm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    assert symbols_json(str(package), "--isolated")["profile"] == "vllm"
    assert symbols_json(str(tmp_path), "--isolated")["profile"] == "sglang"
    (tmp_path / "pyproject.toml").write_text(
        '[tool.idxcheck]\nprofile = "sglang"\ndomain = ["topk <= 4"]\n'
    )
    doc = symbols_json(str(package))
    assert doc["profile"] == "sglang"  # the file's profile wins over the package's
    topk = next(s for s in doc["symbols"] if s["name"] == "speculative_eagle_topk")
    assert {"constraint": "topk <= 4", "why": "[tool.idxcheck] domain"} in topk["bounds"]
    assert symbols_json(str(package), "--profile", "vllm", "--isolated")["profile"] == "vllm"
    # As for `scan`: the file's domain is in SGLang's symbols, which vLLM's profile lacks.
    code, _out, err = run("symbols", str(package), "--profile", "vllm")
    assert code == 2
    assert "unknown symbol topk" in err


def test_an_unknown_profile_is_exit_2() -> None:
    code, out, err = run("symbols", "--profile", "nosuch")
    assert code == 2
    assert "unknown profile 'nosuch'" in err
    assert out == ""
