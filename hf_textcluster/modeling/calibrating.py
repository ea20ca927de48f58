"""Fitting a clusterer's calibration on its training texts: what ``model.calibrate(texts)`` runs.

Package-only: no shipped module imports this one, so a pushed repository serves a stored calibration
(:mod:`~hf_textcluster.modeling.calibration`: the confidence, the outlier distances) without the code that fits it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from .calibration import QUANTILE_LEVELS, ClusterCalibration, centre_margins
from .encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from .validation import check_scalar


def calibrate(
    model,
    texts: Sequence[str],
    sample_size: int | None = 10_000,
    random_state: int | None = 0,
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    show_progress_bar: bool | None = None,
    precision: str | torch.dtype | None = "auto",
    *,
    embeddings: np.ndarray | torch.Tensor | None = None,
) -> Any:
    """Calibrate the confidence and the outlier distances on a seeded sample of ``texts`` (use the training texts).

    One encoding pass, or none when ``embeddings`` are given. Stores the result in the model's ``calibration``
    buffers (saved with the weights) and ``config.num_calibration_texts``.

    Afterwards ``predict_with_confidence`` and the pipeline's ``confidence`` / ``flag_outliers`` work: a text's
    confidence is the share of these calibration texts whose centre margin is <= its own (how much nearer its
    cluster's centre than the nearest other centre, relative to both distances; see ``calibrated_confidence``),
    so it spreads over [0, 1] whatever partition the model serves; a text is an outlier when it is farther (cosine
    distance of its pooled embedding) from its cluster's centre than ``outlier_quantile`` of that cluster's
    calibration texts (a cluster with fewer than ``MIN_CLUSTER_SIZE``, 20, uses the distances of all of them).
    What every clusterer's ``model.calibrate(texts)`` runs.

    Args:
        texts: the texts to calibrate on (non-blank strings).
        sample_size: at most this many of them, a seeded sample (``None``: all).
        random_state: the sample's seed.
        batch_size: texts per encoder call.
        show_progress_bar: a tqdm bar; ``None`` shows one for large inputs only.
        precision: as for ``embed``.
        embeddings: ``embed(texts)`` (N x hidden, the same order), when the caller has them already: the
            sample's rows are taken from them instead of encoding the texts again (the heads run on them as on
            a pass's own embeddings, in fp32).

    Returns:
        The model itself (save it with ``save_pretrained`` to keep the calibration).

    Raises:
        ValueError: fewer than 2 texts, a bad ``sample_size``, or ``embeddings`` of another shape than
            N x hidden.

    Example:
        >>> model.calibrate(training_texts).save_pretrained("runs/old-model")  # doctest: +SKIP
    """
    model._check_clusters_initialized()
    texts, precision = model._serving_arguments(texts, batch_size, precision)
    check_scalar(sample_size, "sample_size", int, min_val=2, allow_none=True, hint="None: all texts")
    if len(texts) < 2:
        raise ValueError(f"Calibration needs at least 2 texts, got {len(texts)}.")
    if embeddings is not None:  # checked against the texts and the encoder, before any work
        embeddings = torch.as_tensor(embeddings).detach().cpu()
        hidden = model.calibration.centres.shape[1]
        if embeddings.ndim != 2 or embeddings.shape != (len(texts), hidden):
            raise ValueError(
                f"`embeddings` must be `model.embed(texts)`, {len(texts)} x {hidden}; got shape "
                f"{tuple(embeddings.shape)}. Pass the embeddings of the same texts, or leave `embeddings` out to "
                "encode them."
            )
    rows = np.arange(len(texts))
    if sample_size is not None and len(texts) > sample_size:
        rows = np.sort(np.random.default_rng(random_state).choice(len(texts), size=sample_size, replace=False))
        texts = [texts[int(i)] for i in rows]
    if embeddings is None:
        outputs = model._encode_texts(texts, batch_size, show_progress_bar, precision, ("embeddings", "cluster_probs"))
        sample, probs = outputs.embeddings, outputs.cluster_probs
    else:
        sample = embeddings.float()[torch.from_numpy(rows)]
        with torch.no_grad():
            probs = model.cluster_probabilities(sample.to(model.device)).float().cpu()
    _fit(model.calibration, sample, probs)
    model.config.num_calibration_texts = sample.shape[0]
    model.config.confidence_measure = "centre_margin"
    return model


# A cluster with fewer calibration members than this has too few distances for its own tail: its outlier threshold
# comes from the distances of all calibration texts to their own clusters' centres (pooled) instead.
MIN_CLUSTER_SIZE = 20


@torch.no_grad()
def _fit(calibration: ClusterCalibration, embeddings: torch.Tensor, probs: torch.Tensor) -> None:
    """Fit ``calibration``'s buffers on the pooled embeddings (N x d) and served soft assignments (N x K) of the
    calibration texts."""
    num_clusters = calibration.centres.shape[0]
    levels = torch.linspace(0, 1, QUANTILE_LEVELS, dtype=torch.float64)
    probs = probs.double().cpu()
    clusters = probs.argmax(dim=-1)
    sizes = torch.bincount(clusters, minlength=num_clusters)
    weights = nn.functional.one_hot(clusters, num_clusters).double()
    # A cluster no calibration text falls in still needs a centre: the probability-weighted mean of all texts.
    empty = sizes == 0
    weights[:, empty] = probs[:, empty]
    unit = nn.functional.normalize(embeddings.double().cpu(), dim=-1)
    centres = nn.functional.normalize(weights.T @ unit, dim=-1)
    distances = 1 - (unit * centres[clusters]).sum(dim=-1)
    pooled = torch.quantile(distances, levels)
    per_cluster = [
        torch.quantile(distances[clusters == k], levels) if sizes[k] >= MIN_CLUSTER_SIZE else pooled
        for k in range(num_clusters)
    ]
    calibration.centres.copy_(centres)
    calibration.margin_quantiles.copy_(torch.quantile(centre_margins(unit, centres, clusters).double(), levels))
    calibration.distance_quantiles.copy_(torch.stack(per_cluster))
    calibration.cluster_sizes.copy_(sizes)
