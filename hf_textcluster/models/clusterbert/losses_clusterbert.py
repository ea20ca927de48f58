"""ClusterBERT's own loss (Eq. 3): the cross-entropy of the head's predictions against the stage's targets. Stage 3's
target, DEC's sharpened distribution, is shared and lives in :mod:`hf_textcluster.training.losses`.
"""

from __future__ import annotations

import torch


def target_cross_entropy(log_probs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """L_cl of ClusterBERT, Eq. 3: CE(P̃, Q) = -(1/N) Σ_i Σ_j q_ij log p̃_ij, the log-predictions for the noised texts
    (N x K) against the targets Q (N x K: one-hot k-means clusters in stage 2, Eq. 5 in stage 3)."""
    return -(targets * log_probs).sum(dim=-1).mean()
