"""The few git operations idxcheck needs: the repository holding a path, and a ref's files
exported into a folder. git is run as a subprocess (no library); failures become `GitError`
with git's own message."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

# subprocess, tarfile and tempfile are loaded on use: a pre-commit run with a project file
# loads this module (for `GitError`) and runs no git at all, so it skips their import
# (bench/RESULTS.md, "What each change did", and "Measurements that stood in code comments").
if TYPE_CHECKING:
    import subprocess


class GitError(Exception):
    pass


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess[bytes]:
    import subprocess

    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise GitError("git is not installed") from None


def toplevel(folder: str) -> str | None:
    """The work tree root of the repository that holds `folder`, or None outside one."""
    proc = _git(["rev-parse", "--show-toplevel"], folder)
    if proc.returncode != 0:
        return None
    return os.path.realpath(proc.stdout.decode().strip())


def resolve_commit(top: str, ref: str) -> str:
    proc = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], top)
    if proc.returncode != 0:
        raise GitError(f"not a commit in {top}: {ref!r}")
    return proc.stdout.decode().strip()


def exists_at(top: str, commit: str, rel: str) -> bool:
    spec = f"{commit}^{{tree}}" if rel in ("", ".") else f"{commit}:{rel}"
    return _git(["cat-file", "-e", spec], top).returncode == 0


def export(top: str, commit: str, rels: list[str], target: str) -> list[str]:
    """Write the files of `commit` under the given paths (relative to `top`) into `target`,
    and make its symbolic links again; what is left out (an entry that would land outside
    `target`, a link that leads out of it) is named in the notes returned."""
    listed = _listed(top, commit, rels)
    notes: dict[str, str] = {}
    entries = _entries(listed, notes)
    _extract(top, commit, rels, target, notes)
    _make_links(top, [(p, o) for p, mode, o in entries if mode == LINK], target, set(), notes)
    return _described(notes)


# More files than this changed since the ref: they are all written from the archive (a list of
# paths this long is near what a command line takes on some systems).
MAX_WRITTEN = 1_000
# The files a scan reads in the folders it walks (`idxcheck.discover`).
SCANNED = (".py", ".pyi")
LINK = b"120000"
# Links followed, at most, to resolve one link's target (Linux's own limit is 40).
MAX_FOLLOWED = 40


def export_linked(top: str, commit: str, rels: list[str], target: str) -> list[str]:
    """`export`, with each file that the work tree holds unchanged since `commit` (`git diff`
    lists it not) linked instead of written: a symbolic link in `target` to the work tree's
    file, which holds the same text. The changed files (and files deleted since) come from
    `git archive`; the repository's own symbolic links are made again as they are at
    `commit`, so that they lead to the ref's files; and only the files a scan reads are
    exported. Linking is cheaper than writing a whole tree (bench/RESULTS.md, "Measurements
    that stood in code comments"). Written whole where links cannot be made (some Windows
    accounts).

    The ref's tree is input like any other: nothing is created outside `target`, and no link
    made there leads out of it (an entry named with `..` or `/`, a link to an absolute path
    or one that climbs out, also through other links, two entries of one name). Such entries
    are left out, and the notes returned name them."""
    listed = _listed(top, commit, rels)
    specs = [r for r in rels if r not in ("", ".")] or ["."]
    changed = _git(["diff", "--name-only", "--no-renames", "-z", commit, "--", *specs], top)
    if changed.returncode != 0:
        raise GitError(f"git diff {commit}: {changed.stderr.decode().strip()}")
    differ = {os.fsdecode(name) for name in changed.stdout.split(b"\0")}
    notes: dict[str, str] = {}
    linked: list[str] = []
    written: list[str] = []
    links: list[tuple[str, str]] = []  # the repository's symbolic links: path, object
    for path, mode, obj in _entries(listed, notes):
        if mode == LINK:
            links.append((path, obj))
        elif path.endswith(SCANNED) or path in rels:  # the scan reads no other file
            (written if path in differ else linked).append(path)
    if len(written) > MAX_WRITTEN:
        return export(top, commit, rels, target)
    try:
        if written:
            _extract(top, commit, [f":(literal){path}" for path in written], target, notes)
        _link_files(top, linked, target, notes)
    except OSError:
        import shutil

        shutil.rmtree(target, ignore_errors=True)
        os.makedirs(target, exist_ok=True)
        return export(top, commit, rels, target)
    # Links last: no file or folder is made after them, so none is made through one.
    _make_links(top, links, target, set(linked), notes)
    return _described(notes)


def _listed(top: str, commit: str, rels: list[str]) -> bytes:
    specs = [r for r in rels if r not in ("", ".")] or ["."]
    listed = _git(["ls-tree", "-r", "-z", "--full-name", commit, "--", *specs], top)
    if listed.returncode != 0:
        raise GitError(f"git ls-tree {commit}: {listed.stderr.decode().strip()}")
    return listed.stdout


def _entries(listed: bytes, notes: dict[str, str]) -> list[tuple[str, bytes, str]]:
    """The blobs `git ls-tree -r -z` listed (path, mode, object) whose names are safe to make
    under the export's folder; the others go to `notes`."""
    found: list[tuple[str, bytes, str]] = []
    seen: set[str] = set()
    for entry in listed.split(b"\0"):
        meta, tab, name = entry.partition(b"\t")
        fields = meta.split(b" ")
        if not tab or len(fields) != 3 or fields[1] != b"blob":
            continue  # a submodule's commit: not in an archive either
        path = os.fsdecode(name)
        problem = unsafe_name(path)
        if problem is None and path in seen:
            problem = "a second entry of the same name"
        if problem is not None:
            notes[path] = problem
            continue
        seen.add(path)
        found.append((path, fields[0], fields[2].decode()))
    # A folder of the tree that is also a file or link of it (a tree git's own commands do
    # not write): made as a folder, for the files under it.
    folders: set[str] = set()
    for path in seen:
        cut = path.rfind("/")
        while cut > 0 and path[:cut] not in folders:
            folders.add(path[:cut])
            cut = path.rfind("/", 0, cut)
    kept = []
    for path, mode, obj in found:
        if path in folders:
            notes[path] = "also the name of a folder in this tree"
        else:
            kept.append((path, mode, obj))
    return kept


