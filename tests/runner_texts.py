"""Graph runners written in SGLang's style, for tests that build a small tree around a backend.
`ENUM` is the fixtures' `ForwardMode`, which the runners import."""

from __future__ import annotations

from pathlib import Path

ENUM = (Path(__file__).resolve().parent.parent / "fixtures/runtime/forward_mode.py").read_text()

# Captures in DRAFT_EXTEND for a v1 worker and in DRAFT_EXTEND_V2 for a v2 one, with
# `num_draft_tokens` per request in both (SGLang 0.5.13's EAGLE draft-extend runner).
DRAFT_EXTEND_RUNNER = """from forward_mode import ForwardMode


class DraftExtendGraphRunner:
    def __init__(self, eagle_worker, model_runner):
        if eagle_worker.v2:
            self.capture_forward_mode = ForwardMode.DRAFT_EXTEND_V2
        else:
            self.capture_forward_mode = ForwardMode.DRAFT_EXTEND
        self.num_tokens_per_bs = model_runner.server_args.speculative_num_draft_tokens
"""
