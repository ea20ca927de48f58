"""Everything label-free that chooses: the number of clusters, the served partition, refinement."""
