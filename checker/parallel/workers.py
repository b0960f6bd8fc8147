"""Both cores (or more): the files whose classes a scan analyses, spread over worker processes.

The tree facts (modes, runners, widths, kernels) are read once, in the parent; the workers are
forked after that, so they inherit them without pickling a syntax tree or a symbolic term.
Each worker analyses whole files (one large one, or several small ones) and returns their
`FilePart`s, which are plain data; the parent merges the parts in file order, so the result
is the same with one worker or many, in whatever order the workers finish. Each worker has
its own solver and its own connection to the verdict cache (SQLite in WAL mode takes
concurrent writers).

The parts that the cache holds (`idxcheck.incremental.parts`) are read in the parent first; only the
files to analyse go to workers. Where `fork` is not available, or there is too little to
analyse for a worker to pay off, the parts are computed in this process.

A scan with the cache that reads its tree facts from the cache does not load libcst itself:
it hands the files to analyse to a helper process forked as the scan starts, which has loaded
libcst meanwhile (`analysis_helper`)."""

from __future__ import annotations

import functools
import gc
import os
import pickle
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from idxcheck.check.part import FilePart, TreeFacts
from idxcheck.incremental.cache import Cache, solver_version
from idxcheck.incremental.parts import analysed_part, stored_part
from idxcheck.incremental.stored import loads
from idxcheck.model.config import MAX_FILE_BYTES
from idxcheck.model.progress import Event, Progress, Step, emit
from idxcheck.model.stable import digest
from idxcheck.source.files import (
    Block,
    SourceError,
    SourceFile,
    data_digest,
    parse_ahead,
    texts_left_out,
)
from idxcheck.source.index import ClassIndex
from idxcheck.source.lazy_import import is_loaded, lazy_module, load_now
from idxcheck.source.modules import CONSTANT_READINGS, read_constants_ahead
from idxcheck.sym.node import keep_interned_nodes

if TYPE_CHECKING:
    from multiprocessing.pool import IMapIterator

    from idxcheck.check.checker import Checker

# A worker costs a fork and the pickling of its parts: worth it past this many characters of
# candidate source, counting the base classes in other files that a file's classes inherit: a
# large backend and its subclass elsewhere gain from two processes, the bundled demo's small
# files lose (bench/RESULTS.md, "Measurements that stood in code comments").
MIN_PARALLEL_BYTES = 200_000
MAX_AUTO_JOBS = 4
# A worker analyses one task and is replaced by a fresh fork of the parent: Python keeps the
# high-water mark of a process's heap, so a long-lived worker would hold the memory of the
# largest file it met; fresh ones take less memory in the same time (bench/RESULTS.md, "What
# each change did"). Verdicts live on in the disk cache, not in a worker.
TASKS_PER_WORKER = 1
# A task is one file, or several whose weight (`_weight`: the characters of code their analysis
# parses and interprets) stays within a limit: most files analyse quickly, and a fork per file
# costs more than it saves. The limit is TASK_BYTES, or each job's even share of the weight left
# to cut where that is less, but not under TASK_MIN_BYTES: the last tasks are smaller, so that
# the workers finish together (smaller fractions of that share were slower). Larger tasks cost
# more than their forks save (a worker's heap grows with what it analyses). The limits and
# shares compared: bench/RESULTS.md, "What each change did", and "Measurements that stood in
# code comments".
TASK_BYTES = 1_000_000
TASK_MIN_BYTES = 100_000
# A worker allocates millions of short-lived objects for one file and then exits: the cyclic
# collector's passes over them (and, unless the parent froze them, over every object the
# parent had at the fork, which touches and copies their pages) cost CPU time and save no
# memory (bench/RESULTS.md, "What each change did", and "Measurements that stood in code
# comments"). It runs rarely in a worker; what a file's analysis leaves in cycles goes with
# the worker.
WORKER_GC_THRESHOLD = (500_000, 1_000, 1_000)

T = TypeVar("T")

# A class that this many of the tasks forked after the first workers would each parse is
# parsed once in the parent while the first workers run: the parse takes the parent a share of
# a core the workers use, where it would have cost that many parses spread over them. Two, as
# tasks are weighed and each holds several files (with a file or two a task, two tasks shared
# so many classes that three did better); a pre-commit run's three tasks share nothing
# (bench/RESULTS.md, "What each change did", and "Measurements that stood in code comments").
SHARED_PARSE_TASKS = 2
# z3 is loaded before the workers are forked past this many tasks a job: before the forks its
# import delays every worker, in a worker only that one (bench/RESULTS.md, "What each change
# did"). A pre-commit run after an edit of a backend that others inherit from has three tasks
# at two jobs, whose obligations are all in the verdict cache; a cold scan has many more.
SOLVER_FIRST_TASKS = 2

