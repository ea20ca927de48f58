"""Label-free criteria of candidate partitions that were made in *different* spaces (``train --method auto``).

A candidate made by k-means in a model's embedding space looks good in that space: scoring each candidate only where
it was made favours whichever model sharpens its own space most, and agreement with the other candidates (ANMI)
favours a consensus made of them. The *shared-space* criteria score every candidate in every space at once, so no
candidate is judged only by the space that shaped it:

* the pretrained encoder's embeddings, each trained signal's, and
* a lexical space no candidate was made in: latent semantic analysis of the texts (TF-IDF, then a truncated SVD;
  Deerwester et al. 1990), which carries the words the texts share and none of the encoders' training;

and take the mean over the spaces. ``knn_holdout_shared`` does this with the registry's held-out neighbour vote (a
10-neighbour vote from one half of the texts predicts the other half's clusters, scored by NMI): a partition whose
clusters are neighbourhoods in every view of the texts, on texts the vote did not see.

The criteria here, all oriented so that higher is better:

* :data:`POOL_CRITERIA`: agreement with the other candidates (no space): ``agreement`` (ANMI, Strehl & Ghosh 2002),
  ``agreement_independent`` (against candidates of other sources only), ``agreement_ari``;
* :data:`SPACE_CRITERIA`: a registry criterion in the space the candidate was made in (the consensus: the mean over
  the trained signals' spaces);
* :data:`SHARED_CRITERIA`: a registry criterion averaged over every space (see above);
* :data:`LEXICAL_CRITERIA`: ``knn_holdout_lexical``, the held-out neighbour vote in the lexical space alone, the one
  view of the texts that shaped no candidate (where the texts share too few words for that space, it falls back to
  ``knn_holdout_shared``);
* :data:`SUPPORTED_CRITERIA`: ``knn_holdout_lexical_supported``, the lexical vote among the candidates the others
  support: the quarter of candidates that agree least with the rest (ANMI) are set aside (their value is the vote
  minus 1, below every other), so a partition that only one read-out finds cannot win on a small edge in the
  vote.

:func:`guarded_choice` makes the choice and guards it: the pretrained encoder's UMAP -> k-means partition
(:data:`BERTOPIC_WAY`, what BERTopic gives at the same K) is served instead of the criterion's pick unless the pick
scores strictly higher in the lexical vote (:data:`GUARD_CRITERION`).

No labels ever enter this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from sklearn.metrics import adjusted_rand_score

from .consensus import average_nmi
from .selection import score_partitions

__all__ = [
    "AUTO_CRITERIA",
    "BERTOPIC_WAY",
    "DEFAULT_AUTO_CRITERION",
    "GUARD_CRITERION",
    "LEXICAL",
    "LEXICAL_CRITERIA",
    "PARTS",
    "POOL_CRITERIA",
    "SHARED_CRITERIA",
    "SPACE_CRITERIA",
    "SUPPORTED_CRITERIA",
    "candidate_criteria",
    "guarded_choice",
    "highest",
    "lexical_space",
    "supported_vote",
]

POOL_CRITERIA = ("agreement", "agreement_independent", "agreement_ari")
SPACE_CRITERIA = ("separability", "knn_holdout", "silhouette")
SHARED_CRITERIA = ("knn_holdout_shared", "silhouette_shared")
LEXICAL_CRITERIA = ("knn_holdout_lexical",)
SUPPORTED_CRITERIA = ("knn_holdout_lexical_supported",)
AUTO_CRITERIA = POOL_CRITERIA + SPACE_CRITERIA + SHARED_CRITERIA + LEXICAL_CRITERIA + SUPPORTED_CRITERIA
DEFAULT_AUTO_CRITERION = "knn_holdout_lexical_supported"
# What a criterion is made of: computed with it (train_auto records them beside it, to explain the choice).
PARTS = {"knn_holdout_lexical_supported": ("knn_holdout_lexical", "agreement")}
# The share of candidates, least in agreement with the others, that knn_holdout_lexical_supported sets aside.
UNSUPPORTED_SHARE = 0.25
LEXICAL = "lexical"
PRETRAINED = "pretrained"
# Do no harm: the pretrained encoder's UMAP -> k-means partition is what a user gets from BERTopic at the same K.
# Another candidate is served only when it beats that one in the held-out vote of the lexical space, the one view of
# the texts that shaped no candidate. The criterion and the rule (strictly higher, no margin) were chosen on the
# tuning corpora alone (docs/benchmarks.md).
BERTOPIC_WAY = f"{PRETRAINED}/umap_kmeans"
GUARD_CRITERION = "knn_holdout_lexical"

# LSA's dimensions: enough for the topics of a short-text corpus, cheap for the neighbour vote.
_LEXICAL_DIMS = 128


def lexical_space(texts: Sequence[str], *, random_state: int = 0) -> np.ndarray | None:
    """The texts in a lexical space: TF-IDF (sublinear term frequency, English stop words left out, words of at least
    two texts) reduced by a truncated SVD to at most 128 dimensions (latent semantic analysis), rows L2-normalised.

    Args:
        texts: the texts, one row each.
        random_state: seed of the randomized SVD.

    Returns:
        An ``(N, m)`` float32 array, or None when the texts share too few words for a space (fewer than 3 terms).

    Example:
        >>> x = lexical_space(["sql join tables", "join two sql tables", "python list sort", "sort a python list"])
        >>> x.shape[0], bool(np.allclose(np.linalg.norm(x, axis=1), 1.0))
        (4, True)
    """
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import normalize

    try:
        tfidf = TfidfVectorizer(min_df=2, stop_words="english", sublinear_tf=True).fit_transform(texts)
    except ValueError:  # no word in two texts: no lexical view of this corpus
        return None
    dims = min(_LEXICAL_DIMS, tfidf.shape[1] - 1, tfidf.shape[0] - 1)
    if dims < 2:
        return None
    reduced = TruncatedSVD(n_components=dims, random_state=random_state).fit_transform(tfidf)
    return normalize(reduced).astype(np.float32)


def _source(name: str) -> str | None:
    """The source of a candidate: the signal (or ``pretrained``) before the slash; None for the consensus."""
    return name.split("/", 1)[0] if "/" in name else None


def _mean_score(criterion: str, spaces: Sequence[np.ndarray], labels: np.ndarray, random_state: int) -> float:
    values = [score_partitions(x, {"c": labels}, criterion=criterion, random_state=random_state)["c"] for x in spaces]
    return float(np.mean(values))


def candidate_criteria(
    candidates: Mapping[str, np.ndarray],
    spaces: Mapping[str, np.ndarray],
    *,
    texts: Sequence[str] | None = None,
    criteria: Sequence[str] = AUTO_CRITERIA,
    random_state: int = 0,
) -> dict[str, dict[str, float]]:
    """Label-free criteria of every candidate (higher is better): criterion -> candidate -> value.

    Args:
        candidates: ``<source>/<read-out>`` (and ``consensus``) -> ``(N,)`` cluster ids of the same texts.
        spaces: source -> ``(N, d)`` features the source's candidates were made in (each trained signal's and
            ``pretrained``'s).
        texts: the N texts, for the lexical space of the shared-space criteria (left out when None).
        criteria: which of :data:`AUTO_CRITERIA` to compute.
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
    wanted = list(criteria)
    supported = SUPPORTED_CRITERIA[0] in wanted
    computed = [c for c in wanted if c not in SUPPORTED_CRITERIA]
    if supported:  # made of two others: computed too, returned only when asked for
        computed += [c for c in PARTS[SUPPORTED_CRITERIA[0]] if c not in computed]
    pool: dict[str, Callable[[], dict[str, float]]] = {
        "agreement": lambda: average_nmi(candidates),
        "agreement_independent": lambda: average_nmi(candidates, source=_source),
        "agreement_ari": lambda: {
            n: float(np.mean([adjusted_rand_score(candidates[n], candidates[m]) for m in candidates if m != n]))
            for n in candidates
        },
    }
    trained = [s for s in spaces if s != PRETRAINED]
    lexical = None
    if texts is not None and any(c in SHARED_CRITERIA + LEXICAL_CRITERIA for c in computed):
        lexical = lexical_space(texts, random_state=random_state)
    shared = list(spaces.values()) + ([lexical] if lexical is not None else [])
    values: dict[str, dict[str, float]] = {}
    for criterion in computed:
        if criterion in pool:
            values[criterion] = pool[criterion]()
        elif criterion in SHARED_CRITERIA + LEXICAL_CRITERIA:
            base, _, view = criterion.rpartition("_")
            where = [lexical] if view == "lexical" and lexical is not None else shared
            values[criterion] = {n: _mean_score(base, where, y, random_state) for n, y in candidates.items()}
        else:
            values[criterion] = {
                n: _mean_score(criterion, [spaces[s] for s in _own_spaces(n, spaces, trained)], y, random_state)
                for n, y in candidates.items()
            }
    if supported:
        values[SUPPORTED_CRITERIA[0]] = supported_vote(values["knn_holdout_lexical"], values["agreement"])
    return {c: values[c] for c in wanted}


