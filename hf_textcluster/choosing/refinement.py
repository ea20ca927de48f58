"""Refinement of a partition by iterative classification.

Rakib et al. (2020), "Enhancement of Short Text Clustering by Iterative Classification", and Pugachev &
Burtsev (2021) on sentence-encoder embeddings: start from any partition, and in every round set aside the
members each cluster's outlier detector flags, train a classifier on a sample of the remaining members with
their cluster ids as targets, and let it reassign the texts. Repeat until the assignments settle.

What keeps it from collapsing many small clusters (measured on the eight short-text corpora with MiniLM):

* features are L2-normalised embeddings, the space the encoder's cosine geometry lives in;
* the classifier is linear discriminant analysis with a shrunk, pooled covariance and uniform priors: every
  cluster gets a class mean, however small, and the shared covariance is estimated from all texts, so a
  ten-member cluster is not starved by regularisation the way a penalised logistic regression starves it;
* a cluster contributes at most a fraction of the *average* cluster size to the training sample, so large
  clusters do not dominate the classifier;
* every text is reassigned each round (keeping the training sample's ids instead, as Rakib et al. do, scored
  slightly lower with this classifier), and the partition the rounds settle on is the final head's argmax;
* a guard compares the result to the input and declines (returns the input unchanged, with the reason) when
  a cluster vanished or too many clusters lost most of their members.

Refinement pulls a partition towards what a linear classifier on the embeddings can express: it helps partitions made
by k-means where the encoder separates the classes poorly and can hurt those made in a non-linear space (UMAP ->
k-means; docs/results.md has the measurements). Choose between refined and unrefined candidates with
:mod:`~hf_textcluster.choosing.candidate_choice` rather than always refining.

This module depends on numpy, scipy and scikit-learn only.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from ..modeling.validation import Interval, validate_parameters
from .linear_heads import (
    RefinementResult,
    SharedCovarianceClassifier,
    _check_labels,
    _fit_classifier,
    _linear_head,
    check_embeddings,
    l2_normalize,
    served_by_head,
)

__all__ = ["refine_partition"]

# The numeric options of refine_partition (train_fraction, a pair, is checked beside them).
_OPTIONS = {
    "max_rounds": Interval(numbers.Integral, 0, None),
    "tol": Interval(numbers.Real, 0.0, 0.999),
    "outlier_fraction": Interval(numbers.Real, 0.0, 0.49),
    "min_kept": Interval(numbers.Real, 0.0, 1.0),
    "max_collapsed": Interval(numbers.Real, 0.0, 1.0),
    "random_state": Interval(numbers.Integral),
    "train_fraction": Interval(numbers.Real, 0.01, 1.0),  # each bound of the pair
}


def _centroid_outliers(x: np.ndarray, fraction: float) -> np.ndarray:
    """Mask of the `fraction` members farthest (cosine) from their cluster mean."""
    n_out = int(np.floor(fraction * x.shape[0]))
    mask = np.zeros(x.shape[0], dtype=bool)
    if n_out == 0:
        return mask
    centre = x.mean(axis=0)
    sims = x @ (centre / max(np.linalg.norm(centre), 1e-12))
    mask[np.argsort(sims, kind="stable")[:n_out]] = True
    return mask


def _guard(sizes_in: np.ndarray, sizes: np.ndarray, min_kept: float, max_collapsed: float) -> tuple[int, str]:
    """(number of collapsed clusters, reason to decline or '')."""
    present = sizes_in > 0
    vanished = np.flatnonzero(present & (sizes == 0))
    if vanished.size:
        return int(vanished.size), f"cluster {int(vanished[0])} vanished ({int(sizes_in[vanished[0]])} -> 0 members)"
    collapsed = present & (sizes < min_kept * sizes_in)
    n_collapsed = int(collapsed.sum())
    allowed = max_collapsed * int(present.sum())
    if n_collapsed > allowed:
        worst = int(np.argmin(np.where(present, sizes / np.maximum(sizes_in, 1), np.inf)))
        return n_collapsed, (
            f"{n_collapsed} of {int(present.sum())} clusters kept under {min_kept:.0%} of their members "
            f"(allowed {allowed:.1f}); worst: cluster {worst} {int(sizes_in[worst])} -> {int(sizes[worst])}"
        )
    return n_collapsed, ""


def refine_partition(
    embeddings: np.ndarray,
    labels: Sequence[int] | np.ndarray,
    *,
    num_clusters: int | None = None,
    max_rounds: int = 20,
    tol: float = 0.01,
    outlier_fraction: float = 0.1,
    train_fraction: tuple[float, float] = (0.7, 0.85),
    min_kept: float = 0.34,
    max_collapsed: float = 0.1,
    random_state: int = 0,
) -> RefinementResult:
    """Refine a partition of embeddings by iterative classification.

    Every round: per cluster, flag outliers (the ``outlier_fraction`` members farthest from the cluster mean by
    cosine); from the rest take a random sample of at most ``p * N / K`` members (``p`` drawn per round from
    ``train_fraction``); fit the classifier (shrinkage LDA with uniform priors) on the sample with cluster ids as
    targets; reassign every text with it. Stops when fewer than ``tol`` of the texts changed cluster in a round, or
    after ``max_rounds``. Finally a linear head is fitted on all texts and the final partition is its argmax, so the
    head reproduces ``labels`` exactly.

    Args:
        embeddings: ``(N, d)`` array, one row per text (L2-normalised inside).
        labels: ``(N,)`` integer cluster ids in ``[0, K)``, from any clustering method.
        num_clusters: K; defaults to ``max(labels) + 1``. Clusters empty at input stay empty.
        max_rounds: upper bound on classification rounds. 0 runs none: the input partition is only distilled
            into the linear head (fitted on every text, labels = its argmax; UMAP -> k-means: within ~0.5 ACC of it
            on 7 of 8 corpora, where nearest centres lose up to 3 points and the default rounds up to 5).
            :func:`~hf_textcluster.choosing.linear_heads.distil_partition` is what serves a partition made elsewhere.
        tol: stop when the fraction of texts that changed cluster in a round is below this (0 <= tol < 1).
        outlier_fraction: share of each cluster set aside by the default outlier rule (0 <= f < 0.5).
        train_fraction: ``(low, high)`` range of ``p``; the per-cluster training cap is ``p * N / K``.
        min_kept: guard: a cluster "collapses" when it keeps less than this fraction of its input size.
        max_collapsed: guard: decline when more than this fraction of the clusters collapse, or any vanishes.
        random_state: seed for sampling and for estimators that take one; same inputs give same outputs.

    Returns:
        A :class:`~hf_textcluster.choosing.linear_heads.RefinementResult`. When the guard fires, ``declined`` is
        True, ``labels`` is the input and ``reason`` says which cluster collapsed; the head then is fitted on the
        input partition.

    Raises:
        ValueError: on malformed embeddings or labels, or out-of-range parameters (the message names the
            argument and the fix).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> centres = rng.normal(size=(3, 16)) * 4
        >>> x = np.repeat(centres, 50, axis=0) + rng.normal(size=(150, 16))
        >>> noisy = np.repeat(np.arange(3), 50); noisy[::7] = (noisy[::7] + 1) % 3
        >>> result = refine_partition(x, noisy, random_state=0)
        >>> bool((result.labels == np.repeat(np.arange(3), 50)).mean() > 0.95), result.declined
        (True, False)
    """
    x = l2_normalize(check_embeddings(embeddings))
    y_in, k = _check_labels(labels, x.shape[0], num_clusters)
    options = {"max_rounds": max_rounds, "tol": tol, "outlier_fraction": outlier_fraction, "min_kept": min_kept}
    validate_parameters({**options, "max_collapsed": max_collapsed, "random_state": random_state}, _OPTIONS)
    if not isinstance(train_fraction, (tuple, list)) or len(train_fraction) != 2:
        raise ValueError(f"`train_fraction` must be a (low, high) pair in (0, 1]; got {train_fraction!r}.")
    p_low, p_high = train_fraction
    for bound in train_fraction:
        validate_parameters({"train_fraction": bound}, _OPTIONS)
    if p_low > p_high:
        raise ValueError(f"`train_fraction` must be (low, high) with low <= high; got {train_fraction!r}.")
    template = SharedCovarianceClassifier()

    # the classification rounds
    rng = np.random.default_rng(random_state)
    n = x.shape[0]
    sizes_in = np.bincount(y_in, minlength=k)
    present = int((sizes_in > 0).sum())
    y = y_in.copy()
    history: list[dict[str, float]] = []
    reason = f"max_rounds ({max_rounds}) reached" if max_rounds else "no rounds: the input distilled into the head"
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        seed = int(rng.integers(2**31 - 1))
        cap = max(2, int(round(rng.uniform(p_low, p_high) * n / present)))
        train = np.zeros(n, dtype=bool)
        n_out = 0
        for c in np.flatnonzero(np.bincount(y, minlength=k)):
            members = np.flatnonzero(y == c)
            inliers = members[~_centroid_outliers(x[members], outlier_fraction)]
            if inliers.size == 0:  # keep the cluster known to the classifier
                inliers = members
            n_out += members.size - inliers.size
            if inliers.size > cap:
                inliers = rng.choice(inliers, size=cap, replace=False)
            train[inliers] = True
        y_new = np.asarray(_fit_classifier(template, x[train], y[train], seed).predict(x), dtype=np.int64)
        change = float(np.mean(y_new != y))
        y = y_new
        sizes = np.bincount(y, minlength=k)
        history.append(
            {
                "round": rounds,
                "changed": change,
                "changed_total": float(np.mean(y != y_in)),
                "train_size": int(train.sum()),
                "outliers": n_out,
                "min_size": int(sizes[sizes_in > 0].min()),
                "collapsed": _guard(sizes_in, sizes, min_kept, max_collapsed)[0],
            }
        )
        if change < tol:
            reason = f"converged: {change:.4f} of texts changed in round {rounds} (< tol {tol})"
            break
    # the head fitted on every text, whose argmax is the served partition (so head and labels agree exactly); when
    # the guard declines, the head is fitted on the input, which is returned unchanged
    head_clf = _fit_classifier(template, x, y, random_state)
    y_final = np.asarray(head_clf.predict(x), dtype=np.int64)
    why = _guard(sizes_in, np.bincount(y_final, minlength=k), min_kept, max_collapsed)[1]
    if why:
        reason = f"declined: {why}; the input partition is returned unchanged"
        y_final = y_in.copy()
        head_clf = _fit_classifier(template, x, y_final, random_state)
    coef, intercept = _linear_head(head_clf, k, x.shape[1])
    head_agreement = float(np.mean(np.argmax(x @ coef.T + intercept, axis=1) == y_final))
    fields = {"rounds": rounds, "history": history, "declined": bool(why), "reason": reason}
    return served_by_head(x, y_in, y_final, coef, intercept, head_agreement=head_agreement, **fields)