# Set in the parent just before the fork: the workers read them from their copy of memory.
_SOURCES: Sequence[SourceFile] = ()
_FACTS: TreeFacts | None = None
_CACHE_DIR: str | None = None
_CHECKER: Checker | None = None
_BACKGROUND: Callable[[], object] | None = None
_HELPER: _Helper | None = None
# True in the helper process (`_helper_main`), which exits once it has answered.
_IN_HELPER = False
# The writing end of the pipe the workers tell their progress by (`_Ticks`), if any.
_TICKS: int | None = None


def jobs_for(
    requested: int, sources: Sequence[SourceFile], classes: ClassIndex | None = None
) -> int:
    """Worker processes for a scan: `requested` if positive, else one per CPU up to
    MAX_AUTO_JOBS; one when the candidates (with the classes they inherit, where `classes`
    is given) are too small to share, or fork is missing."""
    if not sources:
        return 1  # every part from the cache
    # Loaded here: a run whose parts all come from the cache forks nothing, and skips the import
    # (bench/RESULTS.md, "What each change did").
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if requested > 0:
        jobs = requested
    else:
        if len(sources) < 2 or _work_size(sources, classes) < MIN_PARALLEL_BYTES:
            return 1
        jobs = min(_cpus(), MAX_AUTO_JOBS)
    return max(1, min(jobs, len(sources)))


def _work_size(sources: Sequence[SourceFile], classes: ClassIndex | None) -> int:
    size = sum(s.length for s in sources)
    if classes is not None:
        for source in sources:
            if size >= MIN_PARALLEL_BYTES:
                break
            size += classes.inherited_size(source)
    return size


class Tracker:
    """The analysis's progress, told to `progress` (`model.progress`): the files done of
    those to analyse, the classes they hold that may hold a site (but dataclasses, which are
    read, not analysed), the obligations decided."""

    def __init__(
        self, progress: Progress | None, sources: Sequence[SourceFile], facts: TreeFacts
    ) -> None:
        self.progress = progress
        self.total = len(sources)
        self.classes = (
            sum(
                1
                for source in sources
                for block in facts.hits.blocks_that_may_hit(source)
                if block.kind == "class" and not facts.dataclasses.is_dataclass_block(source, block)
            )
            if progress is not None
            else 0
        )
        self.done = 0
        self.solved = 0

    def tell(self) -> None:
        emit(
            self.progress,
            Event(Step.ANALYSING, self.done, self.total, self.classes, self.solved),
        )

    def files_done(self, count: int = 1) -> None:
        self.done += count
        self.tell()

    def decided(self, count: int = 1) -> None:
        self.solved += count
        self.tell()


def analyse_parts(
    sources: Sequence[SourceFile],
    facts: TreeFacts,
    cache: Cache | None,
    loaded: Sequence[SourceFile] = (),
    progress: Progress | None = None,
) -> list[FilePart]:
    """Each source's part, from the cache or analysed. The trees parsed so far in `loaded`
    (the tree facts') are dropped first, but for the classes that workers share. `progress`
    is told as each file is done and each obligation decided (from workers too, `_analyse`;
    a helper tells nothing until it has the parts)."""
    tracker = Tracker(progress, sources, facts)
    tracker.tell()
    # The parts the cache holds are read here: workers are for the files to analyse (after
    # an edit, a whole-tree scan would otherwise fork a worker per file to read its part).
    parts: dict[int, FilePart] = {}
    for index, source in enumerate(sources):
        found = stored_part(source, facts, cache)
        if found is not None:
            parts[index] = found
    if parts:
        tracker.files_done(len(parts))
    todo = [i for i in range(len(sources)) if i not in parts]
    if todo and _HELPER is not None and not is_loaded("libcst"):
        hint_helper([sources[i] for i in todo], facts)
        handed = _HELPER.analyse(sources, facts, todo, cache)
        if handed is not None:
            parts.update(handed)
            tracker.files_done(len(handed))
            return [parts[i] for i in range(len(sources))]
    parts.update(_analyse(sources, facts, cache, todo, loaded, tracker))
    if tracker.done != tracker.total:  # a worker's tick dropped: the count ends right
        tracker.done = tracker.total
        tracker.tell()
    return [parts[i] for i in range(len(sources))]