def unsafe_name(path: str) -> str | None:
    """Why a path from a git tree cannot be made under a folder as it is named (it would
    land elsewhere), or None."""
    if "\0" in path:
        return "a name with a NUL character"
    if path.startswith("/") or (os.sep != "/" and ("\\" in path or ":" in path)):
        return "an absolute name"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return "a name with an empty, `.` or `..` part"
    return None


def _within(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # another drive
        return False


def _extract(top: str, commit: str, specs: list[str], target: str, notes: dict[str, str]) -> None:
    """The regular files and folders of `git archive` for `specs` written into `target`:
    links are made by `_make_links`, and a member that would land outside is left out."""
    import subprocess
    import tarfile
    import tempfile

    paths = [r for r in specs if r not in ("", ".")]
    root = os.path.realpath(target)

    def member(info: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        name = info.name.rstrip("/") if info.isdir() else info.name
        if info.issym() or (info.isdir() and name in ("", ".")):
            return None  # made from the tree's listing, checked there
        problem = unsafe_name(name)
        if problem is None and not (info.isfile() or info.isdir()):
            problem = "neither a file, a folder nor a symbolic link"
        if problem is None and hasattr(tarfile, "data_filter"):
            try:
                return tarfile.data_filter(info, dest)  # also: the place, resolved, is inside
            except tarfile.FilterError as exc:
                problem = str(exc)
        elif problem is None and not _within(os.path.realpath(os.path.join(root, name)), root):
            problem = "would be written outside the folder"
        if problem is not None:
            notes.setdefault(name, problem)
            return None
        info.mode &= 0o755  # as the data filter does: no set-id or group/other write bits
        return info

    with tempfile.TemporaryFile() as archive:
        proc = subprocess.run(
            [
                "git",
                "archive",
                "--format=tar",
                commit,
                *(["--", *paths] if paths and len(paths) == len(specs) else []),
            ],
            cwd=top,
            stdout=archive,
            stderr=subprocess.PIPE,
            check=False,
        )
        if proc.returncode != 0:
            raise GitError(f"git archive {commit}: {proc.stderr.decode().strip()}")
        archive.seek(0)
        with tarfile.open(fileobj=archive) as tar:
            # The filter argument exists from Python 3.12 and its backports (3.10.12, 3.11.4);
            # before, the members are filtered here.
            if hasattr(tarfile, "data_filter"):
                tar.extractall(target, filter=member)
            else:  # pragma: no cover - Python before the extraction filters
                tar.extractall(target, [m for m in tar if member(m, target) is not None])


def _folder(path: str, root: str, made: set[str]) -> None:
    """The folder of `path` made (once), and checked to lie inside `root`."""
    folder = os.path.dirname(path)
    if folder in made:
        return
    os.makedirs(folder, exist_ok=True)
    if not _within(os.path.realpath(folder), root):
        raise FileExistsError(f"{folder} leads outside the folder")
    made.add(folder)


def _link_files(top: str, linked: list[str], target: str, notes: dict[str, str]) -> None:
    """Each unchanged file linked to the work tree's. An entry whose place is taken (or is
    not a folder inside) is left out; another failure to link is raised."""
    root = os.path.realpath(target)
    made: set[str] = set()
    for path in linked:
        link = os.path.join(target, path)
        try:
            _folder(link, root, made)
            os.symlink(os.path.join(top, path), link)
        except (FileExistsError, NotADirectoryError) as exc:
            notes[path] = f"its place is taken ({exc.strerror or exc})"


def _make_links(
    top: str, links: list[tuple[str, str]], target: str, linked: set[str], notes: dict[str, str]
) -> None:
    """The ref's symbolic links made in `target`, each that leads inside it: resolved through
    the ref's other links (as the system will follow them), refused when absolute or when
    they climb out; and checked once made (the links to the work tree's files aside)."""
    root = os.path.realpath(target)
    work = os.path.realpath(top)
    table = dict(_link_targets(top, links))
    made: set[str] = set()
    created: list[str] = []
    for path, pointed in table.items():
        problem = _link_problem(path, pointed, table)
        link = os.path.join(target, path)
        if problem is None:
            try:
                _folder(link, root, made)
                os.symlink(pointed, link)
                created.append(path)
            except OSError as exc:
                problem = f"cannot be made ({exc.strerror or exc})"
        if problem is not None:
            notes[path] = problem
    for path in created:
        link = os.path.join(target, path)
        real = os.path.realpath(link)
        if _within(real, root):
            continue
        if _within(real, work) and os.path.relpath(real, work).replace(os.sep, "/") in linked:
            continue  # a link to a file linked to the work tree's
        os.unlink(link)
        notes[path] = "a link that leads out of the folder once followed"


class _Outside(Exception):
    pass


def _link_problem(path: str, pointed: str, table: dict[str, str]) -> str | None:
    if not pointed or "\0" in pointed:
        return "an empty link" if not pointed else "a link with a NUL character"
    try:
        _resolve(path.split("/")[:-1], pointed, table, [MAX_FOLLOWED])
    except _Outside as exc:
        return str(exc)
    return None


def _resolve(start: list[str], pointed: str, table: dict[str, str], left: list[int]) -> list[str]:
    """Where a link in the folder `start` (parts of its path) that holds `pointed` leads, the
    links of `table` (path -> what it holds) followed as the system follows them: a `..`
    after a link leaves the folder the link leads to."""
    if pointed.startswith("/") or (os.sep != "/" and ("\\" in pointed or ":" in pointed)):
        raise _Outside("a link to an absolute path")
    here = list(start)
    for part in pointed.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not here:
                raise _Outside("a link that leads out of the folder")
            here.pop()
            continue
        here.append(part)
        followed = table.get("/".join(here))
        if followed is not None:
            left[0] -= 1
            if left[0] < 0:
                raise _Outside("a loop of links (or a chain too long)")
            here = _resolve(here[:-1], followed, table, left)
    return here


def _described(notes: dict[str, str]) -> list[str]:
    return [f"{_shown(path)}: {reason}" for path, reason in sorted(notes.items())]


def _shown(path: str) -> str:
    return path if path.isprintable() else ascii(path)


def _link_targets(top: str, links: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each symbolic link's path and what it points to, read from its object."""
    if not links:
        return []
    import subprocess

    request = "".join(f"{obj}\n" for _, obj in links).encode()
    proc = subprocess.run(
        ["git", "cat-file", "--batch"], cwd=top, input=request, capture_output=True, check=False
    )
    if proc.returncode != 0:
        raise GitError(f"git cat-file: {proc.stderr.decode().strip()}")
    found: list[tuple[str, str]] = []
    data = proc.stdout
    at = 0
    for path, obj in links:
        end = data.find(b"\n", at)
        header = data[at:end].split(b" ") if end >= 0 else []
        if len(header) != 3 or not header[2].isdigit():
            raise GitError(f"git cat-file: cannot read object {obj} of {path}")
        size = int(header[2])
        found.append((path, os.fsdecode(data[end + 1 : end + 1 + size])))
        at = end + 1 + size + 1  # the object, then a line end
    return found
