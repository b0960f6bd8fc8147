"""Benchmarks of idxcheck against real SGLang trees (downloaded from PyPI at run time)."""
