"""Fuzzing with a ground truth: generated backends (tests/robustness/backend_gen.py) are
scanned, and each (site, forward mode) verdict is compared with brute force over a grid of
configurations of the domain:

- a site that some configuration breaks must be REFUTED in that mode;
- a site that no configuration breaks must be PROVED (never a finding: no false positive,
  and never UNSUPPORTED or UNKNOWN: every generated shape is one idxcheck says it models);
- each finding's counterexample must lie in the domain and really break a site it names."""

from __future__ import annotations

from typing import Any

from hypothesis import given

from idxcheck.app.run import scan_source
from idxcheck.model.config import Config
from idxcheck.model.findings import Finding, ScanResult
from idxcheck.model.verdicts import Verdict

from .backend_gen import (
    GRID,
    Add,
    Backend,
    Branch,
    Cfg,
    Pick,
    Runtime,
    Site,
    Sym,
    backends,
    breaking,
    breaks_under,
    in_domain,
    reaching_modes,
    render_backend,
)
from .conftest import FUZZ

CONFIG = Config(select=frozenset({"IDX001", "IDX002"}))
SYMBOLS = {
    "speculative_num_steps": "steps",
    "speculative_eagle_topk": "topk",
    "speculative_num_draft_tokens": "ndt",
}


def _in(line: int | None, span: tuple[int, int]) -> bool:
    return line is not None and span[0] <= line <= span[1]


def _completions(cex: dict[str, int]) -> list[Cfg]:
    """Configurations of the domain that agree with a counterexample (all of them when it
    names every symbol; the grid's otherwise)."""
    given_values = {SYMBOLS[k]: v for k, v in cex.items() if k in SYMBOLS}
    if len(given_values) == 3:
        cfg = Cfg(**given_values)
        return [cfg] if in_domain(cfg) else []
    return [c for c in GRID if all(getattr(c, k) == v for k, v in given_values.items())]


def check(backend: Backend) -> list[str]:
    """Every disagreement between idxcheck and the ground truth, as sentences."""
    rendered = render_backend(backend)
    result: ScanResult = scan_source(rendered.text, "fuzz_backend.py", CONFIG)
    problems = [f"file error: {e.message}" for e in result.errors]
    problems += [p for f in result.findings if (p := _check_counterexample(f, rendered))]
    for (_, number, site), span in zip(rendered.site_list, rendered.lines, strict=True):
        here = [o for o in result.outcomes if o.code == site.code and _in(o.span.line, span)]
        modes = reaching_modes(backend, number)
        for mode in sorted(modes):
            verdicts = {o.verdict for o in here if o.mode == mode}
            # A counterexample checked concretely (above) is ground truth too: it may lie
            # beyond the grid (`min(w, 4 * ndt)` breaks only once num_steps >= 8).
            witness = breaking(site, mode) or _verified_counterexample(result, rendered, site, mode)
            if witness is not None and Verdict.REFUTED not in verdicts:
                problems.append(
                    f"line {span[0]}: {site.code} in {mode} breaks under {witness} but idxcheck "
                    f"says {sorted(v.name for v in verdicts) or 'nothing'}"
                )
            if witness is None and verdicts != {Verdict.PROVED}:
                problems.append(
                    f"line {span[0]}: {site.code} in {mode} holds on the whole grid but idxcheck "
                    f"says {sorted(v.name for v in verdicts) or 'nothing'}"
                )
        stray = {o.mode for o in here if o.verdict == Verdict.REFUTED} - modes
        if stray:
            problems.append(f"line {span[0]}: refuted in modes its branch never runs in: {stray}")
    return problems


def _names(finding: Finding, site: Site, rendered: Any) -> bool:
    lines = {finding.span.line} | {r.span.line for r in finding.related if r.span is not None}
    return any(
        s is site and any(_in(line, span) for line in lines)
        for (_, _, s), span in zip(rendered.site_list, rendered.lines, strict=True)
    )


def _verified_counterexample(
    result: ScanResult, rendered: Any, site: Site, mode: str
) -> Cfg | None:
    for finding in result.findings:
        if finding.code != site.code or finding.mode != mode or not _names(finding, site, rendered):
            continue
        for cfg in _completions(finding.counterexample):
            if breaks_under(site, mode, cfg):
                return cfg
    return None


