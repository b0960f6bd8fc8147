"""Where a cold scan's time goes, measured in one process.

    python -m bench.cold_profile [--project sglang|vllm] [--version 0.5.23] [--top 10]

Runs `idxcheck scan --no-cache -j 1 TREE` in this process with timers around the stages of the
analysis, and prints:

- libcst's parses: how many, how many characters, their time, and CPython's parser (`ast.parse`)
  on the very same texts afterwards, for the ratio between the two parsers;
- the analysis of classes and functions (interpretation), without the parses made inside it,
  and how much of it went to classes that gave no site and no buffer slice;
- the runs of interpreters made with the class's per-forward state (the entry points, a class's
  public methods and the helpers no method calls, and the reader and resolver passes): those
  that bound a site, sliced a buffer or reported an error, against those that did none of it;
- every run of `ClassInterpreter.run` by the pass of `analyse_class` it belongs to (runner,
  collector, reader, resolver), of a module function analysed on its own, or of the tree facts;
- checking the facts (obligations, the solver), and the solver's part of it;
- the rest: start-up, discovery, the text prefilter, the tree facts, the report;
- the classes and functions whose analysis took longest (`--top`).

One process (`-j 1`), so that every stage is timed where it runs; a two-job scan spreads the
same work over two processes. The timers wrap internal functions, so that a renamed function
fails here loudly rather than being left out of the sums.
"""

from __future__ import annotations

import argparse
import ast
import gc
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.sglang_tree import sglang_tree
from bench.vllm_tree import vllm_tree

TREES = {"sglang": (sglang_tree, "0.5.23", "SGLang"), "vllm": (vllm_tree, "0.33.0", "vLLM")}


