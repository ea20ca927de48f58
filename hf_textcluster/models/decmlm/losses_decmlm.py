"""DEC-MLM's own loss (Huang et al., "Unsupervised Fine-tuning for Text Clustering", COLING 2020): L_m of Eq. 1,
BERT's masked-LM loss. Its clustering term, DEC's KL(P‖Q), is shared and lives in :mod:`hf_textcluster.training.losses`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


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