def _analyse(
    sources: Sequence[SourceFile],
    facts: TreeFacts,
    cache: Cache | None,
    todo: Sequence[int],
    loaded: Sequence[SourceFile] = (),
    tracker: Tracker | None = None,
    collected: Callable[[dict[int, FilePart]], None] | None = None,
) -> dict[int, FilePart]:
    """The parts of `todo`'s sources, analysed here or in workers forked from here; `tracker`
    told as each file is done and each obligation decided (by workers, through a pipe).
    `collected` is handed the workers' parts as soon as the last one has come, where a pool
    then waits for its workers to exit."""
    parts: dict[int, FilePart] = {}
    jobs = jobs_for(facts.config.jobs, [sources[i] for i in todo], facts.classes)
    tasks: list[tuple[int, ...]] = []
    shared: list[tuple[SourceFile, Block]] = []
    if jobs > 1:
        # Heaviest first, so that the longest analysis does not start last.
        reads = {i: _reads(sources[i], facts) for i in todo}
        weights = {i: _weight(sources[i], reads[i]) for i in todo}
        tasks = _tasks(sorted(todo, key=lambda i: -weights[i]), weights, jobs)
        shared = _shared_classes(tasks, sources, facts, jobs, reads)
        _share_parses([(owner, block) for owner, block in shared if owner.has_class_source(block)])
    for source in loaded:
        source.forget_parses()
    if not todo:
        return parts  # every part from the cache: the checker is not loaded
    if jobs <= 1:
        checker = facts.checker(cache)
        if tracker is not None and tracker.progress is not None:
            checker.on_decided = tracker.decided
        for index in todo:
            parts[index] = analysed_part(sources[index], facts, checker)
            if tracker is not None:
                tracker.files_done()
        return parts
    if cache is not None:
        cache.close()  # a connection must not cross a fork; it reopens on next use
    global _SOURCES, _FACTS, _CACHE_DIR, _CHECKER, _TICKS
    _SOURCES, _FACTS, _CHECKER = sources, facts, None
    _CACHE_DIR = str(cache.directory) if cache is not None else None
    ticks = _Ticks() if tracker is not None and tracker.progress is not None else None
    _TICKS = ticks.write_end if ticks is not None else None
    try:
        if len(tasks) > SOLVER_FIRST_TASKS * jobs:
            # Loaded once, before the forks: workers forked for later tasks would each load
            # it again. With few tasks (a pre-commit run), a worker loads z3 only if an
            # obligation misses the verdict cache, alongside the other workers.
            import idxcheck.solve.solver  # noqa: F401

        load_now(lazy_module("libcst"))
        # The analysis too: a worker is forked per task, and each would import it again.
        from idxcheck.check import analyse  # noqa: F401

        gc.freeze()  # what the parent holds is not collected (nor its pages copied) by workers
        if ticks is None and len(tasks) <= jobs:
            # A task a worker (a pre-commit run): each forked for its task, without a pool.
            for done in _fork_each(tasks, last_here=_IN_HELPER):
                parts.update(done)
            return parts  # no exit is waited for: `collected` is not needed
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(
            jobs, maxtasksperchild=TASKS_PER_WORKER
        ) as pool:
            results = pool.imap_unordered(_work, tasks, chunksize=1)
            # The first workers are forked and at work: the shared classes are parsed now,
            # for the workers forked after them (one per task). One forked while a class is
            # parsed here, not yet kept, parses it again if it needs it.
            _share_parses(shared)
            gc.freeze()
            if ticks is None or tracker is None:
                for done in results:
                    parts.update(done)
            else:
                _collect(results, parts, ticks, tracker)
            if collected is not None:
                collected(parts)  # before the workers' exits are waited for
            pool.close()
            pool.join()
    finally:
        gc.unfreeze()
        _SOURCES, _FACTS, _CACHE_DIR, _TICKS = (), None, None, None
        if ticks is not None:
            if tracker is not None:
                ticks.tell(tracker)  # what the last workers wrote before they exited
            ticks.close()
    return parts


def _fork_each(
    tasks: Sequence[tuple[int, ...]], last_here: bool
) -> Iterator[list[tuple[int, FilePart]]]:
    """The parts of each task, analysed in a process forked for it (`_work`), as a pool of one
    task a worker would, without the pool's import, threads and wait for its workers' exits
    (bench/RESULTS.md, "The helper forked by the entry"); the last task analysed here where
    `last_here` (in the helper, a process of its own that exits after). A worker that fails
    or dies raises here, as the pool would; those not yet read are killed."""
    children: list[tuple[int, int, tuple[int, ...]]] = []
    try:
        for task in tasks[:-1] if last_here else tasks:
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # the worker: it never returns into the caller's code
                status = 1
                try:
                    os.close(read_end)
                    try:
                        reply: tuple[str, object] = ("ok", _work(task))
                    except Exception as exc:  # raised again where the parts are read
                        reply = ("failed", f"{type(exc).__name__}: {exc}")
                    _write_message(write_end, pickle.dumps(reply, pickle.HIGHEST_PROTOCOL))
                    status = 0
                finally:
                    os._exit(status)
            os.close(write_end)
            children.append((pid, read_end, task))
        if last_here:
            yield _work(tasks[-1])
        while children:
            pid, read_end, task = children.pop(0)
            try:
                data = _read_message(read_end)
            finally:
                os.close(read_end)
                _UNREAPED.append(pid)
            if not data:
                raise RuntimeError(f"the worker of task {task} ended without its parts")
            status, value = pickle.loads(data)
            if status != "ok":
                raise RuntimeError(str(value))
            yield cast(list[tuple[int, FilePart]], value)
    finally:
        for pid, read_end, _ in children:
            os.close(read_end)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            _UNREAPED.append(pid)
        _reap()


