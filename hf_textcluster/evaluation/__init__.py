"""Scores against gold labels (ACC, NMI, ARI, purity, the ``evaluate`` module) and the reference baselines."""
