"""Clusters where the texts are dense, merged down to the K that separates them best: K and a partition without
labels.

BERTopic's default finds topics with HDBSCAN on a UMAP layout of the embeddings: it needs no K, but it leaves many
texts as outliers and finds far too many topics on corpora of a few broad classes (150 for AgNews' 4). Here the same
HDBSCAN clusters (:data:`MIN_CLUSTER_SIZE`, on the first of the BERTopic way's layouts,
:func:`~hf_textcluster.editing.kmeans.umap_layouts`) are the leaves: each outlier joins the cluster whose centre is
nearest (cosine, in the embedding space), and the clusters are merged by average linkage of their centres. Every cut
of that tree is a partition; K is the cut whose silhouette (cosine, in the embedding space, on a seeded sample) is
highest. ``training/studies/without_k.py`` chose the rule on the tuning corpora (docs/results.md, "Without K").

>>> tree = density_tree(features, random_state=0)         # doctest: +SKIP
>>> result = choose_k(tree, features, k_min=2, k_max=200)  # doctest: +SKIP
>>> result.num_clusters, tree.cut(result.num_clusters)     # doctest: +SKIP
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..editing.kmeans import umap_layouts
from ..reuse import reuse


def _unit(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


MIN_CLUSTER_SIZE = 10  # BERTopic's min_topic_size
SILHOUETTE_SAMPLE = 3000  # rows the silhouette of every cut is computed on (one distance matrix, computed once)


@dataclass
class DensityTree:
    """HDBSCAN's clusters of a layout and their merges.

    Attributes:
        leaves: each text's HDBSCAN cluster, outliers joined to the nearest cluster centre (0..L-1).
        outliers: which texts HDBSCAN left as outliers (its topic -1).
        linkage: scipy's linkage matrix of the leaves' centres (average linkage, cosine).
    """

    leaves: np.ndarray
    outliers: np.ndarray
    linkage: np.ndarray | None

    @property
    def num_leaves(self) -> int:
        return int(self.leaves.max()) + 1

    def cut(self, num_clusters: int) -> np.ndarray:
        """The texts' clusters with the leaves merged to ``num_clusters`` (at most :attr:`num_leaves`), numbered
        0..K-1 in order of first appearance."""
        from scipy.cluster.hierarchy import fcluster

        if self.linkage is None or num_clusters >= self.num_leaves:
            groups = np.arange(self.num_leaves)
        else:
            groups = fcluster(self.linkage, t=num_clusters, criterion="maxclust") - 1
        labels = groups[self.leaves]
        found, first = np.unique(labels, return_index=True)
        number = np.empty(int(found.max()) + 1, dtype=np.int64)
        number[found[np.argsort(first)]] = np.arange(len(found))
        return number[labels]


def density_tree(features, random_state: int | None = 0) -> DensityTree:
    """HDBSCAN (:data:`MIN_CLUSTER_SIZE`) on the first UMAP layout of ``features`` (N x d), its outliers joined to
    the nearest cluster centre, and the average-linkage tree of the centres. Seeded, computed once per
    ``reusing_results`` block."""

    def build() -> DensityTree:
        from scipy.cluster.hierarchy import linkage
        from sklearn.cluster import HDBSCAN

        x = _unit(np.asarray(features, dtype=np.float32))
        layout = umap_layouts(features, random_state)[0]
        topics = HDBSCAN(min_cluster_size=MIN_CLUSTER_SIZE, copy=True).fit_predict(layout)
        outliers = topics < 0
        if outliers.all():  # no dense region at all: one leaf, every text an outlier
            return DensityTree(np.zeros(len(x), dtype=np.int64), outliers, None)
        found, leaves = np.unique(topics[~outliers], return_inverse=True)
        centres = _unit(np.stack([x[~outliers][leaves == i].mean(0) for i in range(len(found))]))
        labels = np.empty(len(x), dtype=np.int64)
        labels[~outliers] = leaves
        labels[outliers] = np.argmax(x[outliers] @ centres.T, axis=1) if outliers.any() else []
        tree = linkage(centres, method="average", metric="cosine") if len(found) > 1 else None
        return DensityTree(labels, outliers, tree)

    if random_state is None:
        return build()
    return reuse(lambda: ("density tree", np.asarray(features), random_state), build)


@dataclass
class CutScores:
    """The silhouette of every cut of a :class:`DensityTree` in [k_min, k_max] (higher is better)."""

    scores: dict[int, float]
    sample_size: int
    seconds: float


def score_cuts(tree: DensityTree, features, k_min: int, k_max: int, random_state: int | None = 0) -> CutScores:
    """The silhouette (cosine, on a seeded sample of :data:`SILHOUETTE_SAMPLE` texts) of every cut of ``tree`` with
    ``k_min`` <= K <= min(``k_max``, its leaves)."""
    from sklearn.metrics import silhouette_score

    start = time.perf_counter()
    x = _unit(np.asarray(features, dtype=np.float32))
    rng = np.random.default_rng(random_state)
    rows = np.sort(rng.choice(len(x), min(SILHOUETTE_SAMPLE, len(x)), replace=False))
    distances = np.maximum(1.0 - x[rows] @ x[rows].T, 0.0).astype(np.float64)
    np.fill_diagonal(distances, 0.0)
    scores = {}
    for k in range(k_min, min(k_max, tree.num_leaves) + 1):
        labels = tree.cut(k)[rows]
        if 1 < len(np.unique(labels)) < len(rows):
            scores[k] = float(silhouette_score(distances, labels, metric="precomputed"))
    return CutScores(scores, len(rows), time.perf_counter() - start)


def search_density(x, k_min: int, k_max: int, random_state: int | None = 0, n_neighbors: int | None = None):
    """The ``density`` criterion of the registry: K -> the silhouette of the tree's cut at K (``n_neighbors`` is
    the eigengap's and unused)."""
    return score_cuts(density_tree(x, random_state), x, k_min, k_max, random_state).scores
