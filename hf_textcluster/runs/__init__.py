"""Training runs and what is done to a run folder afterwards: train_clusterer, recipes, baselines, curation."""
