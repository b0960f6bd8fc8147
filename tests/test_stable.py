"""`stable_digest`: the same in every process whatever PYTHONHASHSEED, different when the data
differs, and an error (never a guess) for an object it cannot render."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from idxcheck.model.spans import Loc, Span
from idxcheck.model.stable import stable_digest
from idxcheck.sym.terms import Atom, Const, ModeIs, Sym, binop, conj

from .realtree import sglang_tree

# The tree facts of the fixtures (mode model, runner widths, constraints), digested.
FACTS_DIGEST = """
from idxcheck.check.pipeline import cached_tree_facts
from idxcheck.facts.runners import WidthDefinitions
from idxcheck.incremental.cache import Cache
from idxcheck.incremental.store import DiskStore
from idxcheck.parallel.executor import WorkerExecutor
from idxcheck.source.index import DataclassIndex
from idxcheck.source.tree import load_tree
from idxcheck.model.config import Config
from idxcheck.profiles.schema import load_profile
config = Config()
profile = load_profile(config.profile)
tree = load_tree(["fixtures", %r], config, profile)
store = DiskStore(Cache(__import__("pathlib").Path(%r)))
key = store.tree_keys(tree, config, profile)[0]
dataclasses = DataclassIndex(tree.files)
widths = WidthDefinitions(tree.files, profile.tree_width_functions)
bundle, value = cached_tree_facts(
    tree, config, profile, store, WorkerExecutor(1), dataclasses, widths, key
)
modes, runtime, constraints, errors = bundle
assert modes.predicates and runtime.widths and constraints.registry, "a vacuous bundle"
print(value)
"""

# A registry whose one name maps to a set of classes (the set's order follows the hash seed).
REGISTRY = "".join(
    f"""
@register_attention_backend("many")
def create_{n}(runner):
    if runner.a:
        return Alpha{n}Backend(runner)
    return Beta{n}Backend(runner)
"""
    for n in range(4)
)


def test_digest_of_the_tree_facts_is_the_same_under_any_hash_seed(tmp_path: Path) -> None:
    registry = tmp_path / "registry.py"
    registry.write_text(REGISTRY)
    digests = set()
    for seed in ("1", "2", "3"):
        cache = tmp_path / seed
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", FACTS_DIGEST % (str(registry), str(cache))],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(done.stdout.strip())
    assert len(digests) == 1 and len(next(iter(digests))) == 64


def test_sets_are_digested_in_a_fixed_order_and_dicts_in_theirs() -> None:
    assert stable_digest({"b", "a", "c"}) == stable_digest({"c", "b", "a"})
    assert stable_digest(frozenset({"a"})) != stable_digest({"a"})
    assert stable_digest({"a": 1, "b": 2}) != stable_digest({"b": 2, "a": 1})
    assert stable_digest([1, 2]) != stable_digest((1, 2)) != stable_digest([2, 1])
    assert stable_digest(1) != stable_digest("1") != stable_digest(True)


def test_terms_formulas_and_places_count_with_every_field() -> None:
    n = Sym("n")
    term = binop("+", n, Const(1))
    assert stable_digest(term) == stable_digest(binop("+", Sym("n"), Const(1)))
    assert stable_digest(term) != stable_digest(binop("+", n, Const(2)))
    modes = ModeIs(frozenset({"DECODE", "EXTEND"}))
    assert stable_digest(conj(modes, Atom("flag", "flag"))) != stable_digest(
        conj(modes, Atom("other", "other"))
    )
    here = Span("a.py", 3, 4, 3, 9)
    assert stable_digest(Loc.fixed(here, "x + 1")) == stable_digest(Loc.fixed(here, "x + 1"))
    assert stable_digest(Loc.fixed(here, "x + 1")) != stable_digest(
        Loc.fixed(Span("a.py", 4, 4, 4, 9), "x + 1")
    )


def test_an_object_without_a_stable_rendering_is_an_error() -> None:
    @dataclass
    class Holder:
        value: object

    with pytest.raises(TypeError, match="no stable digest for a function"):
        stable_digest(Holder(lambda: 1))
    with pytest.raises(TypeError, match="object"):
        stable_digest([object()])


@pytest.mark.network
def test_the_tree_facts_of_a_release_have_a_stable_digest(tmp_path: Path) -> None:
    """Every object in a real release's tree facts renders (a TypeError here would key the
    cached analyses by text again, which is correct but loses the point)."""
    tree = str(sglang_tree("0.5.23"))
    script = FACTS_DIGEST.replace('["fixtures", %r]', "[%r]")
    digests = set()
    for seed in ("0", "1"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script % (tree, str(tmp_path / seed))],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(done.stdout.strip())
    assert len(digests) == 1 and len(next(iter(digests))) == 64  # not the text fallback


def test_facts_the_digest_cannot_render_key_the_analyses_by_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the facts held an object without a stable rendering, a cached scan would still give
    the uncached report: the analyses are keyed by the facts' text key instead."""
    from idxcheck.app import run
    from idxcheck.check import pipeline
    from idxcheck.model.config import Config
    from idxcheck.report.json_format import to_dict

    def refuse(value: object) -> str:
        raise TypeError("no stable digest for a test object")

    def report(config: Config) -> dict[str, object]:
        doc = to_dict(run.scan(["fixtures/bugs", "fixtures/runtime"], config))
        doc.pop("stats", None)
        return doc

    monkeypatch.setattr(pipeline, "stable_digest", refuse)
    cached = Config(cache_dir=str(tmp_path / "cache"))
    first = report(cached)
    assert first["findings"]
    assert report(cached) == first == report(Config())
