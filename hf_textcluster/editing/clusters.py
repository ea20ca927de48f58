"""Setting a clusterer's clusters: from k-means on its embeddings (:func:`initialize_clusters`), or a refined
partition served by a linear head (:func:`set_refined_head`, undone by :func:`serve_method_head`).

Package-only: training, choosing what to serve and ``hf-textcluster recluster`` call these; a served model only
reads what they set (its head's rows, ``refined_head``, the config's ``centroids_initialized`` and
``served_partition``), so it serves, saves and ships as remote code without them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..modeling.input_checks import check_num_clusters
from ..modeling.validation import validate_texts
from ..reuse import embed
from .kmeans import DEFAULT_KMEANS_MAX_SAMPLES, fit_kmeans
from .rows import is_centroid_head

if TYPE_CHECKING:
    from ..modeling.modeling_utils import TextClusteringPreTrainedModel


def uses_kmeans_init(model: TextClusteringPreTrainedModel) -> bool:
    """Whether ``model``'s training starts from k-means on the corpus (its head is a set of centroids)."""
    return is_centroid_head(getattr(model, "cluster_head", None))


def initialize_clusters(
    model: TextClusteringPreTrainedModel,
    texts: Sequence[str] | None = None,
    embeddings: np.ndarray | None = None,
    random_state: int | None = 0,
    n_init: int = 10,
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    show_progress_bar: bool | None = None,
    precision: str | torch.dtype | None = "auto",
    max_samples: int | None = DEFAULT_KMEANS_MAX_SAMPLES,
    kmeans_init: str = "best",
) -> np.ndarray:
    """Fit k-means (K = ``config.num_clusters``) on the embeddings of ``texts`` (or on ``embeddings``) and start
    ``model``'s cluster head from its centres (:func:`init_clusters_from_kmeans`). Returns the k-means labels of
    every text. On a trained model this re-clusters: ``predict`` then gives the nearest k-means centre on the trained
    embeddings (the benchmark's "k-means after"; ``hf-textcluster recluster``); call ``calibrate`` again afterwards.
    ``max_samples``: the centres are fitted on a seeded sample of at most this many texts (None: all);
    ``kmeans_init``: ``"best"`` (default: the lower inertia of k-means++ and of a run started from the UMAP clusters),
    ``"k-means++"`` or ``"umap"`` (see :func:`~hf_textcluster.editing.kmeans.fit_kmeans`); ``model.kmeans_start_``
    then says which start won.

    Example:
        >>> labels = initialize_clusters(model, texts)  # doctest: +SKIP
    """
    num_clusters = model.config.num_clusters
    if embeddings is None:
        texts = validate_texts(texts)
        # before the encoding pass, not after; K clusters of copies of fewer texts would be meaningless
        check_num_clusters(num_clusters, len(texts), texts=texts)
        embeddings = embed(
            model, texts, batch_size=batch_size, show_progress_bar=show_progress_bar, precision=precision
        )
    if isinstance(embeddings, torch.Tensor):  # numpy reads a tensor on the host only
        embeddings = embeddings.detach().cpu()
    embeddings = np.asarray(embeddings, dtype=np.float32)
    check_num_clusters(num_clusters, embeddings.shape[0])
    distinct = len({row.tobytes() for row in np.ascontiguousarray(embeddings)})
    if distinct < num_clusters:
        raise ValueError(
            f"`num_clusters` ({num_clusters}) is larger than the number of distinct embeddings "
            f"({distinct} of {embeddings.shape[0]}): k-means cannot find that many clusters. Pass more "
            "varied texts or `num_clusters` <= that number."
        )
    with torch.no_grad():  # k-means runs where the head does (on a GPU: torch's k-means, no copy to the host)
        features = model.kmeans_features(torch.from_numpy(embeddings).to(model.device)).float()
    kmeans = fit_kmeans(  # a CPU tensor goes to scikit-learn
        features, num_clusters, n_init=n_init, random_state=random_state, max_samples=max_samples, init=kmeans_init
    )
    model.kmeans_start_ = getattr(kmeans, "start_", kmeans_init)
    init_clusters_from_kmeans(model, kmeans.cluster_centers_)
    return kmeans.labels_


def _centres_for(rows: torch.Tensor, centers: np.ndarray | torch.Tensor) -> torch.Tensor:
    """``centers`` (K x d, array or tensor) as a tensor like ``rows``, a head's K x d weights, which they must fit."""
    centers = torch.as_tensor(centers, dtype=rows.dtype, device=rows.device)
    if tuple(centers.shape) != tuple(rows.shape):
        raise ValueError(
            f"Centres of shape {tuple(centers.shape)} do not fit the head "
            f"({tuple(rows.shape)} = num_clusters x hidden_size)."
        )
    return centers


@torch.no_grad()
def _set_centroids(head: torch.nn.Module, centers: np.ndarray | torch.Tensor) -> None:
    """Use k-means centres (K x d, array or tensor) as a centroid head's centroids."""
    head.centroids.copy_(_centres_for(head.centroids, centers))


