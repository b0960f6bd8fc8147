"""Writing a report or a baseline: the whole file or nothing.

The text goes to a temporary file in the target's folder, is synced, and replaces the target
in one `os.replace`; on any failure (a full disk, a folder that cannot be written or created)
the temporary file is removed, the target is left as it was, and `OutputError` says why. A
target that exists and is not a regular file (`/dev/stdout`, `/dev/null`, a pipe) cannot be
replaced and is written directly; a symbolic link is followed, so the file it names is
replaced and the link stays."""

from __future__ import annotations

import os
import stat


class OutputError(Exception):
    pass


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _new_file_mode() -> int:
    # What `open(path, "w")` would give: 0o666 less the umask (which can only be read by
    # setting it).
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_text(path: str, text: str) -> None:
    data = text.encode("utf-8")
    try:
        folder = os.path.dirname(path)
        if folder:
            try:
                os.makedirs(folder, exist_ok=True)
            except FileExistsError:  # a file of that name, not a folder
                raise OutputError(f"cannot write {path}: {folder} is not a folder") from None
        try:
            info = os.stat(path)
        except FileNotFoundError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise OutputError(f"cannot write {path}: it is a folder")
        if info is not None and not stat.S_ISREG(info.st_mode):
            with open(path, "wb") as handle:
                handle.write(data)
            return
        _replace(os.path.realpath(path), data, info)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {_reason(exc)}") from None


def _replace(target: str, data: bytes, existing: os.stat_result | None) -> None:
    folder, name = os.path.split(target)
    import tempfile  # only when a file is written: a scan to standard output needs none

    descriptor, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())  # a full disk may only say so here
        mode = stat.S_IMODE(existing.st_mode) if existing is not None else _new_file_mode()
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
