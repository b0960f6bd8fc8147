"""Who reads a value (`idxcheck.facts.readers`): a wrong value nothing reads is a note that
fails nothing, a read one is a finding that names its reader, and every way an object can
leave the class keeps it a finding."""

from __future__ import annotations

from typing import Any

import pytest

from idxcheck.app.command import exit_code
from idxcheck.app.run import scan_source
from idxcheck.model.config import Config
from idxcheck.model.findings import ScanResult
from idxcheck.report.sarif import to_dict as to_sarif

HEAD = """
from dataclasses import dataclass

@dataclass
class Plan:
    lanes: object = None
    max_seqlen_q: int = 0


class Planner:
    def __init__(self, model_runner):
        self.depth = model_runner.server_args.speculative_num_steps

    def init_forward_metadata(self, forward_batch):
        plan = Plan(lanes=forward_batch.lanes)
        if forward_batch.forward_mode.is_draft_extend_v2():
            plan.max_seqlen_q = self.depth + 1
"""


def grid_finding(body: str) -> Any:
    result = scan_source(HEAD + body, "planner.py", Config(raise_on_unsupported=True))
    assert result.errors == []
    (finding,) = [f for f in result.findings if f.code == "IDX002"]
    return finding


DEAD = """
        self.current = plan

    def forward_extend(self, q, k, v, layer, forward_batch):
        return paged_decode(q, self.current.lanes)
"""


def test_a_value_nothing_reads_is_a_note_that_fails_nothing() -> None:
    result = scan_source(HEAD + DEAD, "planner.py", Config(raise_on_unsupported=True))
    (finding,) = result.findings
    assert finding.severity == "note"
    assert finding.consumer is not None and finding.consumer.status == "unread"
    assert "nothing reads `plan.max_seqlen_q` in DRAFT_EXTEND_V2" in finding.message
    assert exit_code(result, Config()) == 0
    (run,) = to_sarif(result)["runs"]
    assert [r["level"] for r in run["results"]] == ["note"]


def test_a_value_a_kernel_reads_names_the_reader() -> None:
    finding = grid_finding(
        """
        self.current = plan

    def forward_extend(self, q, k, v, layer, forward_batch):
        plan = self.current
        width = plan.max_seqlen_q
        return ragged_attention(q, k, v, plan.lanes, max_seqlen_q=width)
"""
    )
    assert finding.severity == "error"
    assert finding.consumer.status == "call"
    assert finding.consumer.callee == "ragged_attention"
    assert finding.consumer.text.startswith("read by `ragged_attention(max_seqlen_q=...)` at ")
    assert any(r.role == "reader" for r in finding.related)


@pytest.mark.parametrize(
    "body",
    [
        # handed to code outside the class
        "        publish(plan)\n",
        # stored on an object from outside
        "        forward_batch.plan = plan\n",
        # returned by a method the runtime calls
        "        return plan\n",
        # read by a computed name
        "        self.current = plan\n\n    def peek(self, name):\n        return getattr(self.current, name)\n",
        # the backend's attributes read through `__dict__`
        "        self.current = plan\n\n    def dump(self):\n        return launch(self.__dict__)\n",
        # the backend itself handed outside, with what it holds
        "        self.current = plan\n        register_backend(self)\n",
        # read inside a lambda
        "        self.current = plan\n        self.later = lambda: self.current.max_seqlen_q\n",
        # read by a helper of the class through a parameter
        "        self._use(plan)\n\n    def _use(self, p):\n        launch(p.max_seqlen_q)\n",
        # read out of a per-batch-size dict
        "        self.per_bs = {}\n        self.per_bs[4] = plan\n\n"
        "    def forward_extend(self, q, forward_batch):\n"
        "        launch(self.per_bs[forward_batch.batch_size].max_seqlen_q)\n",
        # one of the plan's own methods is called
        "        plan.describe()\n",
        # unpacked into a call
        "        self.current = plan\n        launch(*[self.current])\n",
    ],
    ids=[
        "call",
        "foreign-attr",
        "public-return",
        "getattr",
        "self-dict",
        "self-escapes",
        "lambda",
        "helper-param",
        "dict-per-bs",
        "own-method",
        "starred",
    ],
)
def test_every_way_out_of_the_class_keeps_a_finding(body: str) -> None:
    assert grid_finding(body).severity == "error"


