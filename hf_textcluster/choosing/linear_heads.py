"""Linear heads fitted on a partition: the classifiers, the head a partition is served by, and its distillation.

A partition is served by a linear head on the L2-normalised embeddings (the argmax of ``x @ coef.T + intercept``).
:func:`distil_partition` fits one on a partition made elsewhere (k-means in a UMAP reduction, a consensus, another
model's clusters); :func:`~hf_textcluster.choosing.refinement.refine_partition` fits one after its rounds. Both
return a :class:`RefinementResult`.

This module depends on numpy, scipy and scikit-learn only.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.covariance import ledoit_wolf_shrinkage
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from ..modeling.validation import check_scalar
from ..representation.summary import sample_rows

__all__ = [
    "DISTIL_C",
    "RefinementResult",
    "SharedCovarianceClassifier",
    "check_embeddings",
    "distil_partition",
    "l2_normalize",
]

# The serving head of a partition made elsewhere (distil_partition): logistic regression's inverse regularisation on
# the L2-normalised embeddings (weak: it keeps 88-100% of the texts of the auto runs' UMAP k-means partitions in their
# clusters, `python -m training.bench serving-head`), and the rows it is fitted on at most (a seeded sample above).
DISTIL_C = 10.0
DISTIL_MAX_SAMPLES = 50_000


@dataclass
class RefinementResult:
    """The outcome of :func:`~hf_textcluster.choosing.refinement.refine_partition`.

    Attributes:
        labels: ``(N,)`` int64 cluster ids after refinement (the input ids when ``declined``).
        coef: ``(K, d)`` float32 weights of a linear head on the L2-normalised embeddings.
        intercept: ``(K,)`` float32 biases of that head; ``argmax(l2_normalize(x) @ coef.T + intercept)``
            reproduces ``labels`` (exactly, by construction, unless ``declined``; see ``head_agreement``).
        centroids: ``(K, d)`` float32 means of the normalised members of every cluster (zero rows for empty
            clusters). Nearest-centroid assignment is *less* faithful than the linear head (see
            ``centroid_agreement``); serve the head when the model has a linear layer.
        rounds: number of classification rounds run.
        changed: fraction of texts whose cluster differs from the input.
        history: one dict per round: ``round``, ``changed`` (vs the previous round), ``changed_total`` (vs
            the input), ``train_size``, ``outliers``, ``min_size``, ``collapsed`` (clusters below the guard).
        declined: True when the guard rejected the refinement and ``labels`` is the input partition.
        reason: why it stopped (converged, max rounds) or why it declined.
        head_agreement: fraction of texts where the linear head's argmax equals ``labels``.
        centroid_agreement: the same for nearest centroid by cosine.
    """

    labels: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    centroids: np.ndarray
    rounds: int
    changed: float
    history: list[dict[str, float]] = field(default_factory=list)
    declined: bool = False
    reason: str = ""
    head_agreement: float = 1.0
    centroid_agreement: float = 1.0

    def predict(self, embeddings: np.ndarray) -> np.ndarray:
        """Cluster ids of new embeddings through the linear head (they are L2-normalised first)."""
        x = l2_normalize(np.asarray(embeddings, dtype=np.float32))
        return np.argmax(x @ self.coef.T + self.intercept, axis=1).astype(np.int64)


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


class SharedCovarianceClassifier(ClassifierMixin, BaseEstimator):
    """Linear discriminant analysis with one pooled, Ledoit-Wolf shrunk covariance and uniform priors.

    Every class is its mean; the covariance is pooled over all texts (each centred on its class mean) and
    estimated once, so a class of three texts gets as sharp a boundary as a class of three thousand, and no
    class is favoured for its size. (scikit-learn's shrinkage LDA estimates one shrunk covariance per class,
    which is slow with a hundred classes and weights tiny classes' noisy covariances like large ones.)

    Args:
        shrinkage: None for the Ledoit-Wolf estimate, or a fixed value in [0, 1].

    Example:
        >>> clf = SharedCovarianceClassifier().fit(np.array([[0.0, 1], [0, 2], [3, 0], [4, 0]]), [0, 0, 1, 1])
        >>> clf.predict(np.array([[0.0, 3], [5, 0]])).tolist()
        [0, 1]
    """

    def __init__(self, shrinkage: float | None = None):
        self.shrinkage = shrinkage

    def fit(self, X, y):
        x = np.asarray(X, dtype=np.float64)
        classes, idx = np.unique(np.asarray(y), return_inverse=True)
        # class sums over the rows sorted by class (stable: each class' rows in their order), as np.add.at would add
        # them, at a tenth of its time
        order = np.argsort(idx, kind="stable")
        counts = np.bincount(idx)
        means = np.add.reduceat(x[order], np.concatenate(([0], np.cumsum(counts)[:-1])), axis=0)
        means /= counts[:, None]
        centred = x - means[idx]
        shrink = ledoit_wolf_shrinkage(centred, assume_centered=True) if self.shrinkage is None else self.shrinkage
        cov = centred.T @ centred / max(x.shape[0], 1)
        mu = np.trace(cov) / cov.shape[0]
        cov = (1.0 - shrink) * cov + shrink * mu * np.eye(cov.shape[0])
        self.coef_ = np.linalg.solve(cov, means.T).T
        self.intercept_ = -0.5 * np.einsum("kd,kd->k", means, self.coef_)
        self.classes_ = classes
        self.shrinkage_ = float(shrink)
        return self

    def decision_function(self, X):
        return np.asarray(X, dtype=np.float64) @ self.coef_.T + self.intercept_

    def predict(self, X):
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]


def distil_partition(
    embeddings: np.ndarray,
    labels: Sequence[int] | np.ndarray,
    *,
    num_clusters: int | None = None,
    C: float = DISTIL_C,  # noqa: N803 - scikit-learn's name
    random_state: int = 0,
    max_samples: int | None = DISTIL_MAX_SAMPLES,
) -> RefinementResult:
    """The linear head that serves a partition made elsewhere (k-means in a UMAP reduction, a consensus, another
    model's clusters), and the partition it then serves: its argmax on every text.

    The head is a logistic regression on the L2-normalised embeddings (``C``, 500 iterations), fitted on the
    partition's labels. With the default ``C`` it reproduces the partition where a linear head can (88-100% of
    the texts of the auto runs' UMAP k-means partitions; on 21 of 24 at least as many as the shrunk LDA head of
    :func:`~hf_textcluster.choosing.refinement.refine_partition` with no rounds keeps). A smaller ``C`` regularises
    more: a text the embedding space places with another cluster's members moves there, and a cluster the space does
    not separate shrinks (``C=1`` scored -0.2 to +11.2 ACC against ``C=10`` on the same 24 partitions; ``python -m
    training.bench serving-head``).

    Args:
        embeddings: ``(N, d)`` array, one row per text (L2-normalised inside).
        labels: ``(N,)`` integer cluster ids in ``[0, K)`` (at least two clusters).
        num_clusters: K; defaults to ``max(labels) + 1``. Empty clusters get a head row that never wins.
        C: the logistic regression's inverse regularisation (> 0).
        random_state: seed of the sample (above ``max_samples`` rows).
        max_samples: the head is fitted on a seeded sample of at most this many rows (None: all), so its cost stays
            bounded on a large corpus; every row is then assigned by it.

    Returns:
        A :class:`RefinementResult` with ``rounds`` 0, ``labels`` the head's argmax (``changed``: the share of texts
        it moved) and ``head_agreement`` 1.

    Raises:
        ValueError: malformed embeddings or labels, a bad ``C`` or ``max_samples``.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> x = np.repeat(rng.normal(size=(3, 16)) * 4, 50, axis=0) + rng.normal(size=(150, 16))
        >>> result = distil_partition(x, np.repeat(np.arange(3), 50))
        >>> result.changed, bool((result.predict(x) == result.labels).all())
        (0.0, True)
    """
    raw = check_embeddings(embeddings)
    x = l2_normalize(raw)
    y_in, k = _check_labels(labels, x.shape[0], num_clusters)
    check_scalar(max_samples, "max_samples", numbers.Integral, min_val=2, allow_none=True, hint="None: every row")
    check_scalar(C, "C", numbers.Real, min_val=0.0, include_boundaries="neither", hint="e.g. 1.0")
    check_scalar(random_state, "random_state", numbers.Integral)
    rows = sample_rows(x.shape[0], max_samples, random_state)
    with warnings.catch_warnings():  # the head that stops short of full convergence serves as well
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        head = _fit_classifier(LogisticRegression(C=C, max_iter=500), x[rows], y_in[rows], random_state)
    coef, intercept = (
        w.astype(np.float32) for w in cast("tuple[np.ndarray, np.ndarray]", _linear_head(head, k, x.shape[1]))
    )
    # as RefinementResult.predict and a model's head compute it (float32): the labels are what is served
    y = np.argmax(l2_normalize(raw.astype(np.float32)) @ coef.T + intercept, axis=1).astype(np.int64)
    reason = f"no rounds: the input distilled into a logistic-regression head (C={C:g})"
    return served_by_head(x, y_in, y, coef, intercept, rounds=0, reason=reason)


def served_by_head(x: np.ndarray, y_in: np.ndarray, labels: np.ndarray, coef, intercept, **fields) -> RefinementResult:
    """The :class:`RefinementResult` of ``labels``, served by the linear head (``coef``, ``intercept``) on the
    L2-normalised ``x``: with the clusters' centroids, how many texts the nearest of them keeps, and the share of
    texts moved from the input ``y_in``. ``fields``: the rest of the result (rounds, reason, ...)."""
    k = coef.shape[0]
    sums = np.zeros((k, x.shape[1]))
    np.add.at(sums, labels, x)
    centroids = sums / np.maximum(np.bincount(labels, minlength=k)[:, None], 1)
    nearest = x @ l2_normalize(centroids).T
    nearest[:, np.linalg.norm(centroids, axis=1) == 0] = -np.inf  # an empty cluster is no one's nearest
    return RefinementResult(
        labels=labels,
        coef=coef.astype(np.float32),
        intercept=intercept.astype(np.float32),
        centroids=centroids.astype(np.float32),
        changed=float(np.mean(labels != y_in)),
        centroid_agreement=float(np.mean(nearest.argmax(axis=1) == labels)),
        **fields,
    )


def check_embeddings(embeddings: Any) -> np.ndarray:
    """``embeddings`` as a float64 ``(N, d)`` array of finite numbers, N >= 2; ValueError otherwise."""
    x = np.asarray(embeddings)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1:
        raise ValueError(
            f"`embeddings` must be a 2-D array (N texts x d dims, N >= 2); got shape {x.shape}. Pass one row per text."
        )
    if not np.issubdtype(x.dtype, np.number) or not np.all(np.isfinite(x)):
        raise ValueError("`embeddings` must be finite numbers; drop or re-encode rows with NaN/inf.")
    return x.astype(np.float64)


def _check_labels(labels: Any, n: int, num_clusters: int | None) -> tuple[np.ndarray, int]:
    y = np.asarray(labels)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"`labels` must be a 1-D array with one id per embedding ({n}); got shape {y.shape}.")
    whole = np.issubdtype(y.dtype, np.floating) and np.all(np.isfinite(y)) and np.all(y == np.round(y))
    if not (np.issubdtype(y.dtype, np.integer) or whole):
        raise ValueError("`labels` must be integer cluster ids 0..K-1; map names to ids first.")
    y = y.astype(np.int64)
    if y.min() < 0:
        raise ValueError("`labels` must be >= 0; drop or reassign noise points (-1) before refining.")
    if num_clusters is None:
        num_clusters = int(y.max()) + 1
    else:
        check_scalar(num_clusters, "num_clusters", numbers.Integral, min_val=2, allow_none=True)
        if y.max() >= num_clusters:
            raise ValueError(
                f"`labels` has id {int(y.max())} but `num_clusters` is {num_clusters}; pass num_clusters > max label."
            )
    if np.unique(y).size < 2:
        raise ValueError("`labels` holds a single cluster; refinement needs at least two non-empty clusters.")
    return y, int(num_clusters)


def _fit_classifier(template, x: np.ndarray, y: np.ndarray, seed: int):
    """A clone of the estimator ``template`` (its ``random_state`` set to ``seed`` where it has one) fitted on x, y."""
    estimator = clone(template)
    if "random_state" in estimator.get_params(deep=False):
        estimator.set_params(random_state=seed)
    return estimator.fit(x, y)


def _linear_head(clf, num_clusters: int, d: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(K x d, K) weights from a fitted linear classifier, rows placed at the class ids; None if not linear."""
    coef = getattr(clf, "coef_", None)
    intercept = getattr(clf, "intercept_", None)
    if coef is None or intercept is None:
        return None
    coef = np.asarray(coef, dtype=np.float64)
    intercept = np.asarray(intercept, dtype=np.float64).reshape(-1)
    classes = np.asarray(clf.classes_, dtype=np.int64)
    if coef.shape[0] == 1 and classes.size == 2:  # binary: one decision function -> two symmetric rows
        coef = np.vstack([-coef[0] / 2, coef[0] / 2])
        intercept = np.array([-intercept[0] / 2, intercept[0] / 2])
    full_coef = np.zeros((num_clusters, d), dtype=np.float64)
    # Clusters the head never saw (empty ones) can never win.
    full_intercept = np.full(num_clusters, -1e9, dtype=np.float64)
    full_coef[classes] = coef
    full_intercept[classes] = intercept
    return full_coef, full_intercept
