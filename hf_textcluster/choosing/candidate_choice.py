"""Label-free choice among candidate partitions of the same texts, by the criteria of
:mod:`~hf_textcluster.choosing.criteria`.

* One trained model's candidates (its head, k-means and UMAP k-means on its embeddings, each refined or not), all
  made in its embedding space: :func:`score_partitions` and :func:`choose_partition`, by one criterion of
  :data:`~hf_textcluster.choosing.criteria.SERVE_CRITERIA` (default :data:`DEFAULT_SERVE_CRITERION`).
* ``train --method auto``'s candidates, made in *different* spaces (each trained signal's and the pretrained
  encoder's): :func:`candidate_criteria` scores each in its own space, in every space at once and in the lexical space
  no candidate was made in, so no candidate is judged only by the space that shaped it. :func:`guarded_choice` picks
  by :data:`DEFAULT_AUTO_CRITERION` and guards the pick: the pretrained encoder's UMAP -> k-means partition
  (:data:`BERTOPIC_WAY`, what BERTopic gives at the same K) is served instead unless the pick scores strictly higher
  in every view of :data:`GUARD_CRITERIA`.

No labels ever enter this module. Ties go to the candidate listed first.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np
from transformers.utils import logging

from ..modeling.validation import check_scalar
from .consensus import dense_partitions
from .criteria import AUTO_CRITERIA, CRITERIA, PRETRAINED, SERVE_CRITERIA, CandidatePool
from .linear_heads import check_embeddings

logger = logging.get_logger(__name__)

__all__ = [
    "BERTOPIC_WAY",
    "DEFAULT_AUTO_CRITERION",
    "DEFAULT_SERVE_CRITERION",
    "GUARD_CRITERIA",
    "candidate_criteria",
    "choose_candidate",
    "choose_partition",
    "guarded_choice",
    "highest",
    "score_partitions",
]

# Measured best of SERVE_CRITERIA on MiniLM embeddings of the 8 corpora (docs/results.md): the smallest mean ACC loss
# against the best candidate, with no extra dependency.
DEFAULT_SERVE_CRITERION = "separability"
DEFAULT_AUTO_CRITERION = "knn_holdout_lexical_supported"
# Do no harm: the pretrained encoder's UMAP -> k-means partition is what a user gets from BERTopic at the same K.
# Another candidate is served only when every view that judges both from outside their own space agrees that it is
# better: the held-out vote of the lexical space (which shaped no candidate) and the held-out vote and the silhouette
# in all spaces at once. Chosen on the tuning corpora alone (docs/benchmarks.md): there it never served less than the
# BERTopic way by more than 0.1 ACC.
BERTOPIC_WAY = f"{PRETRAINED}/umap_kmeans"
GUARD_CRITERIA = ("knn_holdout_lexical", "knn_holdout_shared", "silhouette_shared")


def score_partitions(
    embeddings: np.ndarray,
    candidates: Mapping[str, np.ndarray],
    *,
    criterion: str = DEFAULT_SERVE_CRITERION,
    random_state: int = 0,
) -> dict[str, float]:
    """Score every candidate partition of the same texts by a label-free criterion (higher is better).

    Args:
        embeddings: ``(N, d)`` array, one row per text (L2-normalised inside).
        candidates: name -> ``(N,)`` cluster ids (any hashable ids; only the grouping matters).
        criterion: a registered criterion that scores partitions (those offered: :data:`SERVE_CRITERIA`); default
            :data:`DEFAULT_SERVE_CRITERION`.
        random_state: seed of the silhouette sample and the cross-validation folds.

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
    x = check_embeddings(embeddings)
    if criterion not in CRITERIA or CRITERIA[criterion].scores == "k":
        raise ValueError(f"`criterion` must be one of {', '.join(SERVE_CRITERIA)}; got {criterion!r}.")
    check_scalar(random_state, "random_state", numbers.Integral)
    parts = dense_partitions(candidates, x.shape[0], "candidates")
    if criterion.startswith("agreement") and len(parts) < 3:
        raise ValueError(f"`criterion` {criterion!r} needs at least 3 candidates; pass more or pick another criterion.")
    pool = CandidatePool(parts, {"embeddings": x}, random_state=random_state)
    return pool.values(criterion)


def choose_partition(
    embeddings: np.ndarray,
    candidates: Mapping[str, np.ndarray],
    *,
    criterion: str = DEFAULT_SERVE_CRITERION,
    random_state: int = 0,
) -> tuple[str, dict[str, float]]:
    """The candidate with the highest :func:`score_partitions` score (ties: the first listed), and all scores.

    Args:
        embeddings: ``(N, d)`` array, one row per text.
        candidates: name -> ``(N,)`` cluster ids.
        criterion: as in :func:`score_partitions`; default :data:`DEFAULT_SERVE_CRITERION`.
        random_state: seed, as in :func:`score_partitions`.

    Returns:
        ``(name, scores)``.

    Raises:
        ValueError: as :func:`score_partitions`.

    Example:
        >>> x = np.repeat(np.eye(2) * 5, 10, axis=0)
        >>> choose_partition(x, {"a": [0] * 10 + [1] * 10, "b": [0, 1] * 10}, criterion="silhouette")[0]
        'a'
    """
    scores = score_partitions(embeddings, candidates, criterion=criterion, random_state=random_state)
    return highest(scores), scores


