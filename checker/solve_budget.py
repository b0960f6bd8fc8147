"""The solver's deterministic resource budget (z3 `rlimit`), here so that configuration does
not import z3."""

DEFAULT_RLIMIT = 2_000_000