def test_a_re_assignment_before_handing_on_is_followed() -> None:
    """The object handed out is the one just built, not the plan that holds the wrong width."""
    finding = grid_finding(
        """
        self.current = plan
        self.current = Plan()
        publish(self.current)

    def forward_extend(self, q, k, v, layer, forward_batch):
        return paged_decode(q, self.current.lanes)
"""
    )
    assert finding.severity == "note"


def test_a_base_class_outside_the_tree_may_read_it() -> None:
    text = (HEAD + DEAD).replace("class Planner:", "class Planner(ExternalBackend):")
    result = scan_source(text, "planner.py", Config(raise_on_unsupported=True))
    (finding,) = result.findings
    assert finding.severity == "error"
    assert "ExternalBackend" in finding.consumer.text


def test_another_class_of_the_file_reading_the_holder_keeps_it() -> None:
    extra = """

class Inspector:
    def look(self, backend):
        return backend.current.max_seqlen_q
"""
    result = scan_source(HEAD + DEAD + extra, "planner.py", Config(raise_on_unsupported=True))
    (finding,) = [f for f in result.findings if f.code == "IDX002"]
    assert finding.severity == "error"
    assert "Inspector" in finding.consumer.text


def test_notes_and_findings_together_fail_the_scan() -> None:
    note = scan_source(HEAD + DEAD, "planner.py")
    assert exit_code(note, Config()) == 0
    both = ScanResult(findings=[*note.findings, _as_error(note.findings[0])])
    assert exit_code(both, Config()) == 1


def _as_error(finding: Any) -> Any:
    from dataclasses import replace

    from idxcheck.model.kinds import Severity

    return replace(finding, severity=Severity.ERROR)


def test_a_read_in_another_mode_does_not_count() -> None:
    """Only a read on a path of the write's mode reads it: a decode-only read leaves the
    draft-extend value unread there."""
    result = scan_source(
        HEAD
        + """
        self.current = plan

    def forward_extend(self, q, k, v, layer, forward_batch):
        if forward_batch.forward_mode.is_decode_or_idle():
            return launch(q, self.current.max_seqlen_q)
        return paged_decode(q, self.current.lanes)
""",
        "planner.py",
        Config(raise_on_unsupported=True),
    )
    (finding,) = result.findings
    assert finding.severity == "note"
    assert "in DRAFT_EXTEND_V2" in finding.consumer.text


def test_a_read_in_the_same_mode_counts() -> None:
    finding = grid_finding(
        """
        self.current = plan

    def forward_extend(self, q, k, v, layer, forward_batch):
        mode = forward_batch.forward_mode
        if not mode.is_draft_extend_v2():
            return paged_decode(q, self.current.lanes)
        return launch(q, self.current.max_seqlen_q)
"""
    )
    assert finding.severity == "error"
    assert finding.consumer.callee == "launch"


BASE_READS = """
from dataclasses import dataclass

@dataclass
class Plan:
    lanes: object = None
    max_seqlen_q: int = 0


class BasePlanner:
    def forward_extend(self, q, k, v, layer, forward_batch):
        return launch(q, self.current.max_seqlen_q)


class Planner(BasePlanner):
    def __init__(self, model_runner):
        self.depth = model_runner.server_args.speculative_num_steps

    def init_forward_metadata(self, forward_batch):
        plan = Plan(lanes=forward_batch.lanes)
        if forward_batch.forward_mode.is_draft_extend_v2():
            plan.max_seqlen_q = self.depth + 1
        self.current = plan

    def forward_extend(self, q, k, v, layer, forward_batch):
        if forward_batch.forward_mode.is_draft_extend_v2():
            return super().forward_extend(q, k, v, layer, forward_batch)
        return paged_decode(q, self.current.lanes)
"""


def test_an_overridden_base_method_reached_by_super_reads_it() -> None:
    result = scan_source(BASE_READS, "planner.py", Config(raise_on_unsupported=True))
    findings = [f for f in result.findings if f.code == "IDX002"]
    assert findings and all(f.severity == "error" for f in findings)
    # Read by the base's body, not merely given up on as code outside the tree.
    assert all(f.consumer.status == "call" and f.consumer.callee == "launch" for f in findings)


