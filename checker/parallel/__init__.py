"""Execution: worker processes, the forked helper and background reads."""
