"""The analysis helper of a scan, forked by the command's entry before the command line is
parsed (`idxcheck.entry`).

A scan with the cache hands its files to a helper process that has loaded libcst and the
analysis meanwhile (`workers.analysis_helper`). Forked as the scan starts, the helper began
loading only once the scan's process had imported the command line, alone on the machine:
forked here, it loads beside that import (bench/RESULTS.md, "The helper forked by the entry",
has what it gained). It is told what the scan is for (`workers.analysis_helper`, the first
message on its pipe), or killed where the scan uses no helper (`discard`); a process that
exits without either leaves it reading the end of its pipe, which stops it.

Imported by the entry before anything else of idxcheck: it imports nothing of idxcheck as it
loads (the helper, once forked, imports `workers`)."""

from __future__ import annotations

import gc
import itertools
import os
import signal

# The forked helper: its process id, the end of the pipe to it and the end of the pipe from
# it; None before a fork, after `take` and after `discard`.
_FORKED: tuple[int, int, int] | None = None

# The command's process (and its helper) collects cycles rarely, as its workers do
# (`idxcheck.parallel.workers.WORKER_GC_THRESHOLD`): what a scan allocates lives until its end
# (files, blocks, tree facts), so a collection of the young generation finds little to free
# (bench/RESULTS.md, "Measurements that stood in code comments"). Set by `idxcheck.cli.entry`;
# kept here, where the entry's helper is forked before that module is imported.
COMMAND_GC_THRESHOLD = (500_000, 1_000, 1_000)

# Options after which no helper is used: a scan without the cache, or in one process.
_NO_HELPER = ("--no-cache", "-j1", "--jobs=1")


def wanted(argv: list[str]) -> bool:
    """Whether the command line `argv` is a scan that may use a helper: fork is there, two
    CPUs or more, and no option rules it out (`--no-cache`, one job). The rest (a cache
    folder that can be made, a focus, libcst not loaded) is judged where the helper is used."""
    if not argv or argv[0] != "scan" or not hasattr(os, "fork"):
        return False
    if any(arg in _NO_HELPER for arg in argv):
        return False
    for option, value in itertools.pairwise(argv):
        if option in ("-j", "--jobs") and value == "1":
            return False
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cpus or 1) >= 2


def fork_helper() -> None:
    """Fork the helper now; it loads libcst and the analysis, then waits for its task."""
    global _FORKED
    if _FORKED is not None:
        return
    to_child, send = os.pipe()
    receive, from_child = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to be had: the scan forks its helper later, or none
        for end in (to_child, send, receive, from_child):
            os.close(end)
        return
    if pid == 0:  # the helper: it never returns into the entry's code
        status = 1
        try:
            os.close(send)
            os.close(receive)
            gc.set_threshold(*COMMAND_GC_THRESHOLD)
            _quiet()
            from idxcheck.parallel.workers import early_helper_main

            early_helper_main(to_child, from_child)
            status = 0
        finally:
            os._exit(status)
    os.close(to_child)
    os.close(from_child)
    _FORKED = (pid, send, receive)


def _quiet() -> None:
    """The helper's standard streams on the null device: it writes nothing there, and a
    reader of the scan's output (a pipe) sees its end when the scan exits, not when the
    helper does."""
    null = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        os.dup2(null, stream)
    os.close(null)


def take() -> tuple[int, int, int] | None:
    """The forked helper (its process id and the two ends of its pipes) for the scan to use
    and stop, or None where none was forked."""
    global _FORKED
    found, _FORKED = _FORKED, None
    return found


def discard() -> None:
    """Stop the helper where the scan did not take it."""
    found = take()
    if found is None:
        return
    pid, send, receive = found
    os.close(send)
    os.close(receive)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
