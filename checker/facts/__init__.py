"""Tree-wide facts: forward modes, runner widths, stated constraints, kernel launchers."""
