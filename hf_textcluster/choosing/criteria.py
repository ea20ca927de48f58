"""Label-free criteria: how good a partition of some texts looks from their embeddings alone. One registry, used by
the choice of K (:mod:`~hf_textcluster.choosing.auto_k`) and the choice of the served partition
(:mod:`~hf_textcluster.choosing.selection`).

A criterion is a function ``score(features, labels, random_state) -> float`` of

* ``features``: the ``(N, d)`` L2-normalised embeddings (the callers normalise; cosine and Euclidean geometry agree);
* ``labels``: ``(N,)`` cluster ids ``0..K-1`` with at least 2 clusters and fewer than N (callers score a degenerate
  partition themselves, before calling);
* ``random_state``: the seed of whatever the criterion samples or fits,

with a ``higher_is_better`` flag (the Davies-Bouldin index is lower-is-better). Adding a criterion is one
:func:`register_criterion` call (or one entry of :data:`CRITERIA`); :mod:`~hf_textcluster.choosing.selection` offers
every
registered criterion for the served partition, :mod:`~hf_textcluster.choosing.auto_k` those it lists for K.

No labels ever enter this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.linear_model import RidgeClassifier
from sklearn.metrics import calinski_harabasz_score, davies_bouldin_score
from sklearn.model_selection import KFold, cross_val_score

__all__ = ["CRITERIA", "Criterion", "cosine_silhouette", "get_criterion", "register_criterion"]


@dataclass(frozen=True)
class Criterion:
    """One label-free criterion.

    Args:
        name: its id (``--k-criterion`` / ``--serve-criterion`` values, the key of recorded scores).
        score: ``score(features, labels, random_state) -> float`` (see the module docstring).
        higher_is_better: whether a larger score means a better partition.
        description: one line for listings.
    """

    name: str
    score: Callable[[np.ndarray, np.ndarray, int | None], float]
    higher_is_better: bool = True
    description: str = ""

    def signed(self, value: float) -> float:
        """``value`` oriented so that higher is better (negated for a lower-is-better criterion).

        Example:
            >>> CRITERIA["davies_bouldin"].signed(0.8)
            -0.8
        """
        return value if self.higher_is_better else -value


def cosine_silhouette(x: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette with cosine distance of the L2-normalised rows ``x`` (what ``sklearn.metrics.silhouette_score(
    x, labels, metric="cosine")`` returns), in O(N K d): the summed distance of text i to cluster c is
    n_c - x_i . s_c, with s_c the sum of the cluster's rows.

    Args:
        x: ``(N, d)`` L2-normalised rows.
        labels: ``(N,)`` cluster ids (any integers).

    Returns:
        The mean silhouette, in [-1, 1].

    Raises:
        ValueError: with fewer than 2 clusters or as many clusters as rows.

    Example:
        >>> x = np.array([[1.0, 0.0], [0.99, 0.14], [0.0, 1.0], [0.14, 0.99]])
        >>> x = x / np.linalg.norm(x, axis=1, keepdims=True)
        >>> round(cosine_silhouette(x, np.array([0, 0, 1, 1])), 2)
        0.99
    """
    n = x.shape[0]
    labels = np.unique(labels, return_inverse=True)[1]
    k = int(labels.max()) + 1
    if k < 2 or k >= n:
        raise ValueError(f"The silhouette needs 2 <= K <= N - 1 clusters, got K={k} for N={n}.")
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    onehot = sparse.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(k, n))
    sums = np.asarray(onehot @ x)  # K x d
    summed = np.maximum(counts[None, :] - x @ sums.T, 0.0)  # N x K summed cosine distances (self: 1 - 1 = 0)
    rows = np.arange(n)
    own = counts[labels]
    a = summed[rows, labels] / np.maximum(own - 1, 1)
    mean_to = summed / counts[None, :]
    mean_to[rows, labels] = np.inf
    b = mean_to.min(axis=1)
    denom = np.maximum(a, b)
    s = np.where(denom > 0, (b - a) / np.where(denom > 0, denom, 1.0), 0.0)
    s[own == 1] = 0.0  # sklearn's convention for singleton clusters
    return float(s.mean())


