"""Reporters: one module per output format, each rendering a `ScanResult`."""
