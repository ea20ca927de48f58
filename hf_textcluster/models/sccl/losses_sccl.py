"""SCCL's own loss (Zhang et al., "Supporting Clustering with Contrastive Learning", NAACL 2021; equation
numbers are the paper's). Its clustering term, DEC's KL(P‖Q), is shared and lives in
:mod:`hf_textcluster.training.losses`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def instance_contrastive_loss(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.5) -> torch.Tensor:
    """Instance-CL / NT-Xent over the 2M augmented views (SCCL Eq. 1-2).

    Row i of ``z1`` and row i of ``z2`` are a positive pair; the other 2M-2 views are negatives. sim is cosine
    similarity; the loss is averaged over all 2M anchors.
    """
    if z1.shape != z2.shape:
        raise ValueError(f"The two views must have the same shape, got {tuple(z1.shape)} and {tuple(z2.shape)}.")
    batch_size = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2], dim=0).float(), dim=-1)
    logits = z @ z.T / temperature
    # Exclude j == i from the denominator (the indicator 1_{j != i} of Eq. 1).
    self_mask = torch.eye(2 * batch_size, dtype=torch.bool, device=z.device)
    logits = logits.masked_fill(self_mask, float("-inf"))
    positives = torch.cat([torch.arange(batch_size, 2 * batch_size), torch.arange(0, batch_size)]).to(z.device)
    return F.cross_entropy(logits, positives)
