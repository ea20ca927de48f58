"""Label-free criteria: the one registry of what the choice of K, the choice of the served partition and the choice
among ``train --method auto``'s candidates score with.

Each criterion is registered once, in :data:`CRITERIA`, as a :class:`Criterion`: its name (the same in
``--k-criterion``, ``training_run.json`` and the benchmark tables), what it scores, whether higher is better and its
function. What it scores decides how the function is called:

* ``"partition"``: ``score(features, labels, random_state) -> float``, one partition in one space: ``features`` the
  ``(N, d)`` L2-normalised embeddings, ``labels`` ``(N,)`` cluster ids ``0..K-1`` with ``2 <= K < N`` (a degenerate
  partition gets :attr:`Criterion.degenerate`, unscored). ``space`` says where a candidate is scored: its own space
  (``"own"``; for the consensus, every trained signal's), every space and the lexical one (``"shared"``), or the
  lexical one alone (``"lexical"``, falling back on ``"shared"``);
* ``"candidates"``: ``score(pool) -> {name: value}``, every candidate of a :class:`CandidatePool` at once (the
  agreement with the other candidates);
* ``"k"``: ``score(x, k_min, k_max, random_state, n_neighbors) -> {K: value}``, every K at once (``eigengap``).

The lexical space (:func:`lexical_space`: TF-IDF then a truncated SVD, latent semantic analysis, Deerwester et al.
1990) carries the words the texts share and none of the encoders' training: no candidate was made in it.

No labels ever enter this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.linear_model import RidgeClassifier
from sklearn.metrics import calinski_harabasz_score, davies_bouldin_score
from sklearn.model_selection import KFold, cross_val_score

from .consensus import average_nmi
from .layout_k import umap_silhouettes
from .linear_heads import l2_normalize
from .spectrum import search_eigengap

__all__ = [
    "AUTO_CRITERIA",
    "CRITERIA",
    "K_CRITERIA",
    "PARTS",
    "PRETRAINED",
    "SERVE_CRITERIA",
    "CandidatePool",
    "Criterion",
    "cosine_silhouette",
    "get_criterion",
    "knn_holdout",
    "lexical_space",
    "register_criterion",
    "supported_vote",
]

# The source of the pretrained encoder's candidates (the others are trained signals).
PRETRAINED = "pretrained"


@dataclass(frozen=True)
class Criterion:
    """One label-free criterion.

    Args:
        name: its one name (``--k-criterion`` values, the keys of recorded scores, the benchmark tables).
        score: its function; how it is called depends on ``scores`` (see the module docstring).
        higher_is_better: whether a larger score is better.
        description: one line for listings.
        scores: ``"partition"``, ``"candidates"`` or ``"k"``.
        space: where a ``"partition"`` criterion scores a candidate (``"own"``, ``"shared"``, ``"lexical"``); for
            the others, the space they read (None: no space).
        degenerate: the value (oriented so that higher is better) of a partition with one cluster or one per text.
        sample: score a partition on a seeded sample of at most this many texts (None: every text).
        parts: the criteria it is computed from.
    """

    name: str
    score: Callable[..., Any]
    higher_is_better: bool = True
    description: str = ""
    scores: str = "partition"
    space: str | None = "own"
    degenerate: float = -math.inf
    sample: int | None = None
    parts: tuple[str, ...] = ()

    def signed(self, value: float) -> float:
        """``value`` oriented so that higher is better (negated for a lower-is-better criterion).

        Example:
            >>> CRITERIA["davies_bouldin"].signed(0.8)
            -0.8
        """
        return value if self.higher_is_better else -value

    def value(self, features: np.ndarray, labels: np.ndarray, random_state: int | None) -> float:
        """A ``"partition"`` criterion's value of ``labels`` on ``features``, oriented so that higher is better."""
        k = np.unique(labels).size
        if k < 2 or k >= features.shape[0]:
            return self.degenerate
        if self.sample is not None:
            # the same rows for every candidate: the seed, not the partition, decides which texts are scored
            rows = np.random.default_rng(random_state).choice(
                features.shape[0], size=min(self.sample, features.shape[0]), replace=False
            )
            features, labels = features[rows], labels[rows]
            if np.unique(labels).size < 2:
                return self.degenerate
        return self.signed(self.score(features, labels, random_state))