def supported_vote(vote: Mapping[str, float], agreement: Mapping[str, float]) -> dict[str, float]:
    """``vote`` where a candidate's ``agreement`` with the others is at least the pool's
    :data:`UNSUPPORTED_SHARE` quantile; ``vote - 1`` (below every other) for the rest.

    Example:
        >>> supported_vote({"a": 0.6, "b": 0.5, "c": 0.4, "d": 0.3}, {"a": 0.1, "b": 0.8, "c": 0.7, "d": 0.9})
        {'a': -0.4, 'b': 0.5, 'c': 0.4, 'd': 0.3}
    """
    cut = float(np.quantile([agreement[n] for n in vote], UNSUPPORTED_SHARE))
    return {n: float(v) if agreement[n] >= cut else float(v) - 1.0 for n, v in vote.items()}


def highest(values: Mapping[str, float]) -> str:
    """The name with the highest value (ties: the first listed)."""
    best = max(values.values())
    return next(n for n, v in values.items() if v == best)


def guarded_choice(criteria: Mapping[str, Mapping[str, float]], criterion: str) -> tuple[str, str]:
    """``(served, pick)``: ``pick`` is the candidate ``criterion`` ranks highest; ``served`` is ``pick`` when it is
    :data:`BERTOPIC_WAY` or scores strictly higher than it by :data:`GUARD_CRITERION`, else :data:`BERTOPIC_WAY`.
    Without either value (no UMAP candidate, the guard's criterion not computed) ``pick`` is served.

    Example:
        >>> guarded_choice(
        ...     {"vote": {"a/head": 0.9, "pretrained/umap_kmeans": 0.5},
        ...      "knn_holdout_lexical": {"a/head": 0.61, "pretrained/umap_kmeans": 0.62}},
        ...     "vote",
        ... )
        ('pretrained/umap_kmeans', 'a/head')
    """
    pick = highest(criteria[criterion])
    guard = criteria.get(GUARD_CRITERION, {})
    if pick == BERTOPIC_WAY or pick not in guard or BERTOPIC_WAY not in guard:
        return pick, pick
    return (pick if guard[pick] > guard[BERTOPIC_WAY] else BERTOPIC_WAY), pick


def _own_spaces(name: str, spaces: Mapping[str, np.ndarray], trained: list[str]) -> list[str]:
    """The spaces a candidate was made in: its source's, or for the consensus every trained signal's."""
    source = _source(name)
    return [source] if source in spaces else trained
