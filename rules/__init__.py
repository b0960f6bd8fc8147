"""The rules of idxcheck: one module per invariant, and the ordered registry."""
