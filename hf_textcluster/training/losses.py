"""The losses two or more methods share (DEC's target and KL). Pure functions of tensors. A loss that belongs to
one paper lives beside its method, in ``models/<method>/losses_<method>.py``.

References (equation numbers are the papers'):
- SCCL: Zhang et al., "Supporting Clustering with Contrastive Learning", NAACL 2021.
- DEC: Xie et al., "Unsupervised Deep Embedding for Clustering Analysis", ICML 2016 (Eq. 3-6 of SCCL,
  Eq. 2-5 of DEC-MLM).
- DEC-MLM: Huang et al., "Unsupervised Fine-tuning for Text Clustering", COLING 2020.
- DEC-CRL: Yin et al., "Improving Deep Embedded Clustering via Learning Cluster-level Representations", COLING 2022
  (Eq. 5-9), and ClusterBERT's stage 3 (Eq. 5).
"""

from __future__ import annotations

import torch


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