def _silhouette(features: np.ndarray, labels: np.ndarray, random_state: int | None) -> float:
    return cosine_silhouette(features, labels)


def _calinski_harabasz(features: np.ndarray, labels: np.ndarray, random_state: int | None) -> float:
    return float(calinski_harabasz_score(features, labels))


def _davies_bouldin(features: np.ndarray, labels: np.ndarray, random_state: int | None) -> float:
    return float(davies_bouldin_score(features, labels))


def _separability(features: np.ndarray, labels: np.ndarray, random_state: int | None) -> float:
    folds = KFold(n_splits=3, shuffle=True, random_state=random_state)
    return float(cross_val_score(RidgeClassifier(alpha=1.0), features, labels, cv=folds).mean())


# The held-out neighbourhood criterion scores at most this many texts (a seeded sample), half of them held out.
_KNN_SAMPLE = 10_000
_KNN_NEIGHBOURS = 10


def _knn_holdout(features: np.ndarray, labels: np.ndarray, random_state: int | None) -> float:
    """Texts split in two halves (seeded); a k-nearest-neighbour vote (cosine, 10 neighbours) among one half's texts
    predicts the other half's clusters, and the other way round: the mean NMI of the predictions with the partition.
    The texts it is scored on did not shape the vote, and the vote assumes no cluster shape (neither linear, as
    ``separability``'s classifier and refinement's heads, nor round, as k-means'); only that neighbours belong
    together. NMI, not accuracy, so that one giant cluster is not rewarded."""
    from sklearn.metrics import normalized_mutual_info_score
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(random_state)
    n = features.shape[0]
    rows = rng.permutation(n)[: min(n, _KNN_SAMPLE)]
    halves = (rows[: rows.size // 2], rows[rows.size // 2 :])
    scores = []
    for fit, held_out in (halves, halves[::-1]):
        k = min(_KNN_NEIGHBOURS, fit.size)
        vote = KNeighborsClassifier(n_neighbors=k, metric="cosine", algorithm="brute").fit(features[fit], labels[fit])
        scores.append(normalized_mutual_info_score(labels[held_out], vote.predict(features[held_out])))
    return float(np.mean(scores))


CRITERIA: dict[str, Criterion] = {}


def register_criterion(criterion: Criterion) -> Criterion:
    """Add ``criterion`` to :data:`CRITERIA` (a new name, or a replacement of the same name).

    Args:
        criterion: the :class:`Criterion` to register.

    Returns:
        ``criterion``.

    Raises:
        TypeError: when ``criterion`` is not a :class:`Criterion` or its ``score`` is not callable.

    Example:
        >>> _ = register_criterion(Criterion("spread", lambda x, y, seed: float(np.bincount(y).std()), False))
        >>> CRITERIA.pop("spread").higher_is_better
        False
    """
    if not isinstance(criterion, Criterion) or not callable(criterion.score):
        raise TypeError(f"`criterion` must be a Criterion with a callable `score`, got {criterion!r}.")
    CRITERIA[criterion.name] = criterion
    return criterion


def get_criterion(name: str) -> Criterion:
    """The registered criterion ``name``.

    Args:
        name: a key of :data:`CRITERIA`.

    Returns:
        The :class:`Criterion`.

    Raises:
        ValueError: for an unknown name, listing the registered ones.

    Example:
        >>> get_criterion("silhouette").higher_is_better
        True
    """
    if name not in CRITERIA:
        raise ValueError(f"Unknown criterion {name!r}; choose one of {', '.join(CRITERIA)}.")
    return CRITERIA[name]


for _criterion in (
    Criterion("silhouette", _silhouette, True, "mean cosine silhouette (exact, O(N K d))"),
    Criterion("calinski_harabasz", _calinski_harabasz, True, "between- over within-cluster dispersion"),
    Criterion("davies_bouldin", _davies_bouldin, False, "mean worst ratio of spreads to centroid distance"),
    Criterion("separability", _separability, True, "3-fold accuracy of a ridge classifier predicting the partition"),
    Criterion(
        "knn_holdout", _knn_holdout, True, "NMI of a 10-neighbour vote from one half of the texts on the other half"
    ),
):
    register_criterion(_criterion)