def init_clusters_from_kmeans(model: TextClusteringPreTrainedModel, centers: np.ndarray | torch.Tensor) -> None:
    """Set ``model``'s clusters from k-means centres (K x the ``kmeans_features`` size, fitted by
    :func:`initialize_clusters`) and mark them initialised, uncalibrated: a head of centroids starts from them; a
    model with a ``kmeans_head`` (AECL) serves the nearest of them (Student-t probabilities on the embeddings) instead
    of its clustering network, whose weights are kept (``config.serving_head="network"`` serves it again); a linear
    head (ClusterBERT's h) becomes their nearest-centre rule (:func:`init_head_from_centroids`).
    """
    if is_centroid_head(model.cluster_head):
        _set_centroids(model.cluster_head, centers)
    elif getattr(model, "kmeans_head", None) is not None:
        _set_centroids(model.kmeans_head, centers)
        model.config.serving_head = "kmeans"
    elif isinstance(model.cluster_head, torch.nn.Linear):
        init_head_from_centroids(model, centers)
    else:
        raise NotImplementedError(
            f"{type(model).__name__}'s cluster head is a classifier its trainer fits, not centres: it cannot be set "
            "from k-means. For k-means on its trained embeddings use "
            "`KMeans(model.config.num_clusters).fit(model.embed(texts))`."
        )
    _clusters_set(model)


@torch.no_grad()
def init_head_from_centroids(model: TextClusteringPreTrainedModel, centers: np.ndarray | torch.Tensor) -> None:
    """Set a linear head h (ClusterBERT's, Eq. 2) so that its logits are 2 z·c_k - ‖c_k‖² = -‖z - c_k‖² + ‖z‖²: the
    softmax ranks the clusters as the nearest of ``centers`` does (``head_init="kmeans"``)."""
    centers = _centres_for(model.cluster_head.weight, centers)
    model.cluster_head.weight.copy_(2 * centers)
    model.cluster_head.bias.copy_(-(centers**2).sum(dim=-1))


def _clusters_set(model: TextClusteringPreTrainedModel) -> None:
    """Mark new clusters: initialised, uncalibrated, served by the method's head (a refined head is dropped)."""
    model.config.centroids_initialized = True
    model.config.num_calibration_texts = 0  # calibrated on other clusters: calibrate again
    model.config.refined_head_dim = 0  # new centres replace whatever was served before
    model.config.served_partition = "head"
    model.__dict__["_modules"].pop("refined_head", None)


@torch.no_grad()
def set_refined_head(model: TextClusteringPreTrainedModel, coef, intercept, served_partition: str = "refined") -> None:
    """Serve a refined partition: a linear layer (K x d weights ``coef``, K biases ``intercept``) on the
    L2-normalised ``kmeans_features`` replaces the method's head for prediction (the head's weights are kept; the
    model's ``refined_head``, which ``config.refined_head_dim`` builds again on load). The calibration no longer
    describes the clusters: calibrate again.

    Example:
        >>> result = refine_partition(features, labels)                # doctest: +SKIP
        >>> set_refined_head(model, result.coef, result.intercept)      # doctest: +SKIP
    """
    coef, intercept = (
        torch.as_tensor(np.asarray(v.detach().cpu() if torch.is_tensor(v) else v), dtype=torch.float32)
        for v in (coef, intercept)
    )
    num_clusters = model.config.num_clusters
    if coef.ndim != 2 or coef.shape[0] != num_clusters or tuple(intercept.shape) != (num_clusters,):
        raise ValueError(
            f"`coef` must be {num_clusters} x d and `intercept` of length {num_clusters} "
            f"(num_clusters), got {tuple(coef.shape)} and {tuple(intercept.shape)}."
        )
    if not (torch.isfinite(coef).all() and torch.isfinite(intercept).all()):
        raise ValueError("`coef` and `intercept` must be finite.")
    _clusters_set(model)
    head = torch.nn.Linear(coef.shape[1], num_clusters).to(model.device)
    head.weight.copy_(coef)
    head.bias.copy_(intercept)
    model.refined_head = head
    model.config.refined_head_dim = int(coef.shape[1])
    model.config.served_partition = served_partition


def serve_method_head(model: TextClusteringPreTrainedModel) -> None:
    """Serve the method's own head again (its weights were kept under a refined head): what training continues from,
    since the method's losses train that head. The calibration no longer describes the clusters."""
    if model.config.refined_head_dim:
        _clusters_set(model)


def keep_method_head(model: TextClusteringPreTrainedModel) -> None:
    """Before k-means centres replace a trained model's head (serving ``kmeans``), keep the head's weights (and
    which head serves) as ``model.method_head_``, so that serving ``head`` later serves the trained head, not the
    centres (:func:`restore_method_head`; the run folder saves them beside the model). The first, trained, head is
    kept: replacing the centres again keeps it."""
    if getattr(model, "method_head_", None) is None and model.config.centroids_initialized:
        state = {name: value.detach().clone() for name, value in model.cluster_head.state_dict().items()}
        model.method_head_ = (state, getattr(model.config, "serving_head", None))


def restore_method_head(model: TextClusteringPreTrainedModel) -> None:
    """Serve the trained head that :func:`keep_method_head` kept (none kept: :func:`serve_method_head`). The
    calibration no longer describes the clusters."""
    kept = getattr(model, "method_head_", None)
    if kept is None:
        serve_method_head(model)
        return
    state, serving_head = kept
    model.cluster_head.load_state_dict(state)
    if serving_head is not None:
        model.config.serving_head = serving_head
    _clusters_set(model)
    model.method_head_ = None