def cosine_silhouette(x: np.ndarray, labels: np.ndarray, random_state: int | None = None) -> float:
    """Mean silhouette with cosine distance of the L2-normalised rows ``x`` (what ``sklearn.metrics.silhouette_score(
    x, labels, metric="cosine")`` returns), in O(N K d): the summed distance of text i to cluster c is
    n_c - x_i . s_c, with s_c the sum of the cluster's rows.

    Args:
        x: ``(N, d)`` L2-normalised rows.
        labels: ``(N,)`` cluster ids (any integers).
        random_state: unused (the silhouette draws nothing); a partition criterion's signature.

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


def _unseeded(score: Callable[[np.ndarray, np.ndarray], float]) -> Callable[..., float]:
    """A scikit-learn score ``score(features, labels)`` as a partition criterion's function (it draws nothing)."""
    return lambda features, labels, random_state: float(score(features, labels))


_calinski_harabasz = _unseeded(calinski_harabasz_score)
_davies_bouldin = _unseeded(davies_bouldin_score)


def _separability(features: np.ndarray, labels: np.ndarray, random_state: int | None) -> float:
    folds = KFold(n_splits=3, shuffle=True, random_state=random_state)
    return float(cross_val_score(RidgeClassifier(alpha=1.0), features, labels, cv=folds).mean())


# The held-out neighbourhood criterion scores at most this many texts (a seeded sample), half of them held out.
_KNN_SAMPLE = 10_000
_KNN_NEIGHBOURS = 10


def knn_holdout(features: np.ndarray, labels: np.ndarray, random_state: int | None) -> float:
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


@dataclass
class CandidatePool:
    """Candidate partitions of the same texts and the spaces they are scored in.

    Attributes:
        candidates: name -> ``(N,)`` cluster ids ``0..K-1`` (``<source>/<read-out>`` for ``train --method auto``).
        spaces: source -> ``(N, d)`` features its candidates were made in (L2-normalised on first use).
        texts: the N texts, for the lexical space (None: no lexical space).
        random_state: seed of every criterion's samples, folds and reductions, and of the lexical space's SVD.
        registry: the criteria it scores by name (default :data:`CRITERIA`; a study may pass its own mapping).
    """

    candidates: Mapping[str, np.ndarray]
    spaces: Mapping[str, np.ndarray]
    texts: Sequence[str] | None = None
    random_state: int = 0
    registry: Mapping[str, Criterion] = field(default_factory=lambda: CRITERIA, repr=False)
    _normalised: dict = field(default_factory=dict, repr=False)
    _values: dict = field(default_factory=dict, repr=False)

    def space(self, source: str) -> np.ndarray:
        if source not in self._normalised:
            self._normalised[source] = l2_normalize(np.asarray(self.spaces[source], dtype=np.float64))
        return self._normalised[source]

    def lexical(self) -> np.ndarray | None:
        if None not in self._normalised:  # the lexical space, under a key no source has
            x = None if self.texts is None else lexical_space(self.texts, random_state=self.random_state)
            self._normalised[None] = None if x is None else l2_normalize(x.astype(np.float64))
        return self._normalised[None]

    def spaces_of(self, name: str, where: str) -> list[np.ndarray]:
        """The spaces candidate ``name`` is scored in: its own (its source's, for the consensus every trained
        signal's), every space and the lexical one, or the lexical one alone (every space without it)."""
        lexical = self.lexical() if where in ("shared", "lexical") else None
        if where == "lexical" and lexical is not None:
            return [lexical]
        if where in ("shared", "lexical"):
            return [self.space(s) for s in self.spaces] + ([lexical] if lexical is not None else [])
        source = _source(name)
        own = [source] if source in self.spaces else [s for s in self.spaces if s != PRETRAINED]
        return [self.space(s) for s in own]

    def values(self, criterion: str) -> dict[str, float]:
        """``criterion``'s value of every candidate, higher is better (computed once per pool)."""
        if criterion not in self._values:
            if criterion not in self.registry:
                raise ValueError(f"Unknown criterion {criterion!r}; choose one of {', '.join(self.registry)}.")
            found = self.registry[criterion]
            if found.scores == "candidates":
                self._values[criterion] = found.score(self)
            elif found.scores == "partition":
                self._values[criterion] = {
                    n: float(np.mean([found.value(x, y, self.random_state) for x in self.spaces_of(n, found.space)]))
                    for n, y in self.candidates.items()
                }
            else:
                raise ValueError(f"`criterion` {criterion!r} scores a number of clusters, not partitions.")
        return self._values[criterion]


