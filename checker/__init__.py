"""idxcheck: proves that attention-backend index pointers and grid sizes agree with the
token layout the serving runtime produces, or refutes them with a concrete counterexample."""

__version__ = "0.1.0"
