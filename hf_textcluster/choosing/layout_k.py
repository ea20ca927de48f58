"""K without labels, read where the BERTopic way clusters: k-means on the first of its UMAP layouts
(:func:`~hf_textcluster.editing.kmeans.umap_layouts`, BERTopic's 15 neighbours -> 5 dimensions) for each K of a grid,
and the K whose partition has the highest silhouette in that layout; then each of those clusters split again where,
clustered alone in the layout, it holds groups as clear as a silhouette of :data:`SPLIT_SILHOUETTE`
(:func:`split_clear_groups`).

The layout packs each group of texts that are each other's neighbours tight, so a K that cuts one group in two or
puts two in one scores a lower silhouette there than in the embedding space, where the silhouette of short texts is
flat. ``training/studies/without_k.py`` chose this rule on the tuning corpora and their class subsets, against the
silhouette in the embedding space, Calinski-Harabasz and HDBSCAN's clusters merged to K, by leaving one corpus out
(docs/results.md, "Without K"). The layouts are the ones the BERTopic way's k-means then clusters at the chosen K:
drawn once per ``reusing_results`` block.

The silhouette favours the coarsest split of nested groups (topics within themes), and a K found that way leaves some
clusters holding several groups. ``training/studies/without_k_tree.py`` grew a tree from it, each cluster split at
its own best silhouette when that reached a threshold, and chose 0.8 by leaving one corpus out: the tuning corpora
gained +1.3 (ACC + NMI) / 2 and found K within 25% on 16 of 20 tasks against 10; the leaves are served as they are
(k-means on the layout at their number scores lower than the K before the splits).

>>> scores = umap_silhouettes(features, k_min=2, k_max=200, random_state=0)   # doctest: +SKIP
>>> max(scores, key=scores.get)                                              # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np

from ..editing.kmeans import DEFAULT_N_INIT, UMAP_LAYOUTS, first_appearance, umap_kmeans_key, umap_layouts
from ..representation.summary import sample_rows
from ..reuse import keep

SILHOUETTE_SAMPLE = 3000  # rows each partition's silhouette is computed on (one distance matrix, computed once)
DENSE_UP_TO = 16  # every K up to here is tried; above, a ~10% geometric grid (refined around the best point by the
GRID_RATIO = 1.1  # criteria that score k-means on the embeddings: k_search)
SPLIT_SILHOUETTE = 0.8  # a cluster is split when its best split scores this silhouette alone (without_k_tree.py)
SPLIT_MIN_TEXTS = 20  # smaller clusters are not split (two of HDBSCAN's smallest, BERTopic's min_topic_size 10)
SPLIT_K_MAX = 16  # a cluster is split into at most this many parts, and at most one per 10 of its texts
SPLIT_DEPTH = 2  # levels of splits below the silhouette's K


def candidate_ks(k_min: int, k_max: int) -> list[int]:
    """The grid searched first: every K from ``k_min`` to 16, then steps of ~10% up to ``k_max`` (always included)."""
    ks = list(range(k_min, max(k_min, min(k_max, DENSE_UP_TO)) + 1))
    k = float(ks[-1])
    while ks[-1] < k_max:
        k = max(k * GRID_RATIO, ks[-1] + 1)
        ks.append(min(k_max, int(round(k))))
    return ks


def umap_silhouettes(features, k_min: int, k_max: int, random_state: int | None = 0, n_neighbors=None) -> dict:
    """K -> the silhouette (Euclidean, in the layout, on a seeded sample of :data:`SILHOUETTE_SAMPLE` rows) of
    k-means (one seeded start) with K clusters on the first UMAP layout of ``features``, for every K of
    :func:`candidate_ks` (every K to 16, then ~10% steps). The ``umap_silhouette``
    criterion of the registry (``n_neighbors`` is the eigengap's, unused)."""
    layout = umap_layouts(features, random_state)[0]
    return {k: score for k, (score, _) in layout_partitions(layout, candidate_ks(k_min, k_max), random_state).items()}


def layout_partitions(points: np.ndarray, ks, random_state: int | None = 0) -> dict[int, tuple[float, np.ndarray]]:
    """k -> (silhouette, labels) of k-means (one seeded start) with k clusters on ``points``, for each k of ``ks``
    that makes more than one cluster; the silhouette as :func:`umap_silhouettes` computes it."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import pairwise_distances, silhouette_score

    rows = sample_rows(len(points), SILHOUETTE_SAMPLE, random_state)
    distances = pairwise_distances(points[rows])
    out = {}
    for k in ks:
        labels = KMeans(n_clusters=k, n_init=1, random_state=random_state).fit_predict(points)
        if 1 < np.unique(labels[rows]).size < len(rows):
            out[k] = (float(silhouette_score(distances, labels[rows], metric="precomputed")), labels)
    return out


def split_clear_groups(layout: np.ndarray, labels: np.ndarray, random_state: int | None = 0) -> np.ndarray:
    """``labels`` with every cluster of at least :data:`SPLIT_MIN_TEXTS` rows split where its rows of ``layout``,
    clustered alone by k-means for k = 2 .. min(16, size / 10), reach a silhouette of :data:`SPLIT_SILHOUETTE` at the
    best k; each part split again the same way, :data:`SPLIT_DEPTH` levels down. Renumbered in order of first
    appearance (unsplit: ``labels`` renumbered)."""
    out = np.asarray(labels).copy()
    todo = [(rows, 0) for rows in (np.flatnonzero(out == k) for k in np.unique(out))]
    while todo:
        rows, depth = todo.pop()
        if depth == SPLIT_DEPTH or len(rows) < SPLIT_MIN_TEXTS:
            continue
        scored = layout_partitions(layout[rows], range(2, min(SPLIT_K_MAX, len(rows) // 10) + 1), random_state)
        score, parts = max(scored.values(), key=lambda scored_k: scored_k[0], default=(0.0, None))
        if score >= SPLIT_SILHOUETTE:
            out[rows] = np.where(parts == 0, out[rows], out.max() + parts)  # part 0 keeps its id, the others are new
            todo += [(rows[parts == part], depth + 1) for part in np.unique(parts)]
    return first_appearance(out)


def split_layout_clusters(features, labels: np.ndarray, layout: np.ndarray, k_max: int, random_state: int = 0):
    """``labels`` (k-means on ``layout`` of ``features``) after :func:`split_clear_groups`, made the BERTopic way's
    partition of ``features`` at their number of clusters within a ``reusing_results`` block (``fit_kmeans(init=
    "umap")``'s defaults, seed ``random_state``), so that the first save and every candidate of the run serve them;
    None when no cluster splits or they would be more than ``k_max``."""
    groups = split_clear_groups(layout, labels, random_state)
    k = int(groups.max()) + 1
    if not labels.max() + 1 < k <= k_max:
        return None
    keep(lambda: umap_kmeans_key(features, k, DEFAULT_N_INIT, random_state, UMAP_LAYOUTS), groups)
    return groups
