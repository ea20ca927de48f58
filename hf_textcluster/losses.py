"""Loss functions, one per paper equation. Pure functions of tensors, shared by all methods.

References (equation numbers are the papers'):
- SCCL: Zhang et al., "Supporting Clustering with Contrastive Learning", NAACL 2021.
- DEC: Xie et al., "Unsupervised Deep Embedding for Clustering Analysis", ICML 2016 (Eq. 3-6 of SCCL,
  Eq. 2-5 of DEC-MLM).
- DEC-MLM: Huang et al., "Unsupervised Fine-tuning for Text Clustering", COLING 2020 (L_m of Eq. 1: BERT's
  masked-LM loss).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

# Eq. 3 (SCCL, DEC-MLM) is also what inference runs: it is defined once, with the cluster heads.
from .layers import student_t_assignment  # noqa: F401


def dec_target_distribution(q: torch.Tensor) -> torch.Tensor:
    """Auxiliary target p_jk = (q_jk² / f_k) / Σ_k' (q_jk'² / f_k'), f_k = Σ_j q_jk (SCCL Eq. 4, DEC-MLM Eq. 5).

    The target is a constant for the optimiser: it is returned detached.
    """
    q = q.detach()
    weight = q.pow(2) / q.sum(dim=0, keepdim=True)
    return weight / weight.sum(dim=1, keepdim=True)


def dec_kl_loss(p: torch.Tensor, q: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Mean over rows of KL(p_j ‖ q_j) = Σ_k p_jk log(p_jk / q_jk) (SCCL Eq. 5-6, DEC-MLM Eq. 2).

    Terms with p_jk = 0 contribute 0 (the limit of p log p).
    """
    p = p.float()
    q = q.float()
    kl = torch.where(p > 0, p * (torch.log(p.clamp_min(eps)) - torch.log(q.clamp_min(eps))), torch.zeros_like(p))
    return kl.sum(dim=1).mean()


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


def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Masked-LM loss L_m (DEC-MLM Eq. 1, as in BERT): mean cross-entropy over the masked positions only.

    ``labels`` holds the original token id at masked positions and ``ignore_index`` elsewhere; ``logits`` has one
    more (vocabulary) dimension than ``labels``. A batch without any masked token gives 0 (not NaN).
    """
    logits = logits.reshape(-1, logits.shape[-1]).float()
    labels = labels.reshape(-1)
    if logits.shape[0] != labels.shape[0]:
        raise ValueError(f"`logits` has {logits.shape[0]} positions but `labels` has {labels.shape[0]}.")
    selected = labels != ignore_index
    if not bool(selected.any()):
        return logits.sum() * 0.0
    return F.cross_entropy(logits[selected], labels[selected])