# How often the parent looks at the workers' ticks while it waits for their parts (seconds).
TICK_INTERVAL = 0.1


def _collect(
    results: IMapIterator[list[tuple[int, FilePart]]],
    parts: dict[int, FilePart],
    ticks: _Ticks,
    tracker: Tracker,
) -> None:
    """The workers' parts into `parts`, the tracker told of their ticks meanwhile."""
    import multiprocessing

    while True:
        try:
            done = results.next(TICK_INTERVAL)
        except multiprocessing.TimeoutError:
            ticks.tell(tracker)
            continue
        except StopIteration:
            return
        parts.update(done)
        ticks.tell(tracker)


class _Ticks:
    """A pipe by which workers tell the parent of their progress, a byte at a time (a write
    of one byte is whole): `FILE` for each file analysed, `DECIDED` for each obligation. Its
    writing end does not block: a tick that does not fit is dropped, never waited on."""

    FILE = b"f"
    DECIDED = b"o"

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()
        os.set_blocking(self.read_end, False)
        os.set_blocking(self.write_end, False)

    def tell(self, tracker: Tracker) -> None:
        files = decided = 0
        while True:
            try:
                data = os.read(self.read_end, 65536)
            except BlockingIOError:
                break
            if not data:
                break
            files += data.count(self.FILE)
            decided += data.count(self.DECIDED)
        if decided:
            tracker.solved += decided
        if files or decided:
            tracker.files_done(files)

    def close(self) -> None:
        os.close(self.write_end)
        os.close(self.read_end)


def _tick(byte: bytes) -> None:
    """A worker's tick to the parent (`_Ticks`), where it listens."""
    if _TICKS is None:
        return
    try:
        os.write(_TICKS, byte)
    except OSError:  # full (the parent is busy) or closed: a progress line misses a tick
        pass


def _tick_decided() -> None:
    _tick(_Ticks.DECIDED)


def _shared_classes(
    tasks: Sequence[tuple[int, ...]],
    sources: Sequence[SourceFile],
    facts: TreeFacts,
    first: int,
    reads: Mapping[int, Reads] | None = None,
) -> list[tuple[SourceFile, Block]]:
    """The classes to parse here, once, where several tasks would each parse them again: a
    worker is forked from this process and finds their trees in its copy of memory. Those
    that `SHARED_PARSE_TASKS` or more of the tasks after the `first` (forked before the
    parse) need (a base class that many backends inherit from), and those whose tree the tree
    facts left here (a runner) that any task needs. `reads`: `_reads` of the sources, where
    they are at hand."""
    demand: dict[tuple[int, Block], int] = {}
    where: dict[tuple[int, Block], tuple[SourceFile, Block]] = {}
    for number, task in enumerate(tasks):
        needed: dict[tuple[int, Block], tuple[SourceFile, Block]] = {}
        for index in task:
            found = reads.get(index) if reads is not None else None
            for pair in _classes_parsed(sources[index], facts, found):
                needed[(id(pair[0]), pair[1])] = pair
        for key, pair in needed.items():
            demand[key] = demand.get(key, 0) + int(number >= first)
            where[key] = pair
    return [
        (owner, block)
        for key, (owner, block) in where.items()
        if demand[key] >= SHARED_PARSE_TASKS or owner.has_class_source(block)
    ]


# What analysing a file reads (`_reads`): its blocks that may hold a site, and the class blocks
# they inherit from, in this file or others.
Reads = tuple[list[Block], list[tuple[SourceFile, Block]]]


def _reads(source: SourceFile, facts: TreeFacts) -> Reads:
    own = facts.hits.blocks_that_may_hit(source)
    return own, facts.classes.inherited_blocks(source, own)


def _classes_parsed(
    source: SourceFile, facts: TreeFacts, reads: Reads | None = None
) -> list[tuple[SourceFile, Block]]:
    """The class blocks that analysing `source` parses: its own that may hold sites, and those
    they inherit from, in this file or others (from `reads` where given)."""
    own, inherited = reads if reads is not None else _reads(source, facts)
    return [*((source, b) for b in own if b.kind == "class"), *inherited]


def _share_parses(classes: Sequence[tuple[SourceFile, Block]]) -> None:
    """Parse these classes where they are not yet, and keep them through `forget_parses`."""
    for owner, block in classes:
        try:
            owner.class_source(block)
        except (SourceError, RecursionError):
            continue  # the worker meets the same error and reports it
        owner.keep_parse(block)