def candidate_criteria(
    candidates: Mapping[str, np.ndarray],
    spaces: Mapping[str, np.ndarray],
    *,
    texts: Sequence[str] | None = None,
    criteria: Sequence[str] = AUTO_CRITERIA,
    random_state: int = 0,
) -> dict[str, dict[str, float]]:
    """Label-free criteria of every candidate made in different spaces (higher is better): criterion -> candidate ->
    value.

    Args:
        candidates: ``<source>/<read-out>`` (and ``consensus``) -> ``(N,)`` cluster ids of the same texts.
        spaces: source -> ``(N, d)`` features the source's candidates were made in (each trained signal's and
            ``pretrained``'s).
        texts: the N texts, for the lexical space (left out when None).
        criteria: which of :data:`~hf_textcluster.choosing.criteria.AUTO_CRITERIA` to compute (what one is made of
            is computed with it, returned only when asked for).
        random_state: seed of the criteria's samples, folds and the lexical space's SVD.

    Returns:
        ``{criterion: {candidate: value}}``.

    Raises:
        ValueError: an unknown criterion.

    Example:
        >>> spaces = {"contrastive": x1, "pretrained": x0}
        >>> values = candidate_criteria(candidates, spaces, texts=texts)  # doctest: +SKIP
        >>> max(values["knn_holdout_lexical"], key=values["knn_holdout_lexical"].get)  # doctest: +SKIP
        'self_training/kmeans'
    """
    unknown = [c for c in criteria if c not in AUTO_CRITERIA]
    if unknown:
        raise ValueError(f"`criteria` must be among {', '.join(AUTO_CRITERIA)}; got {unknown}.")
    pool = CandidatePool(
        dense_partitions(candidates, name="candidates"), spaces, texts=texts, random_state=random_state
    )
    return {c: pool.values(c) for c in criteria}


def highest(values: Mapping[str, float]) -> str:
    """The name with the highest value (ties: the first listed)."""
    return max(values, key=values.__getitem__)  # max keeps the first of equal values


def guarded_choice(
    criteria: Mapping[str, Mapping[str, float]], criterion: str, guards: Sequence[str] = GUARD_CRITERIA
) -> tuple[str, str]:
    """``(served, pick)``: ``pick`` is the candidate ``criterion`` ranks highest; ``served`` is ``pick`` when it is
    :data:`BERTOPIC_WAY` or scores strictly higher than it in each of ``guards`` that was computed, else
    :data:`BERTOPIC_WAY`. Without :data:`BERTOPIC_WAY` or any guard's values, ``pick`` is served.

    Example:
        >>> guarded_choice(
        ...     {"vote": {"a/head": 0.9, "pretrained/umap_kmeans": 0.5},
        ...      "knn_holdout_lexical": {"a/head": 0.63, "pretrained/umap_kmeans": 0.62},
        ...      "knn_holdout_shared": {"a/head": 0.70, "pretrained/umap_kmeans": 0.71}},
        ...     "vote",
        ... )
        ('pretrained/umap_kmeans', 'a/head')
    """
    pick = highest(criteria[criterion])
    views = [criteria[g] for g in guards if pick in criteria.get(g, {}) and BERTOPIC_WAY in criteria[g]]
    if pick == BERTOPIC_WAY or not views:
        return pick, pick
    return (pick if all(v[pick] > v[BERTOPIC_WAY] for v in views) else BERTOPIC_WAY), pick


def choose_candidate(
    criteria: Mapping[str, Mapping[str, float]], criterion: str, serve: str, candidates: Mapping
) -> tuple[str, str]:
    """``(served, pick)``: for ``serve="auto"`` the highest by ``criterion``, guarded (:func:`guarded_choice`; a
    warning says when the guard kept :data:`BERTOPIC_WAY`); else the candidate asked for, twice.

    Raises:
        ValueError: ``serve`` is neither ``"auto"`` nor one of ``candidates``.
    """
    if serve == "auto":
        served, pick = guarded_choice(criteria, criterion)
        if BERTOPIC_WAY not in candidates:
            logger.warning(f"No {BERTOPIC_WAY} candidate (UMAP failed): {pick} is served unguarded.")
        elif served != pick:
            guards = [g for g in GUARD_CRITERIA if g in criteria]
            views = ", ".join(f"{g} {criteria[g][pick]:.3f} vs {criteria[g][BERTOPIC_WAY]:.3f}" for g in guards)
            logger.warning(
                f"Serving the pretrained encoder's UMAP k-means clusters (the BERTopic way): the best trained "
                f"candidate, {pick}, does not beat them in every held-out view ({views})."
            )
        return served, pick
    if serve in candidates:
        return serve, serve
    raise ValueError(
        f"`serve`={serve!r} is not a candidate of this run; pass 'auto' or one of {', '.join(candidates)}."
    )