class Timer:
    """Seconds spent inside the wrapped calls, counted once where calls nest."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._depth = 0

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._depth += 1
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.seconds += time.perf_counter() - start
                    self.calls += 1

        return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", choices=sorted(TREES), default="sglang")
    parser.add_argument("--version", help="the release (default: 0.5.23 or 0.33.0)")
    parser.add_argument("--top", type=int, default=10, help="list this many slowest analyses")
    options = parser.parse_args()
    download, default_version, project = TREES[options.project]
    version = options.version or default_version
    tree = download(version)

    import idxcheck.check.analyse as analyse
    import idxcheck.check.checker as checker
    import idxcheck.source.files as source
    from idxcheck.cli import COMMAND_GC_THRESHOLD
    from idxcheck.cli import main as cli_main
    from idxcheck.interp.interpreter import ClassInterpreter

    parse = Timer()
    texts: list[str] = []
    parse_module = source.parse_module

    def recorded_parse(text: str) -> Any:
        texts.append(text)
        return parse_module(text)

    source.parse_module = parse.wrap(recorded_parse)  # type: ignore[assignment]

    analysis = Timer()
    parse_inside = [0.0]
    idle_classes = [0, 0.0]
    slowest: list[tuple[float, str]] = []

    inside = [0]  # analyses of a class or a function under way (the passes below are theirs)

    def analysed(function: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            parsed_before = parse.seconds
            start = time.perf_counter()
            inside[0] += 1
            try:
                facts = function(*args)
            finally:
                inside[0] -= 1
            spent = time.perf_counter() - start
            parse_inside[0] += parse.seconds - parsed_before
            own = spent - (parse.seconds - parsed_before)
            slowest.append((own, f"{facts.path}: {facts.name}"))
            if not facts.bindings and not facts.accesses:
                idle_classes[0] += 1
                idle_classes[1] += own
            return facts

        return analysis.wrap(run)

    analyse.analyse_class = analysed(analyse.analyse_class)  # type: ignore[assignment]
    analyse.analyse_function = analysed(analyse.analyse_function)  # type: ignore[assignment]

    checking = Timer()
    analyse.check_facts = checking.wrap(analyse.check_facts)  # type: ignore[assignment]
    solving = Timer()
    checker.Checker.decide = solving.wrap(checker.Checker.decide)  # type: ignore[method-assign]

    # Entry points are run by the interpreter made with the per-forward attributes.
    entries = {True: [0, 0.0], False: [0, 0.0]}
    interpreter_init = ClassInterpreter.__init__
    interpreter_run = ClassInterpreter.run

    # Each run of `ClassInterpreter.run` by the pass that made the interpreter (parses first made
    # inside a run counted in it): `analyse_class` makes one interpreter per pass, told apart by
    # what it is given; runs outside an analysis are the tree facts' (runners, mode model).
    passes: dict[str, list[float]] = {}

    def pass_of(kwargs: dict[str, Any]) -> str:
        if not inside[0]:
            return "tree facts (runners' widths, the mode model)"
        if kwargs.get("record", True):
            if "forward_state_attrs" in kwargs:
                return "runner: the entry points, recording sites"
            return "a module function analysed on its own"
        if "stores" in kwargs:
            return "reader: methods that write in place (refills)"
        if "forward_state_attrs" in kwargs:
            return "resolver: methods that store entries per key"
        return "collector: `__init__` excluded, methods that write `self`"

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        interpreter_init(self, *args, **kwargs)
        self.bench_entries = "forward_state_attrs" in kwargs
        self.bench_pass = pass_of(kwargs)

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        tally = passes.setdefault(self.bench_pass, [0, 0.0])
        start = time.perf_counter()
        try:
            return counted_run(self, *args, **kwargs)
        finally:
            tally[0] += 1
            tally[1] += time.perf_counter() - start

    def counted_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not getattr(self, "bench_entries", False):
            return interpreter_run(self, *args, **kwargs)
        before = (len(self.bindings), len(self.accesses), len(self.errors))
        parsed_before = parse.seconds
        start = time.perf_counter()
        result = interpreter_run(self, *args, **kwargs)
        spent = time.perf_counter() - start - (parse.seconds - parsed_before)
        after = (len(self.bindings), len(self.accesses), len(self.errors))
        tally = entries[after != before]
        tally[0] += 1
        tally[1] += spent
        return result

    ClassInterpreter.__init__ = init  # type: ignore[method-assign]
    ClassInterpreter.run = run  # type: ignore[method-assign]

    argv = sys.argv
    gc.set_threshold(*COMMAND_GC_THRESHOLD)  # as the `idxcheck` command sets it
    sys.argv = ["idxcheck", "scan", "--no-cache", "-j", "1", str(tree), "-o", os.devnull]
    start = time.perf_counter()
    try:
        cli_main()
    except SystemExit:
        pass
    finally:
        sys.argv = argv
    wall = time.perf_counter() - start

    cpython = time.perf_counter()
    for text in texts:
        ast.parse(text)
    cpython_seconds = time.perf_counter() - cpython

    size = sum(len(text) for text in texts)
    distinct = set(texts)
    interpretation = analysis.seconds - parse_inside[0]
    rest = wall - parse.seconds - interpretation - checking.seconds
    print(f"{project} {version}, one process, `--no-cache -j 1`: {wall:.2f} s")
    print(
        f"  libcst parses      {parse.seconds:6.2f} s  {parse.calls} texts, "
        f"{size / 1e6:.2f} M characters, {size / 1e6 / parse.seconds:.2f} M/s; "
        f"{len(distinct)} distinct texts, {sum(map(len, distinct)) / 1e6:.2f} M characters"
    )
    print(
        f"  CPython's parser   {cpython_seconds:6.2f} s  the same texts, "
        f"{parse.seconds / cpython_seconds:.1f} x faster"
    )
    print(
        f"  interpretation     {interpretation:6.2f} s  {analysis.calls} classes and functions; "
        f"{idle_classes[0]} with no site or slice: {idle_classes[1]:.2f} s"
    )
    for productive, label in ((True, "bound, sliced or failed"), (False, "did none of it")):
        count, seconds = entries[productive]
        print(f"    entry runs       {seconds:6.2f} s  {count} that {label}")
    print("  runs of ClassInterpreter.run by pass (parses made inside counted in them):")
    for label, (count, seconds) in sorted(passes.items(), key=lambda item: -item[1][1]):
        print(f"    {seconds:6.2f} s  {count:5d} runs  {label}")
    print(
        f"  checking facts     {checking.seconds:6.2f} s  the solver's part {solving.seconds:.2f} s"
    )
    print(f"  the rest           {rest:6.2f} s  start-up, discovery, prefilter, tree facts, report")
    if options.top:
        print(f"  the {options.top} slowest analyses (interpretation, parses left out):")
        for seconds, name in sorted(slowest, reverse=True)[: options.top]:
            print(f"    {seconds:6.2f} s  {name}")


if __name__ == "__main__":
    main()