def _weight(source: SourceFile, reads: Reads) -> int:
    """The characters that analysing `source` parses and interprets (`reads`: its `_reads`):
    its blocks that may hold a site and the classes they inherit from in other files."""
    own, inherited = reads
    return sum(len(source.block_text(block)) for block in own) + sum(
        len(owner.block_text(block)) for owner, block in inherited if owner is not source
    )


def _task_limit(left: int, jobs: int) -> int:
    """The weight of the next task, where `left` is what is left to cut."""
    return max(TASK_MIN_BYTES, min(TASK_BYTES, left // jobs))


def _tasks(order: Sequence[int], weights: Mapping[int, int], jobs: int) -> list[tuple[int, ...]]:
    """`order`'s files cut into tasks, in order: the first `jobs` files alone (each worker
    starts on one, and two files are never one task for two workers), then the others
    together while their `weights` stay within the limit (`_task_limit`)."""
    tasks: list[tuple[int, ...]] = [(index,) for index in order[:jobs]]
    group: list[int] = []
    size = 0
    left = sum(weights[index] for index in order[jobs:])
    limit = _task_limit(left, jobs)
    for index in order[jobs:]:
        weight = weights[index]
        if group and size + weight > limit:
            tasks.append(tuple(group))
            group, size = [], 0
            limit = _task_limit(left, jobs)
        group.append(index)
        size += weight
        left -= weight
    if group:
        tasks.append(tuple(group))
    return tasks


def _work(task: tuple[int, ...]) -> list[tuple[int, FilePart]]:
    global _CHECKER
    assert _FACTS is not None
    if _CHECKER is None:
        # Ctrl-C reaches every process of the scan's group: a worker ends quietly (a check
        # under way is interrupted first, `idxcheck.solve.solver`); the parent reports it.
        signal.signal(signal.SIGINT, _end_quietly)
        gc.set_threshold(*WORKER_GC_THRESHOLD)
        keep_interned_nodes()  # this worker analyses TASKS_PER_WORKER (one) task, then exits
        cache = Cache(Path(_CACHE_DIR), solver_version()) if _CACHE_DIR is not None else None
        _CHECKER = _FACTS.checker(cache)
        if _TICKS is not None:
            _CHECKER.on_decided = _tick_decided
    try:
        done = []
        for index in task:
            done.append((index, analysed_part(_SOURCES[index], _FACTS, _CHECKER)))
            _tick(_Ticks.FILE)
        return done
    except KeyboardInterrupt:  # raised by an interrupted check, before the handler ran
        os._exit(128 + signal.SIGINT)


def _end_quietly(signum: int, frame: object) -> None:
    os._exit(128 + signum)


def in_background(
    compute: Callable[[], T], jobs: int, cache: Cache | None = None
) -> Callable[[], T]:
    """`compute` started in a forked process while this one goes on; the function returned
    waits for its value. Computed in this process instead (when that function is called) for
    `-j 1`, on one CPU, or without `fork`; the caller decides whether the work is worth a
    process. `compute` must leave the cache alone: `cache`'s connection is closed before the
    fork (it reopens on next use), and its value must pickle."""
    if jobs == 1 or _cpus() < 2:
        return compute
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return compute
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    if cache is not None:
        cache.close()
    global _BACKGROUND
    _BACKGROUND = compute
    gc.freeze()  # as for the workers: the child's collections leave the parent's pages alone
    try:
        # The process is forked by `submit` (for the fork method, all at the first submit).
        executor = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
        future = executor.submit(_background)
    finally:
        gc.unfreeze()
        _BACKGROUND = None

    def result() -> T:
        try:
            return cast(T, future.result())  # the value of `compute`, through `_background`
        except BrokenProcessPool:
            return compute()  # the process died (killed, out of memory): compute it here
        finally:
            executor.shutdown()

    return result


def _background() -> object:
    assert _BACKGROUND is not None
    keep_interned_nodes()  # this process computes one thing and exits
    return _BACKGROUND()


def _cpus() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


# A helper forked already (`idxcheck.parallel.early`): its process id, the end of the pipe to
# it and the end of the pipe from it.
Forked = tuple[int, int, int]


class _Helper:
    """A process forked as a scan with the cache starts, that loads libcst while this one
    reads the tree and its facts (from the cache, without libcst). The files to analyse are
    then handed to it, pickled with the tree facts, and it analyses them as this process would
    have (`_analyse`, forking its workers from itself), so libcst's import is off the scan's
    path. The files are pickled without their texts (`source.texts_left_out`), which the
    helper reads again from the files it uses, so handing them over is cheap. If a file
    changed since this process read it, the helper gives up and this process analyses the
    texts it read. A scan that loaded libcst itself (it read a runner's widths) analyses here.
    What the helper saves: bench/RESULTS.md, "What each change did"."""

    def __init__(
        self, ahead: Sequence[str] = (), directory: str | None = None, forked: Forked | None = None
    ) -> None:
        if forked is not None:
            # Forked by the entry (`idxcheck.parallel.early`), loading already: told its task.
            self.pid, send, receive = forked
            try:
                _write_message(send, pickle.dumps(("ahead", (tuple(ahead), directory))))
            except OSError:
                pass  # it died loading: `analyse` finds out, and the scan analyses itself
        else:
            to_child, send = os.pipe()
            receive, from_child = os.pipe()
            self.pid = os.fork()
            if self.pid == 0:  # the helper: it never returns into the scan's code
                status = 1
                try:
                    os.close(send)
                    os.close(receive)
                    _helper_load()
                    _helper_main(to_child, from_child, ahead, directory)
                    status = 0
                finally:
                    os._exit(status)
            os.close(to_child)
            os.close(from_child)
        self._ahead = tuple(ahead)
        self._directory = directory
        self._send: int | None = send
        self._receive: int | None = receive

    def analyse(
        self,
        sources: Sequence[SourceFile],
        facts: TreeFacts,
        todo: Sequence[int],
        cache: Cache | None,
    ) -> dict[int, FilePart] | None:
        """The parts of `todo`'s sources, or None where the helper does not give them (it
        died, the analysis failed there, or it was used already): the caller then analyses
        them itself, and meets the same error."""
        if self._send is None or self._receive is None:
            return None
        directory = str(cache.directory) if cache is not None else None
        try:
            try:
                state = (sources, facts, todo, directory)
                with texts_left_out():  # read again there, of the few files it uses
                    data = pickle.dumps(("state", state), pickle.HIGHEST_PROTOCOL)
                _write_message(self._send, data)
            except Exception:  # whatever failed there is met again here
                return None
            _run_meanwhile()
            try:
                reply = _read_message(self._receive)
                status, value = pickle.loads(reply) if reply else ("died", None)
            except Exception:
                return None
        finally:
            self.close()
        return cast(dict[int, FilePart], value) if status == "ok" else None

    def hint(self, wanted: Sequence[Wanted]) -> None:
        """Classes for the helper to parse ahead. The message is small (a file name and two
        line numbers a class): the pipe takes it whole, so this never waits for the helper,
        which reads it once it has parsed what it is parsing. A pre-commit run keeps it in
        the cache, for the next run's helper to parse ahead before the hint comes
        (`_stored_hints`): written while the helper analyses."""
        if self._send is None:
            return
        wanted = list(wanted)
        data = pickle.dumps(("hint", wanted), pickle.HIGHEST_PROTOCOL)
        while len(data) + _LENGTH_BYTES > HINT_BYTES:  # the most needed, as many as fit
            wanted = wanted[: len(wanted) // 2]
            data = pickle.dumps(("hint", wanted), pickle.HIGHEST_PROTOCOL)
        try:
            _write_message(self._send, data)
        except OSError:
            pass  # the helper is gone: `analyse` finds out
        if self._ahead and self._directory is not None:
            _MEANWHILE.append(functools.partial(_store_hints, self._directory, self._ahead, wanted))

    def close(self) -> None:
        """Stop the helper. It is killed: handed nothing, it is only loading libcst, parsing
        ahead (its writes to the cache are single SQLite transactions, which a kill leaves
        whole or undone) or waiting, and after its reply it is only waiting for its workers to
        exit (which end by themselves: each analyses one task, and one forked to replace it
        stops at the end of the pipe of tasks); a scan that falls back on its own analysis
        does not wait for the helper's. Its end is not waited for either (`_reap`)."""
        if self._send is not None and self._receive is not None:
            os.close(self._send)
            os.close(self._receive)
        self._send = self._receive = None
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
                _UNREAPED.append(self.pid)
            except ProcessLookupError:
                pass  # reaped already (by a handler of the caller's)
            self.pid = 0
        _reap()


# Helpers and workers ended or killed and not yet reaped: their end is not waited for (the end
# of a process that holds a scan's memory takes milliseconds); each is reaped by a later
# `_reap` (a helper's close and `_fork_each` call it), and the command's own exit leaves them
# to the system.
_UNREAPED: list[int] = []


def _reap() -> None:
    for pid in list(_UNREAPED):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid  # reaped already (by a handler of the caller's)
        if done:
            _UNREAPED.remove(pid)


def _helper_load() -> None:
    """What the helper loads as it starts."""
    keep_interned_nodes()  # this process analyses once, then exits
    load_now(lazy_module("libcst"))
    # The analysis too, while the scan reads the tree: the scan itself no longer loads it
    # before forking this process (it needs it only for what the cache does not hold).
    from idxcheck.check import analyse  # noqa: F401


def early_helper_main(to_child: int, from_child: int) -> None:
    """The helper forked by the entry (`idxcheck.parallel.early`): it loads, then waits for
    its task (what `_Helper` sends it), or for the end of its pipe where the scan uses none."""
    _helper_load()
    data = _read_message(to_child)
    if not data:
        return
    kind, value = pickle.loads(data)
    if kind == "ahead":
        ahead, directory = value
        _helper_main(to_child, from_child, ahead, directory)


def _helper_main(
    to_child: int, from_child: int, ahead: Sequence[str], directory: str | None
) -> None:
    from idxcheck.incremental.parse_store import parses_from

    global _IN_HELPER
    _IN_HELPER = True
    # The classes parsed ahead are taken from the cache's syntax trees where it has them.
    cache = Cache(Path(directory), solver_version()) if directory is not None else None
    parser = _AheadParser(to_child)
    with parses_from(cache):
        parser.parse([(path, None) for path in ahead])
        parser.read_ahead(ahead)
        if cache is not None and ahead:
            # What the last run of the same files was hinted (`hint_helper`), before this
            # run's hint comes with the files to analyse.
            parser.parse(_stored_hints(cache, ahead))
        while True:
            data = _read_message(to_child)
            if not data:
                return  # the scan closed the pipe
            kind, value = pickle.loads(data)
            if kind != "hint":
                break
            parser.parse(value)
    sources, facts, todo, handed = value
    parser.lend(sources)
    if handed != directory:
        if cache is not None:
            cache.close()
        cache = Cache(Path(handed), solver_version()) if handed is not None else None
    replied = False

    def reply_now(parts: dict[int, FilePart]) -> None:
        # As soon as the workers' parts are in: the scan goes on while their exits are
        # waited for here (a few milliseconds of a pre-commit run).
        nonlocal replied
        _write_message(from_child, pickle.dumps(("ok", parts), pickle.HIGHEST_PROTOCOL))
        replied = True

    try:
        reply: tuple[str, object] = (
            "ok",
            _analyse(sources, facts, cache, todo, collected=reply_now),
        )
    except Exception as exc:  # met again by the scan's own analysis
        reply = ("failed", f"{type(exc).__name__}: {exc}")
    finally:
        if cache is not None:
            cache.close()
    if replied:
        return
    _write_message(from_child, pickle.dumps(reply, pickle.HIGHEST_PROTOCOL))


# A class to parse ahead: its file and the first and last lines of its block, or None for
# every class of the file.
Wanted = tuple[str, tuple[int, int] | None]


class _AheadParser:
    """Parses classes in the helper while it waits for the scan's files, and stops as soon as
    a message arrives on `channel`: the classes of the focused files (a method edit makes the
    edited class one that both its own file's worker and a subclass's worker parse, much of
    each one's work on a large backend: bench/RESULTS.md, "Measurements that stood in code
    comments"), then those the scan hints at (`hint`: what the files to analyse and the
    classes they inherit from parse, most needed first).
    Each file is read again here; a class whose text changed since the scan read it is parsed
    anew where it is used (`source.parse_ahead` keys a parse by its text)."""

    def __init__(self, channel: int) -> None:
        self._channel = channel
        self._files: dict[str, SourceFile | None] = {}

    def parse(self, wanted: Sequence[Wanted]) -> None:
        import select

        for path, lines in wanted:
            source = self._file(path)
            if source is None:
                continue
            for block in source.blocks:
                if block.kind != "class":
                    continue
                if lines is not None and (block.start_line, block.end_line) != lines:
                    continue
                if select.select([self._channel], [], [], 0)[0]:
                    return  # a message is here: the files to analyse come first
                parse_ahead(source.parse_text(block))

    def read_ahead(self, paths: Sequence[str]) -> None:
        """The readings of the files at `paths` that every worker of theirs asks for
        (`source.modules.read_constants_ahead`), until a message arrives: each analysing
        process would otherwise read them of the same text (CPython's parse of the whole
        file; a base class's file is read by its subclasses' workers too). `lend` hands them
        to the scan's files."""
        import select

        for path in paths:
            source = self._file(path)
            if source is None:
                continue
            if select.select([self._channel], [], [], 0)[0]:
                return
            read_constants_ahead(source)

    def lend(self, sources: Sequence[SourceFile]) -> None:
        """The readings made here (`read_ahead`), and the texts read, to the scan's files of
        the same bytes: workers forked from here then neither read them nor the text again."""
        for source in sources:
            own = self._files.get(source.path)
            if own is not None:
                source.borrow(own, CONSTANT_READINGS)

    def _file(self, path: str) -> SourceFile | None:
        if path not in self._files:
            try:
                with open(path, "rb") as handle:
                    data = handle.read(MAX_FILE_BYTES + 1)
                # A larger file is the scan's error to report: not parsed ahead.
                too_large = len(data) > MAX_FILE_BYTES
                found = None if too_large else SourceFile.from_bytes(path, data)
                if found is not None:
                    found.data_digest = data_digest(data)  # what `lend` compares
                self._files[path] = found
            except (OSError, SourceError):
                self._files[path] = None
        return self._files[path]


def hint_helper(sources: Sequence[SourceFile], facts: TreeFacts) -> None:
    """Tell the helper, if there is one, the classes that analysing `sources` parses (their
    own that may hold sites, and those they inherit from), those that more of them need first,
    then the larger: it parses them while it waits (`_AheadParser`)."""
    if _HELPER is None or is_loaded("libcst"):
        return
    demand: dict[tuple[str, int, int], int] = {}
    size: dict[tuple[str, int, int], int] = {}
    for source in sources:
        for owner, block in _classes_parsed(source, facts):
            key = (owner.path, block.start_line, block.end_line)
            demand[key] = demand.get(key, 0) + 1
            size[key] = block.end_line - block.start_line
    order = sorted(demand, key=lambda k: (-demand[k], -size[k], k))
    _HELPER.hint([(path, (first, last)) for path, first, last in order])


def _hints_key(cache: Cache, ahead: Sequence[str]) -> str:
    """Where the hint of a pre-commit run of the files `ahead` is kept: by the versions, the
    working folder (the paths are as given) and the files."""
    return digest("helper-hints", cache.versions(), os.getcwd(), *ahead)


def _stored_hints(cache: Cache, ahead: Sequence[str]) -> list[Wanted]:
    """The hint the last pre-commit run of the files `ahead` gave its helper (`_store_hints`):
    the same classes, unless the edit moved them (a class whose lines changed is not parsed
    ahead; one whose text changed is parsed anew where it is used)."""
    stored = cache.get_blob(_hints_key(cache, ahead))
    found = loads(stored, list[tuple[str, tuple[int, int] | None]]) if stored else None
    return found or []


def _store_hints(directory: str, ahead: Sequence[str], wanted: list[Wanted]) -> None:
    cache = Cache(Path(directory), solver_version())
    try:
        key = _hints_key(cache, ahead)
        data = pickle.dumps(wanted, pickle.HIGHEST_PROTOCOL)
        if cache.get_blob(key) != data:
            cache.put_blob(key, data)
    finally:
        cache.close()


# A pipe's buffer holds 64 KiB on Linux (and at least 4 KiB, PIPE_BUF, on any POSIX system).
HINT_BYTES = 4096
# Messages between a scan and its helper carry their length: the pipes' ends are copied into
# every process forked from either side (workers, background readers), so the end of a
# message cannot be told by the end of the pipe.
_LENGTH_BYTES = 8


def _write_message(fd: int, data: bytes) -> None:
    os.write(fd, len(data).to_bytes(_LENGTH_BYTES, "little"))  # a pipe takes 8 bytes at once
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_message(fd: int) -> bytes:
    """A message, or b"" where the other side closed the pipe before or while sending."""
    header = _read_exactly(fd, _LENGTH_BYTES)
    if len(header) < _LENGTH_BYTES:
        return b""
    data = _read_exactly(fd, int.from_bytes(header, "little"))
    return data if len(data) == int.from_bytes(header, "little") else b""


def _read_exactly(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# What a scan does while its helper analyses (`meanwhile`).
_MEANWHILE: list[Callable[[], None]] = []


@contextmanager
def meanwhile(*work: Callable[[], None]) -> Iterator[None]:
    """Within, `work` is done while a helper analyses the files handed to it, else as the
    block ends: writes to the cache that the analysis does not wait for (the located blocks
    and readings of a pre-commit run's files, rewritten as the edited file changed)."""
    _MEANWHILE.extend(work)
    try:
        yield
    finally:
        _run_meanwhile()


def _run_meanwhile() -> None:
    while _MEANWHILE:
        _MEANWHILE.pop(0)()


@contextmanager
def analysis_helper(
    enabled: bool,
    ahead: Sequence[str] = (),
    directory: str | None = None,
    forked: Callable[[], Forked | None] = lambda: None,
) -> Iterator[None]:
    """Within, `analyse_parts` hands its files to a `_Helper`, where `enabled` (a scan with
    the cache, more than one job) and where one can pay off: with fork, two CPUs or more, and
    libcst not loaded yet. The helper parses the classes of the files `ahead` while it waits,
    with the syntax trees kept in the cache at `directory`. It is the one `forked` gives
    where it gives one (`idxcheck.parallel.early.take`), else forked now."""
    global _HELPER
    if not enabled or _HELPER is not None or _cpus() < 2 or is_loaded("libcst"):
        yield
        return
    if not hasattr(os, "fork"):
        yield
        return
    helper = _Helper(ahead, directory, forked())
    _HELPER = helper
    try:
        yield
    finally:
        _HELPER = None
        helper.close()
