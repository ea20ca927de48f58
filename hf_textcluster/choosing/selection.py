"""Label-free choice among candidate partitions of the same texts.

A trained clusterer offers several partitions of its corpus: its own head, k-means on its embeddings,
UMAP -> k-means on them, each refined or not. Without labels, pick one by an internal criterion computed
on the embeddings (higher is always better here):

* ``"silhouette"``: mean cosine silhouette in the embedding space (on a seeded sample of at most 5,000 texts);
* ``"silhouette_pca"``: euclidean silhouette after PCA to 10 dimensions (whitening-free, seeded);
* ``"silhouette_umap"``: euclidean silhouette in a 5-d cosine UMAP of the embeddings (needs ``umap-learn``;
  the slowest: one UMAP fit shared by all candidates);
* ``"agreement"``: mean NMI of a candidate with every other candidate (the consensus pick; needs >= 3);
* ``"agreement_ari"``: the same with the adjusted Rand index;
* ``"separability"``: 3-fold cross-validated accuracy of a ridge classifier predicting the partition from
  the normalised embeddings;
* ``"calinski_harabasz"`` and ``"davies_bouldin"`` (negated, so higher is better);
* any other criterion registered in :mod:`~hf_textcluster.choosing.criteria`.

``silhouette``, ``separability``, ``calinski_harabasz`` and ``davies_bouldin`` are the registry's
(:data:`~hf_textcluster.choosing.criteria.CRITERIA`, shared with the choice of K); the PCA / UMAP silhouettes and
the agreements are this module's own, because they score every candidate in one shared space or against each other.

Measured on the eight short-text corpora (MiniLM embeddings, true K; 12 corpus/seed cases; six candidates each:
k-means n_init 1 and 10, UMAP -> k-means, k-means started from the UMAP partition, the two k-means ones refined
by iterative classification), picks of the best-by-ACC candidate and mean / max ACC loss against it:
``separability`` 5/12, 1.6 / 4.8 (recommended: the lowest loss, no extra dependency); ``silhouette_umap`` with
the UMAP that made the UMAP candidate 7/12, 2.0 / 12.1 (it always picked UMAP -> k-means, no better than taking
it blindly); ``davies_bouldin`` 3/12, 3.0 / 5.9; ``agreement`` 1/12, 3.4 / 5.9; ``calinski_harabasz`` 1/12,
3.4 / 5.9; ``silhouette_pca`` 0/12, 3.5 / 5.9; ``silhouette`` 3/12, 3.8 / 15.6. Separability favours refined
candidates (they are made linearly separable), which costs where refinement hurt (StackOverflow 73.6 vs 77.0).

No labels ever enter this module. Ties go to the candidate listed first. Depends on numpy and scikit-learn
(and umap-learn for ``"silhouette_umap"`` only).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score, silhouette_score

from ..editing.kmeans import keeping_torch_threads
from ..modeling.validation import check_scalar
from . import criteria as _registry

__all__ = ["CRITERIA", "DEFAULT_CRITERION", "score_partitions", "choose_partition"]

# This module's own criteria, which score the candidates in one shared space or against each other.
_OWN = ("silhouette_pca", "silhouette_umap", "agreement", "agreement_ari")
_ORDER = (
    "silhouette",
    "silhouette_pca",
    "silhouette_umap",
    "agreement",
    "agreement_ari",
    "separability",
    "calinski_harabasz",
    "davies_bouldin",
)
# Every criterion the choice of partition accepts: the list above, then any other registered one.
CRITERIA = _ORDER + tuple(name for name in _registry.CRITERIA if name not in _ORDER)
# What a registry criterion scores a partition with a single cluster (it cannot be computed); others: -inf.
_DEGENERATE = {"silhouette": -1.0, "separability": 0.0, "calinski_harabasz": 0.0, "knn_holdout": 0.0}
# Measured best of these on MiniLM embeddings of the 8 corpora (12 corpus x seed cases, 6 candidates each): it picks
# the best-by-ACC candidate 5 times in 12, with the smallest mean ACC loss against it (1.55; see above).
DEFAULT_CRITERION = "separability"
_SAMPLE = 5000


def _check_inputs(embeddings: Any, candidates: Any, criterion: str, random_state: Any) -> tuple[np.ndarray, dict]:
    x = np.asarray(embeddings)
    if x.ndim != 2 or x.shape[0] < 3:
        raise ValueError(f"`embeddings` must be a 2-D array (N texts x d dims, N >= 3); got shape {x.shape}.")
    if not np.issubdtype(x.dtype, np.number) or not np.all(np.isfinite(x)):
        raise ValueError("`embeddings` must be finite numbers; drop or re-encode rows with NaN/inf.")
    if not isinstance(candidates, Mapping) or len(candidates) == 0:
        raise ValueError("`candidates` must be a non-empty mapping name -> (N,) cluster ids.")
    if criterion not in CRITERIA and criterion not in _registry.CRITERIA:
        raise ValueError(f"`criterion` must be one of {', '.join(CRITERIA)}; got {criterion!r}.")
    check_scalar(random_state, "random_state", numbers.Integral)
    parts = {}
    for name, labels in candidates.items():
        y = np.asarray(labels)
        if y.ndim != 1 or y.shape[0] != x.shape[0]:
            raise ValueError(
                f"`candidates[{name!r}]` must hold one cluster id per embedding ({x.shape[0]}); got shape {y.shape}."
            )
        parts[str(name)] = np.unique(y, return_inverse=True)[1].astype(np.int64)
    if criterion.startswith("agreement") and len(parts) < 3:
        raise ValueError(f"`criterion` {criterion!r} needs at least 3 candidates; pass more or pick another criterion.")
    return x.astype(np.float64), parts


def _normalize(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _silhouette(x: np.ndarray, y: np.ndarray, metric: str, random_state: int) -> float:
    if np.unique(y).size < 2 or np.unique(y).size >= x.shape[0]:
        return -1.0
    size = min(_SAMPLE, x.shape[0])
    # Same sample for every candidate: the seed, not the partition, decides which texts are scored.
    idx = np.random.default_rng(random_state).choice(x.shape[0], size=size, replace=False)
    if np.unique(y[idx]).size < 2:
        return -1.0
    if metric == "cosine":  # the registry's silhouette (x is L2-normalised)
        return _registry.CRITERIA["silhouette"].score(x[idx], y[idx], random_state)
    return float(silhouette_score(x[idx], y[idx], metric=metric))


def _reduce_umap(x: np.ndarray, random_state: int) -> np.ndarray:
    try:
        import umap
    except ImportError as err:  # pragma: no cover - optional dependency
        raise ValueError(
            "`criterion` 'silhouette_umap' needs umap-learn; install it or pick another criterion."
        ) from err
    reducer = umap.UMAP(n_components=5, metric="cosine", n_neighbors=15, min_dist=0.0, random_state=random_state)
    with keeping_torch_threads():
        return reducer.fit_transform(x)


def _registered(criterion: str, x: np.ndarray, y: np.ndarray, random_state: int) -> float:
    """A registry criterion's score of partition ``y``, oriented so that higher is better."""
    if criterion == "silhouette":
        return _silhouette(x, y, "cosine", random_state)  # on a seeded sample of at most _SAMPLE texts
    if np.unique(y).size < 2:
        return _DEGENERATE.get(criterion, -np.inf)
    found = _registry.CRITERIA[criterion]
    return found.signed(found.score(x, y, random_state))


