"""Source positions.

Positions are stored the way libcst reports them (1-based lines, 0-based columns) and are
converted once, by each reporter, to what its format wants."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Span:
    path: str
    line: int
    column: int
    end_line: int
    end_column: int

    def label(self) -> str:
        return f"{self.path}:{self.line}:{self.column + 1}"


class Loc:
    """A place in the source whose exact span is computed on first use.

    Computing positions with libcst costs a code-generation pass over the enclosing function,
    so the extractor hands out `Loc`s and only the places that end up in a report pay for
    their span. Compared by identity: one `Loc` per syntax node."""

    __slots__ = ("_resolve", "_resolve_text", "_span", "_text")

    def __init__(
        self, resolve: Callable[[], Span], resolve_text: Callable[[], str] | None = None
    ) -> None:
        self._resolve: Callable[[], Span] | None = resolve
        self._resolve_text = resolve_text
        self._span: Span | None = None
        self._text: str | None = None

    @classmethod
    def fixed(cls, span: Span, text: str = "") -> Loc:
        loc = cls(lambda: span)
        loc._span = span
        loc._resolve = None
        loc._text = text
        return loc

    @property
    def text(self) -> str:
        """The source text at this place, on one line."""
        if self._text is None:
            raw = self._resolve_text() if self._resolve_text is not None else ""
            self._text = " ".join(raw.split())
            self._resolve_text = None
        return self._text

    @property
    def span(self) -> Span:
        if self._span is None:
            assert self._resolve is not None
            self._span = self._resolve()
            self._resolve = None
        return self._span

    def __reduce__(self) -> tuple[object, ...]:
        # Pickled resolved (the tree-facts cache stores runner widths whose terms carry
        # places): the syntax tree a lazy `Loc` would resolve against does not travel.
        return (Loc.fixed, (self.span, self.text))

    def __repr__(self) -> str:
        return f"Loc({self._span!r})" if self._span is not None else "Loc(<lazy>)"