def _check_counterexample(finding: Finding, rendered: Any) -> str | None:
    lines = {finding.span.line} | {r.span.line for r in finding.related if r.span is not None}
    candidates: list[Site] = [
        site
        for (_, _, site), span in zip(rendered.site_list, rendered.lines, strict=True)
        if site.code == finding.code and any(_in(line, span) for line in lines)
    ]
    if not candidates:
        return f"finding {finding.code} at line {finding.span.line} names no generated site"
    configs = _completions(finding.counterexample)
    if not configs:
        return f"counterexample {finding.counterexample} lies outside the domain"
    if not any(breaks_under(s, finding.mode, c) for s in candidates for c in configs):
        return (
            f"counterexample {finding.counterexample} of {finding.code} at line "
            f"{finding.span.line} in {finding.mode} breaks none of its sites"
        )
    return None


@FUZZ
@given(backends())
def test_generated_backends_match_ground_truth(backend: Backend) -> None:
    problems = check(backend)
    assert not problems, "\n".join([render_backend(backend).text, *problems])


# Hand-picked cases: each shape once, both ways, so that a regression names its shape.
TV = "mode.is_target_verify()"
DEV2 = "mode.is_draft_extend_v2()"
DE = "mode.is_draft_extend()"
BOTH = "mode.is_draft_extend(include_v2=True)"
STEPS1 = Add(Sym("steps"), 1)


def one(predicate: str, site: Site, elif_chain: bool = True) -> Backend:
    return Backend((Branch(predicate, (site,)),), elif_chain, False)


def test_ground_truth_itself() -> None:
    # steps + 1 is right in DRAFT_EXTEND and wrong in TARGET_VERIFY as soon as topk > 1.
    site = Site("arange", STEPS1, "inline", "attribute")
    assert breaking(site, "DRAFT_EXTEND") is None
    witness = breaking(site, "TARGET_VERIFY")
    assert witness is not None and witness.topk > 1
    # A runtime width is right everywhere; a grid scalar may exceed the width.
    assert breaking(Site("arange", Runtime(), "inline", "dict"), "DRAFT_EXTEND_V2") is None
    assert breaking(Site("grid", Add(Sym("ndt"), 1), "local", "metadata"), "TARGET_VERIFY") is None
    # In DRAFT_EXTEND (packed) a request carries at most min(steps + 1, ndt): a grid of ndt
    # covers it, a grid of steps does not.
    assert breaking(Site("grid", Sym("ndt"), "local", "metadata"), "DRAFT_EXTEND") is None
    assert breaking(Site("grid", Sym("steps"), "local", "metadata"), "DRAFT_EXTEND") is not None
    assert breaking(Site("grid", Sym("ndt"), "local", "metadata"), "DRAFT_EXTEND_V2") is None
    assert breaking(Site("grid", STEPS1, "local", "metadata"), "DRAFT_EXTEND_V2") is not None


def test_each_shape_both_ways() -> None:
    from .backend_gen import CONFIG_CONDS, OPAQUE_CONDS, STATEMENT_PICKS

    topk1 = CONFIG_CONDS[0]  # self.topk == 1
    cases = [
        one(TV, Site(kind, width, binding, sink))
        for kind in ("arange", "arange_pos", "cumsum", "grid")
        for binding in ("inline", "local", "helper", "init_attr")
        for sink in ("attribute", "metadata", "dict")
        for width in (STEPS1, Sym("ndt"))
    ]
    cases += [
        one(DEV2, Site("arange", Pick(topk1, STEPS1, Sym("ndt")), "if_statement", "metadata")),
        one(DEV2, Site("arange", Pick(topk1, Sym("ndt"), STEPS1), "if_statement", "metadata")),
        one(DEV2, Site("grid", Pick(OPAQUE_CONDS[0], Sym("ndt"), STEPS1), "local", "dict")),
        *(
            one(TV, Site("arange", Pick(STATEMENT_PICKS[b], then, other), b, "attribute"))
            for b in STATEMENT_PICKS
            for then, other in ((Sym("ndt"), STEPS1), (STEPS1, Sym("ndt")), (Sym("ndt"), Runtime()))
        ),
        one(BOTH, Site("arange", STEPS1, "inline", "attribute")),
        one(DE, Site("cumsum", STEPS1, "local", "attribute")),
        Backend(
            (
                Branch(BOTH, (Site("arange", Sym("ndt"), "inline", "dict"),)),
                Branch(DEV2, (Site("arange", STEPS1, "inline", "dict"),)),
            ),
            True,
            True,
        ),
    ]
    problems = [p for case in cases for p in check(case)]
    assert not problems, "\n".join(problems)
