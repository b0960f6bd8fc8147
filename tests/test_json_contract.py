"""The JSON report's shape is a contract other tools (and `idxcheck confirm`) read."""

from __future__ import annotations

import json

from idxcheck.app.run import scan
from idxcheck.report import json_format

FINDING_KEYS = {
    "code": str,
    "name": str,
    "severity": str,
    "path": str,
    "line": int,
    "column": int,
    "end_line": int,
    "end_column": int,
    "function": str,
    "mode": str,
    "message": str,
    "verdict": str,
    "counterexample": dict,
    "related": list,
    "fingerprint": str,
}
STATS_KEYS = {
    "files",
    "parsed",
    "sites",
    "obligations",
    "proved",
    "refuted",
    "unknown",
    "unsupported",
    "seconds",
}


def test_contract_shape() -> None:
    doc = json.loads(json_format.render(scan(["fixtures/bugs", "fixtures/correct"])))
    assert isinstance(doc["version"], str)
    assert doc["findings"]
    for finding in doc["findings"]:
        for key, kind in FINDING_KEYS.items():
            assert isinstance(finding[key], kind), key
        assert finding["verdict"] == "REFUTED"
        assert "." in finding["function"]
        assert all(isinstance(v, int) for v in finding["counterexample"].values())
        for related in finding["related"]:
            assert {"path", "line", "role"} <= related.keys()
        assert len(finding["fingerprint"]) == 16
        replay = finding["replay"]
        assert {
            "mode",
            "bs",
            "capture_bs",
            "tokens_per_req",
            "qo_stride",
            "max_len",
            "segments_per_req",
            "block_m",
            "head_dim",
        } == replay.keys()
    assert isinstance(doc["errors"], list)
    assert STATS_KEYS <= doc["stats"].keys()


def test_errors_are_listed_and_the_scan_goes_on(tmp_path) -> None:  # type: ignore[no-untyped-def]
    broken = tmp_path / "broken.py"
    broken.write_text(
        "class B:\n    def init_forward_metadata(self, fb):\n        qo_indptr = torch.arange(0,\n"
    )
    binary = tmp_path / "blob.py"
    binary.write_bytes(b"\x00\x01qo_indptr")
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# qo_indptr \xff\xfe\n")
    result = scan([str(tmp_path), "fixtures/bugs/eagle_partial_fix.py"])
    messages = {e.path.rsplit("/", 1)[-1]: e.message for e in result.errors}
    assert "syntax error" in messages["broken.py"]
    assert "binary" in messages["blob.py"]
    assert "decode" in messages["latin.py"]
    assert [f.code for f in result.findings] == ["IDX002"]
    doc = json.loads(json_format.render(result))
    assert {"path", "message"} <= doc["errors"][0].keys()


def test_fingerprints_survive_moving_lines(tmp_path) -> None:  # type: ignore[no-untyped-def]
    original = open("fixtures/bugs/eagle_draft_extend_v2.py").read()
    moved = tmp_path / "moved.py"
    moved.write_text("# a comment\n\n" + original)
    a = scan(["fixtures/bugs/eagle_draft_extend_v2.py"]).findings
    b = scan([str(moved)]).findings
    assert [f.fingerprint for f in a] == [f.fingerprint for f in b]
    assert [f.span.line + 2 for f in a] == [f.span.line for f in b]
