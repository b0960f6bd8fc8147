"""Scan configuration: what the CLI flags and `[tool.idxcheck]` set."""

from __future__ import annotations

from dataclasses import dataclass, field

from idxcheck.model.budget import DEFAULT_RLIMIT

# The largest file a scan reads, in bytes (`max-file-bytes` in `[tool.idxcheck]`): a larger
# one is a per-file error, told by its size before it is read, and no read takes more than
# this plus one byte, so a file that grows meanwhile is caught too. The largest Python file of
# an SGLang release is under a megabyte; an 8 GB file would otherwise be read whole.
MAX_FILE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Config:
    select: frozenset[str] = frozenset()  # empty: every rule
    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()  # globs matched against paths as given (CLI semantics)
    profile: str = "sglang"
    domain: tuple[str, ...] = ()  # extra constraints
    widths: dict[str, str] = field(default_factory=dict)  # mode -> width overrides
    rlimit: int = DEFAULT_RLIMIT
    strict: bool = False
    # Test-only: raise on any UNSUPPORTED verdict, so fixtures expose extraction gaps.
    raise_on_unsupported: bool = False
    # Set by a configuration file: globs matched against paths relative to `root` (the folder
    # holding the file), so that a file means the same thing from whichever folder it is run.
    rooted_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    root: str | None = None  # None: the current directory
    source: str | None = None  # the configuration file read, if any
    # Where verdicts and scan results are cached (None: no cache). The CLI sets the default
    # folder unless --no-cache is given.
    cache_dir: str | None = None
    # Analyse only the classes of these files (and their subclasses) while reading the tree
    # facts (runners, modes, kernels) from every file: `--changed-only`. None: every class.
    focus: tuple[str, ...] | None = None
    # Worker processes for the analysis (0: one per CPU, up to four, when there is enough to
    # share). The result does not depend on it, so it is not part of any cache key.
    jobs: int = 0
    # The names the scanned paths are displayed by, one per path (None: the paths themselves):
    # `--diff-base` scans the files of a git ref written elsewhere under the names of the work
    # tree's files, so that an unchanged file has the same name and text, and so the same
    # cached analysis, in both scans.
    shown_as: tuple[str, ...] | None = None
    # The largest file read (`MAX_FILE_BYTES`), and whether the walk follows symbolic links that
    # lead out of the scanned paths (`idxcheck.discover`): `follow-links` in the file.
    max_file_bytes: int = MAX_FILE_BYTES
    follow_links: bool = False
    # Folders that links may lead into besides the scanned paths: `--diff-base` scans a ref's
    # files exported elsewhere, the unchanged ones as links to the work tree's.
    link_roots: tuple[str, ...] = ()

    def key_settings(self) -> str:
        """The settings a result depends on, for cache keys (where the cache is, how many
        workers compute the result, and where the files named are read from change nothing
        in it: what is read is keyed by its text, and which files are read by their names)."""
        return repr(
            sorted(
                (k, v)
                for k, v in self.__dict__.items()
                if k not in ("cache_dir", "jobs", "shown_as", "link_roots")
            )
        )

    def rule_enabled(self, code: str) -> bool:
        if code in self.ignore:
            return False
        return not self.select or code in self.select
