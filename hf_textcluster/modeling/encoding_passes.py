"""A clusterer's encoding passes: their output, the batch size of whole-list passes and the length-sorted pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers.utils import ModelOutput, logging

logger = logging.get_logger(__name__)

# Encoding passes are inference: a batch far larger than a training batch keeps the matrix products efficient.
DEFAULT_ENCODE_BATCH_SIZE = 128


@dataclass
class ClusteringOutput(ModelOutput):
    """Output of a clusterer's pass: the training ``loss``, pooled ``embeddings`` (batch x hidden), the soft assignment
    ``cluster_probs`` (batch x K), its log as ``logits`` (``Trainer`` metrics work) and, set by ``cluster_batch`` on a
    calibrated model, the cosine ``distance`` (batch,) to the cluster's centre and the calibrated ``confidence``."""

    loss: torch.Tensor | None = None
    embeddings: torch.Tensor | None = None
    cluster_probs: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    distance: torch.Tensor | None = None
    confidence: torch.Tensor | None = None


def encode_sorted(model: Any, texts, batch_size, show_progress_bar, precision, fields) -> ClusteringOutput:
    """``model._cluster_batch`` over ``texts`` in length-sorted batches: ``fields`` as CPU tensors in input order."""
    with_clusters = fields != ("embeddings",)
    was_training = model.training
    model.eval()
    # Sort by length so that each batch pads to similar lengths (as sentence-transformers does).
    order = np.argsort([-len(t) for t in texts], kind="stable")
    if show_progress_bar is None:
        show_progress_bar = len(texts) > 10 * batch_size and logger.getEffectiveLevel() <= logging.INFO
    batches = []
    try:
        for start in tqdm(range(0, len(texts), batch_size), desc="Encoding", disable=not show_progress_bar):
            batch = [texts[i] for i in order[start : start + batch_size]]
            inputs = {k: v.to(model.device) for k, v in model.tokenize(batch).items()}
            with torch.inference_mode():
                output = model._cluster_batch(inputs, precision, with_clusters)
            # on the CPU batch by batch: a corpus' outputs never pile up on an accelerator
            batches.append({k: output[k].float().cpu() for k in fields if output[k] is not None})
    finally:
        model.train(was_training)
    # outside inference mode: cat and the reordering give ordinary tensors (callers may fit buffers on them)
    where = torch.from_numpy(np.argsort(order, kind="stable"))
    return ClusteringOutput(**{k: torch.cat([batch[k] for batch in batches])[where] for k in batches[0]})
