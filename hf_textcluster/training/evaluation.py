"""Scoring a clusterer against labels: its head, k-means on its embeddings and (for a head with a space of its own)
k-means there."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..editing.kmeans import DEFAULT_KMEANS_MAX_SAMPLES, fit_kmeans
from ..evaluation.metrics import load_clustering_metric
from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..representation.summary import assign_embeddings
from ..reuse import embed


def evaluate_clusterer(
    model,
    texts: Sequence[str],
    labels: Sequence[int] | None = None,
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    kmeans: bool = True,
    n_init: int = 10,
    random_state: int | None = 0,
    show_progress_bar: bool | None = None,
    precision: str | torch.dtype | None = "auto",
    kmeans_max_samples: int | None = DEFAULT_KMEANS_MAX_SAMPLES,
    umap_kmeans: bool = False,
) -> dict[str, float]:
    """Clustering quality of a clusterer on ``texts``: from its head (``acc``, ``nmi``, ...) and, with ``kmeans``,
    from k-means on its embeddings (``kmeans_acc``, ...) and, for a head working in a space of its own (DEC-CRL,
    AECL), from k-means in that space (``latent_kmeans_acc``, ...). ``umap_kmeans`` (with ``kmeans``; needs
    umap-learn, minutes on a large corpus): also ``umap_kmeans_*``, the nearest of the means of the clusters k-means
    finds on a UMAP reduction of the embeddings (what ``recluster --kmeans-init umap`` serves, but for DEC-CRL, which
    re-clusters in its latent space). A model that flags outliers (``train --outliers``) is scored as it predicts,
    its outliers (-1) one cluster. Without labels, only the number of used clusters."""
    embeddings = embed(model, texts, batch_size=batch_size, show_progress_bar=show_progress_bar, precision=precision)
    was_training = model.training
    model.eval()  # a head with dropout (AECL's) must not drop units while it is scored
    try:
        with torch.no_grad():
            inputs = torch.from_numpy(embeddings).to(model.device)
            probs = model.cluster_probabilities(inputs)
            # the head's own space, only when it is scored below
            features = model.cluster_features(inputs).float().cpu().numpy() if kmeans and labels is not None else None
    finally:
        model.train(was_training)
    head_pred = probs.argmax(dim=-1).cpu().numpy()
    if model.config.flag_outliers:
        head_pred = assign_embeddings(model, embeddings).clusters
    metrics: dict[str, float] = {"clusters_used": float(len(np.unique(head_pred)))}
    if labels is None:
        return metrics
    scorer = load_clustering_metric()  # the package's `evaluate` metric: ACC / NMI / ARI / purity
    metrics.update(scorer.compute(predictions=head_pred, references=labels))
    if kmeans:
        options = {"n_init": n_init, "random_state": random_state, "max_samples": kmeans_max_samples}

        def add_kmeans_scores(prefix, points, init="k-means++"):
            km = fit_kmeans(points, model.config.num_clusters, init=init, **options)
            scores = scorer.compute(predictions=km.labels_, references=labels)
            metrics.update({f"{prefix}_{key}": value for key, value in scores.items()})

        add_kmeans_scores("kmeans", embeddings)
        # a head in a space of its own (DEC-CRL's FC_e, AECL's projector) gets k-means there too: for DEC-CRL that
        # is what `recluster` serves
        if features.shape != embeddings.shape or not np.array_equal(features, embeddings):  # not the identity
            add_kmeans_scores("latent_kmeans", features)
        if umap_kmeans:
            add_kmeans_scores("umap_kmeans", embeddings, init="umap")
    return metrics
