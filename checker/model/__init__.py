"""Frozen data shared by every layer: spans, verdicts, findings, settings, kinds."""
