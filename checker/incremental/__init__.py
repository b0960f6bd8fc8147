"""Storage: the disk cache, the warm-path stamps and every cached reading."""
