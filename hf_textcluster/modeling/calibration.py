"""A clusterer's calibration: a confidence that means something, and outlier distances.

A method's soft assignment q (``score``) says little on its own: nearly flat for a Student's t kernel, saturated at 1.0
for a linear head. :func:`calibrate` records, on a sample of the training texts, buffers that mean the same whatever
partition is served (saved in ``model.safetensors``): each cluster's **centre** (mean direction of its members'
L2-normalised embeddings); the **confidence**, a text's relative margin ``(d_other - d_own) / (d_other + d_own)`` of
cosine distances to its own and the nearest other centre, ranked against the calibration texts' margins (0.8: nearer
its own cluster, relative to the next, than 80% of the training texts: a threshold keeps a known share of texts); and
**outliers**: farther from the cluster's centre than its ``outlier_quantile`` (e.g. 0.99) of its members. Both
distributions are kept as quantiles at ``QUANTILE_LEVELS`` evenly spaced levels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from .encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from .validation import check_scalar

QUANTILE_LEVELS = 101
DEFAULT_OUTLIER_QUANTILE = 0.99


def check_outlier_quantile(value) -> float:
    """``value`` as a float in (0, 1], or a clear error naming `outlier_quantile`."""
    hint = "the share of a cluster's training texts that are not outliers, e.g. 0.99"
    check_scalar(value, "outlier_quantile", (int, float), min_val=0, max_val=1, include_boundaries="right", hint=hint)
    return float(value)


def centre_margins(embeddings: torch.Tensor, centres: torch.Tensor, clusters: torch.Tensor) -> torch.Tensor:
    """Per embedding, ``(d_other - d_own) / (d_other + d_own)`` in [-1, 1] (cosine distances to its cluster's centre
    and the nearest other one): 1 on its own centre, 0 halfway, negative nearer another centre."""
    unit = nn.functional.normalize(embeddings.float(), dim=-1)
    distances = 1 - unit @ centres.to(unit.device, torch.float32).T
    own = distances.gather(1, clusters.view(-1, 1).to(unit.device)).squeeze(1)
    others = distances.scatter(1, clusters.view(-1, 1).to(unit.device), float("inf")).min(dim=1).values
    return (others - own) / (others + own).clamp_min(1e-12)


def quantile_rank(values: torch.Tensor, quantiles: torch.Tensor) -> torch.Tensor:
    """The share (in [0, 1]) of a distribution that is <= each of ``values``, from its quantiles at evenly spaced
    levels (linear between levels; 0 below the smallest, 1 from the largest on; ties count as <=)."""
    quantiles = quantiles.to(values.device, torch.float32)
    values = values.float()
    steps = quantiles.shape[-1] - 1
    above = torch.searchsorted(quantiles, values.contiguous(), right=True)  # how many quantiles are <= the value
    low = (above - 1).clamp(0, steps)
    high = above.clamp(max=steps)
    span = quantiles[high] - quantiles[low]
    fraction = torch.where(span > 0, (values - quantiles[low]) / span.clamp_min(1e-12), torch.zeros_like(values))
    rank = (low.float() + fraction.clamp(0, 1)) / steps
    return torch.where(above == 0, torch.zeros_like(rank), torch.where(above > steps, torch.ones_like(rank), rank))


def quantile_at(quantiles: torch.Tensor, level: float) -> torch.Tensor:
    """The value at ``level`` (in [0, 1]) of distributions given by their quantiles (..., L) at evenly spaced levels."""
    steps = quantiles.shape[-1] - 1
    position = round(level * steps, 9)  # 0.99 * 100 must be exactly level 99
    low = min(int(position), steps - 1)
    fraction = position - low
    return quantiles[..., low] + fraction * (quantiles[..., low + 1] - quantiles[..., low])


class ClusterCalibration(nn.Module):
    """Buffers only (zero until fitted): ``margin_quantiles`` (L), ``centres`` (K x d, unit vectors),
    ``distance_quantiles`` (K x L, members' cosine distances to their centre), ``cluster_sizes`` (K)."""

    # the buffers' types, for type checkers (nn.Module's attribute lookup would say "Tensor | Module")
    margin_quantiles: torch.Tensor
    centres: torch.Tensor
    distance_quantiles: torch.Tensor
    cluster_sizes: torch.Tensor

    def __init__(self, num_clusters: int, embedding_dim: int):
        super().__init__()
        self.register_buffer("margin_quantiles", torch.zeros(QUANTILE_LEVELS))
        self.register_buffer("centres", torch.zeros(num_clusters, embedding_dim))
        self.register_buffer("distance_quantiles", torch.zeros(num_clusters, QUANTILE_LEVELS))
        self.register_buffer("cluster_sizes", torch.zeros(num_clusters))

    def reset_own_parameters(self) -> None:
        for buffer in self.buffers():
            nn.init.zeros_(buffer)

    def confidence(self, embeddings: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
        """Per text: the share of calibration texts whose centre margin is <= its own."""
        clusters = probs.argmax(dim=-1)
        return quantile_rank(centre_margins(embeddings, self.centres, clusters), self.margin_quantiles)

    def distance(self, embeddings: torch.Tensor, clusters: torch.Tensor) -> torch.Tensor:
        """Cosine distance of each pooled embedding to the centre of its cluster."""
        unit = nn.functional.normalize(embeddings.float(), dim=-1)
        return 1 - (unit * self.centres.to(unit.device, torch.float32)[clusters]).sum(dim=-1)

    def thresholds(self, outlier_quantile: float) -> torch.Tensor:
        """Per cluster (K), the distance beyond which a text is an outlier: the ``outlier_quantile`` of its members'."""
        return quantile_at(self.distance_quantiles.float(), outlier_quantile)


def predict_with_confidence(
    model,
    texts: Sequence[str],
    outlier_quantile: float = DEFAULT_OUTLIER_QUANTILE,
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    show_progress_bar: bool | None = None,
    precision: str | torch.dtype | None = "auto",
) -> dict[str, np.ndarray]:
    """A calibrated model's arrays (length N; ``pandas.DataFrame(result)`` makes a table): ``cluster`` (never -1),
    ``probability`` (the pipeline's ``score``), ``confidence`` (share of calibration texts whose centre margin is <=
    this text's), ``distance`` (cosine, to the cluster's centre) and ``is_outlier`` (``distance`` beyond the
    ``outlier_quantile`` of the cluster's calibration texts'). Other arguments as for ``embed``; an uncalibrated model
    raises a ValueError."""
    model._require_calibration()
    outlier_quantile = check_outlier_quantile(outlier_quantile)
    model._check_clusters_initialized()
    texts, precision = model._serving_arguments(texts, batch_size, precision)
    fields = ("cluster_probs", "distance", "confidence")
    outputs = model._encode_texts(texts, batch_size, show_progress_bar, precision, fields)
    probability, clusters = outputs.cluster_probs.max(dim=-1)
    return {
        "cluster": clusters.numpy(),
        "probability": probability.numpy(),
        "confidence": outputs.confidence.numpy(),
        "distance": outputs.distance.numpy(),
        "is_outlier": (outputs.distance > model.calibration.thresholds(outlier_quantile).cpu()[clusters]).numpy(),
    }


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
    """Fit the ``calibration`` buffers (saved with the weights) and ``config.num_calibration_texts`` on a seeded
    sample of at most ``sample_size`` (``None``: all) of ``texts`` (use the training texts), so that
    ``predict_with_confidence`` and the pipeline's ``confidence`` / ``flag_outliers`` work (see the module). One
    encoding pass, or none when ``embeddings`` (``embed(texts)``, N x hidden, same order) are given. Other arguments as
    for ``embed``. Returns the model (``save_pretrained`` it to keep the calibration).

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


# A cluster with fewer calibration members has too few distances for its own tail: it uses all texts' (pooled).
MIN_CLUSTER_SIZE = 20


@torch.no_grad()
def _fit(calibration: ClusterCalibration, embeddings: torch.Tensor, probs: torch.Tensor) -> None:
    """Fit ``calibration`` on the calibration texts' pooled embeddings (N x d) and served assignments (N x K)."""
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
