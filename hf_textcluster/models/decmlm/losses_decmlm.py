"""DEC-MLM's own loss (Huang et al., "Unsupervised Fine-tuning for Text Clustering", COLING 2020): L_m of Eq. 1,
BERT's masked-LM loss, and the training pass that feeds it (the served model never runs its masked-LM head). Its
clustering term, DEC's KL(P‖Q), is shared and lives in :mod:`hf_textcluster.training.losses`.
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


def mlm_logits(model, token_states: torch.Tensor) -> torch.Tensor:
    """Vocabulary logits of a DEC-MLM ``model``'s encoder token states; the decoder is the encoder's input word
    embedding matrix."""
    return model.mlm_head(token_states, model.encoder.get_input_embeddings().weight)


def encode_masked(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    mlm_labels: torch.Tensor,
    token_type_ids: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One encoder pass of a DEC-MLM ``model`` over (masked) inputs for training: the pooled embeddings, and the MLM
    logits and labels at the masked positions only (``mlm_labels != -100``), so the vocabulary projection costs
    little."""
    encoder_inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
    if token_type_ids is not None:
        encoder_inputs["token_type_ids"] = token_type_ids
    token_states = model.encoder(**encoder_inputs).last_hidden_state
    embeddings = model.pool(token_states, attention_mask)
    selected = mlm_labels != -100
    return embeddings, mlm_logits(model, token_states[selected]), mlm_labels[selected]
