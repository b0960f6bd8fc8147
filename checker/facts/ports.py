"""What the tree facts are handed to keep their readings from one scan to the next."""

from __future__ import annotations

from typing import Any, Protocol

from idxcheck.source.files import SourceFile


class FileMemo(Protocol):
    """One kind of reading per file text (`idxcheck.incremental.readings.FileReadings`)."""

    def get(self, source: SourceFile) -> Any:
        """What was read from this text before, or None."""
        ...

    def put(self, source: SourceFile, reading: object) -> None: ...