def _agreement(pool: CandidatePool) -> dict[str, float]:
    return average_nmi(pool.candidates)


# The share of candidates, least in agreement with the others, that knn_holdout_lexical_supported sets aside.
UNSUPPORTED_SHARE = 0.25


def supported_vote(vote: Mapping[str, float], agreement: Mapping[str, float]) -> dict[str, float]:
    """``vote`` where a candidate's ``agreement`` with the others is at least the pool's
    :data:`UNSUPPORTED_SHARE` quantile; ``vote - 1`` (below every other) for the rest.

    Example:
        >>> supported_vote({"a": 0.6, "b": 0.5, "c": 0.4, "d": 0.3}, {"a": 0.1, "b": 0.8, "c": 0.7, "d": 0.9})
        {'a': -0.4, 'b': 0.5, 'c': 0.4, 'd': 0.3}
    """
    cut = float(np.quantile([agreement[n] for n in vote], UNSUPPORTED_SHARE))
    return {n: float(v) if agreement[n] >= cut else float(v) - 1.0 for n, v in vote.items()}


def _supported(pool: CandidatePool) -> dict[str, float]:
    return supported_vote(pool.values("knn_holdout_lexical"), pool.values("agreement"))


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


_SAMPLE = 5000  # the silhouettes of a partition look at a seeded sample of at most this many texts
_SHARED = {"space": "shared", "degenerate": 0.0}
_SILHOUETTE: dict[str, Any] = {"degenerate": -1.0, "sample": _SAMPLE}
_SHARED_SILHOUETTE = {"space": "shared", **_SILHOUETTE}
_LEXICAL = {"space": "lexical", "degenerate": 0.0}
for _criterion in (
    Criterion("silhouette", cosine_silhouette, True, "mean cosine silhouette (exact, O(N K d))", **_SILHOUETTE),
    Criterion("calinski_harabasz", _calinski_harabasz, True, "between- over within-cluster dispersion", degenerate=0.0),
    Criterion("davies_bouldin", _davies_bouldin, False, "mean worst ratio of spreads to centroid distance"),
    Criterion(
        "eigengap", search_eigengap, True, "largest gap of the kNN graph Laplacian's spectrum", scores="k", space=None
    ),
    Criterion(
        "umap_silhouette",
        umap_silhouettes,
        True,
        "silhouette of k-means on the BERTopic way's UMAP layout",
        scores="k",
        space=None,
    ),
    Criterion("separability", _separability, True, "3-fold accuracy of a ridge classifier", degenerate=0.0),
    Criterion(
        "agreement", _agreement, True, "mean NMI with the other candidates (ANMI)", scores="candidates", space=None
    ),
    Criterion("knn_holdout_shared", knn_holdout, True, "held-out 10-neighbour vote, mean over every space", **_SHARED),
    Criterion("silhouette_shared", cosine_silhouette, True, "silhouette, mean over every space", **_SHARED_SILHOUETTE),
    Criterion("knn_holdout_lexical", knn_holdout, True, "held-out 10-neighbour vote in the lexical space", **_LEXICAL),
    Criterion(
        "knn_holdout_lexical_supported",
        _supported,
        True,
        "knn_holdout_lexical, minus 1 for the quarter of candidates least in agreement with the others",
        scores="candidates",
        space="lexical",
        parts=("knn_holdout_lexical", "agreement"),
    ),
):
    register_criterion(_criterion)

# What each choice offers, in the order its listings show them.
K_CRITERIA = ("umap_silhouette", "silhouette", "calinski_harabasz", "davies_bouldin", "eigengap")
SERVE_CRITERIA = ("silhouette", "agreement", "separability", "calinski_harabasz", "davies_bouldin")
AUTO_CRITERIA = (
    "agreement",
    "separability",
    "silhouette",
    "knn_holdout_shared",
    "silhouette_shared",
    "knn_holdout_lexical",
    "knn_holdout_lexical_supported",
)
# What a criterion is made of: computed with it (train_auto records them beside it, to explain the choice).
PARTS = {c.name: c.parts for c in CRITERIA.values() if c.parts}
