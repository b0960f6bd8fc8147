"""Verdicts, ordered from best to worst (CrossHair style): a site's verdict is the worst of
its obligations'. Only REFUTED is a finding by default; UNKNOWN is never a pass."""

from __future__ import annotations

from enum import IntEnum


class Verdict(IntEnum):
    PROVED = 0  # holds for every configuration in the domain
    UNREACHABLE = 1  # the site's path is never taken under the domain
    UNSUPPORTED = 2  # an expression the extractor cannot model
    UNKNOWN = 3  # the solver gave up within its resource limit
    REFUTED = 4  # a counterexample exists

    @property
    def label(self) -> str:
        return self.name
