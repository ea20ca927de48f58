"""K without labels, read where the BERTopic way clusters: k-means on the first of its UMAP layouts
(:func:`~hf_textcluster.editing.kmeans.umap_layouts`, BERTopic's 15 neighbours -> 5 dimensions) for each K of a grid,
and the K whose partition has the highest silhouette in that layout.

The layout packs each group of texts that are each other's neighbours tight, so a K that cuts one group in two or
puts two in one scores a lower silhouette there than in the embedding space, where the silhouette of short texts is
flat. ``training/studies/without_k.py`` chose this rule on the tuning corpora and their class subsets, against the
silhouette in the embedding space, Calinski-Harabasz and HDBSCAN's clusters merged to K, by leaving one corpus out
(docs/results.md, "Without K"). The layouts are the ones the BERTopic way's k-means then clusters at the chosen K:
drawn once per ``reusing_results`` block.

>>> scores = umap_silhouettes(features, k_min=2, k_max=200, random_state=0)   # doctest: +SKIP
>>> max(scores, key=scores.get)                                              # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np

from ..editing.kmeans import umap_layouts

SILHOUETTE_SAMPLE = 3000  # rows each partition's silhouette is computed on (one distance matrix, computed once)
DENSE_UP_TO = 16  # every K up to here is tried; above, a ~10% geometric grid (refined around the best point by the
GRID_RATIO = 1.1  # criteria that score k-means on the embeddings: k_search)


def candidate_ks(k_min: int, k_max: int) -> list[int]:
    """The grid searched first: every K from ``k_min`` to 16, then steps of ~10% up to ``k_max`` (always included)."""
    ks = list(range(k_min, max(k_min, min(k_max, DENSE_UP_TO)) + 1))
    k = float(ks[-1])
    while ks[-1] < k_max:
        k = max(k * GRID_RATIO, ks[-1] + 1)
        ks.append(min(k_max, int(round(k))))
    return ks


def umap_silhouettes(
    features, k_min: int, k_max: int, random_state: int | None = 0, n_neighbors: int | None = None
) -> dict[int, float]:
    """K -> the silhouette (Euclidean, in the layout, on a seeded sample of :data:`SILHOUETTE_SAMPLE` rows) of
    k-means (one seeded start) with K clusters on the first UMAP layout of ``features``, for every K of
    :func:`candidate_ks` (every K to 16, then ~10% steps). The ``umap_silhouette``
    criterion of the registry (``n_neighbors`` is the eigengap's, unused)."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import pairwise_distances, silhouette_score

    layout = umap_layouts(features, random_state)[0]
    rng = np.random.default_rng(random_state)
    rows = np.sort(rng.choice(len(layout), min(SILHOUETTE_SAMPLE, len(layout)), replace=False))
    distances = pairwise_distances(layout[rows])
    scores = {}
    for k in candidate_ks(k_min, k_max):
        labels = KMeans(n_clusters=k, n_init=1, random_state=random_state).fit_predict(layout)[rows]
        if 1 < np.unique(labels).size < len(rows):
            scores[k] = float(silhouette_score(distances, labels, metric="precomputed"))
    return scores
