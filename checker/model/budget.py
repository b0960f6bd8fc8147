"""The solver's deterministic resource budget (z3 `rlimit`), here so that configuration does
not import z3."""

DEFAULT_RLIMIT = 20_000_000
