"""Reading the scanned tree: the walk, the prefilter, file texts, positions and the class index."""
