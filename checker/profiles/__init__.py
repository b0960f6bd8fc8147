"""Project profiles: what a project's code does not say, as typed data (one module per project)."""
