"""What a clusterer's encoding passes share: the output of a pass, the batch size of whole-list passes and the
length-sorted pass itself (:func:`encode_sorted`), used by the model base, the calibration and the package's edits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers.utils import ModelOutput, logging

logger = logging.get_logger(__name__)

# Encoding passes (k-means initialisation, targets, evaluation, predict) are inference: a batch far larger than a
# training batch keeps the matrix products efficient; texts are sorted by length so each batch pads little.
DEFAULT_ENCODE_BATCH_SIZE = 128


@dataclass
class ClusteringOutput(ModelOutput):
    """Output of a clusterer's forward pass.

    Args:
        loss: the training loss, when computed.
        embeddings: pooled sentence embeddings (batch x hidden).
        cluster_probs: soft cluster assignment q (batch x K); rows sum to 1.
        logits: ``log(cluster_probs)``, so that ``argmax(logits)`` is the cluster (``Trainer`` metrics work).
        distance, confidence: (batch,) the cosine distance to the cluster's calibrated centre and the calibrated
            confidence in [0, 1]; set by ``cluster_batch`` on a calibrated model only.
    """

    loss: torch.Tensor | None = None
    embeddings: torch.Tensor | None = None
    cluster_probs: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    distance: torch.Tensor | None = None
    confidence: torch.Tensor | None = None


def encode_sorted(model: Any, texts, batch_size, show_progress_bar, precision, fields) -> ClusteringOutput:
    """A model's pass over ``texts`` in length-sorted batches (``model._cluster_batch`` on each): the ``fields`` asked
    for, as CPU tensors in the order of ``texts``; what a model's ``encoding_passes`` runs, when it has one."""
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
