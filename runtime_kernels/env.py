"""What the runtime companion tells a user who lacks its packages: one constant, shared by the
replay and the regression tests it writes."""

from __future__ import annotations

INSTALL_HINT = "pip install 'idxcheck[runtime]'"
