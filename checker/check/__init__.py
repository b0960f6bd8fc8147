"""Rules x tree facts -> obligations -> verdicts -> findings: pure, no processes, no disk."""