def score_partitions(
    embeddings: np.ndarray,
    candidates: Mapping[str, np.ndarray],
    *,
    criterion: str = DEFAULT_CRITERION,
    random_state: int = 0,
    reduced: np.ndarray | None = None,
) -> dict[str, float]:
    """Score every candidate partition of the same texts by a label-free criterion (higher is better).

    Args:
        embeddings: ``(N, d)`` array, one row per text (L2-normalised inside where the criterion is cosine).
        candidates: name -> ``(N,)`` cluster ids (any hashable ids; only the grouping matters).
        criterion: one of :data:`CRITERIA` (see the module docstring); default :data:`DEFAULT_CRITERION`.
        random_state: seed of the silhouette sample, PCA/UMAP and the cross-validation folds.
        reduced: optional precomputed ``(N, m)`` reduction (e.g. the UMAP a pipeline already fitted) used by
            ``"silhouette_umap"`` instead of fitting one.

    Returns:
        ``{name: score}`` in the order of ``candidates``.

    Raises:
        ValueError: on malformed embeddings or candidates, an unknown criterion, or too few candidates for
            an agreement criterion.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> x = np.repeat(np.eye(3) * 5, 20, axis=0) + rng.normal(size=(60, 3))
        >>> clean = np.repeat(np.arange(3), 20)
        >>> scores = score_partitions(x, {"clean": clean, "shuffled": rng.permutation(clean)}, criterion="silhouette")
        >>> scores["clean"] > scores["shuffled"]
        True
    """
    x, parts = _check_inputs(embeddings, candidates, criterion, random_state)
    xn = _normalize(x)
    names = list(parts)
    if criterion == "silhouette_pca":
        z = PCA(n_components=min(10, x.shape[1], x.shape[0]), random_state=random_state).fit_transform(xn)
        return {n: _silhouette(z, parts[n], "euclidean", random_state) for n in names}
    if criterion == "silhouette_umap":
        if reduced is None:
            z = _reduce_umap(xn, random_state)
        else:
            z = np.asarray(reduced, dtype=np.float64)
            if z.ndim != 2 or z.shape[0] != x.shape[0]:
                raise ValueError(f"`reduced` must be (N={x.shape[0]}, m); got shape {z.shape}. Pass the same texts.")
        return {n: _silhouette(z, parts[n], "euclidean", random_state) for n in names}
    if criterion in ("agreement", "agreement_ari"):
        pair = normalized_mutual_info_score if criterion == "agreement" else adjusted_rand_score
        return {n: float(np.mean([pair(parts[n], parts[m]) for m in names if m != n])) for n in names}
    return {n: _registered(criterion, xn, parts[n], random_state) for n in names}


def choose_partition(
    embeddings: np.ndarray,
    candidates: Mapping[str, np.ndarray],
    *,
    criterion: str = DEFAULT_CRITERION,
    random_state: int = 0,
    reduced: np.ndarray | None = None,
) -> tuple[str, dict[str, float]]:
    """The candidate with the highest :func:`score_partitions` score (ties: the first listed), and all scores.

    Args:
        embeddings: ``(N, d)`` array, one row per text.
        candidates: name -> ``(N,)`` cluster ids.
        criterion: one of :data:`CRITERIA`; default :data:`DEFAULT_CRITERION`.
        random_state: seed, as in :func:`score_partitions`.
        reduced: optional precomputed reduction for ``"silhouette_umap"``.

    Returns:
        ``(name, scores)``.

    Raises:
        ValueError: as :func:`score_partitions`.

    Example:
        >>> x = np.repeat(np.eye(2) * 5, 10, axis=0)
        >>> choose_partition(x, {"a": [0] * 10 + [1] * 10, "b": [0, 1] * 10}, criterion="silhouette")[0]
        'a'
    """
    scores = score_partitions(embeddings, candidates, criterion=criterion, random_state=random_state, reduced=reduced)
    best = max(scores.values())
    # Strict order of insertion decides ties: deterministic.
    name = next(n for n, s in scores.items() if s == best)
    return name, scores