def test_an_overridden_base_method_super_does_not_reach_in_the_mode() -> None:
    text = BASE_READS.replace(
        "if forward_batch.forward_mode.is_draft_extend_v2():\n            return super()",
        "if forward_batch.forward_mode.is_decode_or_idle():\n            return super()",
    )
    assert text != BASE_READS
    result = scan_source(text, "planner.py", Config(raise_on_unsupported=True))
    (finding,) = [f for f in result.findings if f.code == "IDX002"]
    assert finding.severity == "note"


def test_a_helper_before_init_sees_what_init_assigns() -> None:
    """Methods are analysed in their order in the class: a helper that reads a per-batch-size
    dict before `__init__`'s text assigns it must not take the dict for one from outside."""
    result = scan_source(
        """
from dataclasses import dataclass

@dataclass
class Plan:
    lanes: object = None
    max_seqlen_q: int = 0


class Planner:
    def refill_graph(self, bs, forward_mode):
        plan = self.per_bs[bs]
        self._write(plan, forward_mode)

    def _write(self, plan, forward_mode):
        if forward_mode.is_draft_extend_v2():
            plan.max_seqlen_q = self.depth + 1

    def __init__(self, model_runner):
        self.depth = model_runner.server_args.speculative_num_steps
        self.per_bs = {}

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, seq_lens, forward_mode, spec_info):
        self.per_bs[bs] = Plan()
        self.refill_graph(bs, forward_mode)

    def forward_extend(self, q, k, v, layer, forward_batch):
        return paged_decode(q, self.per_bs[forward_batch.batch_size].lanes)
""",
        "planner.py",
        Config(raise_on_unsupported=True),
    )
    (finding,) = [f for f in result.findings if f.code == "IDX002"]
    assert finding.severity == "note"


def test_a_note_is_no_failure_in_junit_nor_in_the_text_summary() -> None:
    from idxcheck.report.junit import render as junit
    from idxcheck.report.text import render as text

    result = scan_source(HEAD + DEAD, "planner.py")
    xml = junit(result)
    assert 'failures="0"' in xml and 'skipped="1"' in xml
    summary = text(result).splitlines()[-1]
    assert summary.startswith("No findings") and "1 note" in summary


def test_confirm_skips_a_value_nothing_reads_and_says_why() -> None:
    from idxcheck.report.json_format import to_dict
    from idxcheck.runtime_kernels.confirm import confirm_findings

    doc = to_dict(scan_source(HEAD + DEAD, "planner.py"))
    (finding,) = confirm_findings(doc)["findings"]
    assert finding["consumer"]["status"] == "unread"
    assert finding["confirmation"]["status"] == "skipped"
    assert "nothing reads the value, so no kernel consumes it" in finding["confirmation"]["reason"]


def test_kernel_aware_severity_follows_the_consumer(tmp_path: Any) -> None:
    """A grid scalar under a name the profile's kernel table does not list (`max_seqlen_q`)
    that the backend hands to the tree's launcher is judged by that launcher's block sizes."""
    from pathlib import Path

    from idxcheck.app.run import scan

    backend = tmp_path / "rows_backend.py"
    backend.write_text(
        HEAD
        + """
        self.current = plan

    def forward_extend(self, q, k, v, layer, forward_batch):
        plan = self.current
        return extend_attention_fwd(q, k, v, q, plan.lanes, None, None, plan.max_seqlen_q)
"""
    )
    launcher = Path("fixtures/kernels/extend_launcher.py").resolve()
    config = Config(domain=("head_dim == 128", "sm == 90"))
    (finding,) = [
        f for f in scan([str(backend), str(launcher)], config).findings if f.code == "IDX002"
    ]
    assert finding.consumer.callee == "extend_attention_fwd"
    assert any(r.role == "kernel" for r in finding.related)
    assert finding.severity == "warning" and "latent" in finding.message


def test_a_static_helper_reads_its_first_argument() -> None:
    finding = grid_finding(
        """
        self.current = plan

    @staticmethod
    def _rows(p, unused):
        return launch(p.max_seqlen_q)

    def forward_extend(self, q, k, v, layer, forward_batch):
        return self._rows(self.current, 2)
"""
    )
    assert finding.severity == "error"
