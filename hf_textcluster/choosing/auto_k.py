"""Choosing the number of clusters K without labels, from the embeddings of the texts.

>>> from hf_textcluster.choosing.auto_k import estimate_num_clusters
>>> result = estimate_num_clusters(embeddings, k_min=2, k_max=60)          # N x d, e.g. MiniLM embeddings
>>> result.num_clusters, result.criterion, result.scores[result.num_clusters]

Every criterion looks at a seeded sample of at most ``sample_size`` texts (L2-normalised embeddings, so Euclidean
k-means and cosine similarity agree), which keeps the search affordable for any N; the embeddings themselves are the
costly part. The criteria (:data:`~hf_textcluster.choosing.criteria.K_CRITERIA`):

- ``umap_silhouette`` (the default, :data:`DEFAULT_CRITERION`): k-means on the BERTopic way's first UMAP layout for
  each K of the grid; the K with the highest silhouette in that layout (:mod:`~hf_textcluster.choosing.layout_k`).
  A run (:meth:`ClusterCountRequest.choose`) reads it on every text (:func:`choose_in_layout`), so its layouts are
  those the BERTopic way then clusters, and splits the clusters that hold clear groups of their own: K is their
  number, and the BERTopic way serves them.
- ``silhouette``, ``calinski_harabasz``, ``davies_bouldin`` (lowest is best): k-means (seeded, k-means++) for each K
  of a grid (every K up to 16, then ~10% steps, then every K around the best grid point), scored by that index (the
  cosine silhouette exactly, in O(N K d) from the cluster sums).
- ``eigengap``: K where the gap between consecutive smallest eigenvalues of a kNN graph's normalised Laplacian
  (self-tuning weights, Zelnik-Manor and Perona 2004) is largest.

``training/studies/without_k.py`` and ``without_k_tree.py`` chose the default on the tuning corpora and their class
subsets, by leaving one corpus out; ``python -m training.bench auto-k`` measures every criterion (docs/results.md,
"Choosing K without labels"); the others stay selectable with ``criterion=``. :meth:`AutoKResult.describe` says the K
chosen, its score and the next best peaks. How each criterion of the registry (:mod:`~hf_textcluster.choosing.criteria`)
scores the candidate K is in :mod:`~hf_textcluster.choosing.k_search`.
"""

from __future__ import annotations

import math
import numbers
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..editing.kmeans import umap_layouts
from ..modeling.input_checks import check_num_clusters, parse_num_clusters
from ..modeling.validation import check_scalar
from ..representation.summary import sample_rows
from .criteria import K_CRITERIA, get_criterion
from .k_search import KMeansSearch, best_k, score_criterion
from .layout_k import SPLIT_SILHOUETTE, candidate_ks, layout_partitions, split_layout_clusters
from .linear_heads import l2_normalize

DEFAULT_CRITERION = "umap_silhouette"

DEFAULT_SAMPLE_SIZE = 4000
LAYOUT_MAX_ROWS = 100_000  # umap_silhouette lays out at most this many texts (k-means' own max_samples)
K_MAX_CAP = 200  # the default k_max is at most this (the benchmark corpora have 4 to 152 classes)


@dataclass
class AutoKResult:
    """The K a criterion chose, with the score of every K it tried (``scores``: K -> value; higher is better except
    for ``davies_bouldin``, lower is better; ``eigengap``: lambda_{K+1} - lambda_K)."""

    num_clusters: int
    criterion: str
    scores: dict[int, float]
    k_min: int
    k_max: int  # the largest K tried (the requested k_max, or less when the sample is too small for it)
    sample_size: int  # how many texts the criterion looked at
    num_texts: int
    seconds: float
    random_state: int | None = 0
    notes: list[str] = field(default_factory=list)
    split_from: int | None = None  # umap_silhouette: the best K before its clusters were split (None: none split)

    def alternatives(self, count: int = 3) -> list[int]:
        """The best K of each other peak of the scores (a K scoring better than the K tried on either side of it),
        best first: the K a user would try next (``--num-clusters K``, or ``reduce``)."""
        signed = {k: get_criterion(self.criterion).signed(v) for k, v in self.scores.items()}
        ks = sorted(signed)
        peaks = [
            k
            for i, k in enumerate(ks)
            if k != (self.split_from or self.num_clusters)
            and (i == 0 or signed[k] > signed[ks[i - 1]])
            and (i == len(ks) - 1 or signed[k] >= signed[ks[i + 1]])
        ]
        return sorted(peaks, key=lambda k: -signed[k])[:count]

    def describe(self) -> str:
        """K, its score and the alternatives' in one line: how sure the choice is (:func:`describe_k_selection`)."""
        return describe_k_selection(self.to_dict())

    def to_dict(self) -> dict:
        """A JSON-ready record (``training_run.json``'s ``k_selection``)."""
        return {
            "num_clusters": self.num_clusters,
            "criterion": self.criterion,
            **({"split_from": self.split_from} if self.split_from else {}),
            "alternatives": self.alternatives(),
            "k_range": [self.k_min, self.k_max],
            "sample_size": self.sample_size,
            "num_texts": self.num_texts,
            "seconds": round(self.seconds, 2),
            "random_state": self.random_state,
            "scores": {str(k): round(float(v), 6) for k, v in sorted(self.scores.items())},
            **({"notes": list(self.notes)} if self.notes else {}),
        }

    __str__ = describe


def describe_k_selection(selection: dict) -> str:
    """How K was chosen (a ``k_selection`` record: :meth:`AutoKResult.to_dict`), how sure, and how to take another."""
    k_min, k_max = selection["k_range"]
    scores = selection.get("scores", {})
    score = lambda k: f" ({scores[str(k)]:.3f})" if str(k) in scores else ""  # noqa: E731
    others = ", ".join(f"K = {k}{score(k)}" for k in selection.get("alternatives", []))
    split = selection.get("split_from")  # K before the clusters holding clear groups were split
    clear = f"clusters hold clear groups (silhouette >= {SPLIT_SILHOUETTE} alone)"
    scored = f"{score(split)} at K = {split}, then split where {clear}" if split else ""
    return (
        f"K = {selection['num_clusters']}, chosen without labels by {selection['criterion']}"
        f"{scored or score(selection['num_clusters'])} among K in {k_min}..{k_max} ({selection['sample_size']:,} of "
        f"{selection['num_texts']:,} texts, {selection['seconds']:.1f}s)"
        + (f"; next best {others} (--num-clusters K trains another, `reduce` merges clusters)" if others else "")
    )


def default_k_max(num_texts: int, k_min: int = 2) -> int:
    """min(200, 3 sqrt(N)), at least ``k_min``: 149 for 2,472 texts, 200 from 4,445 texts on."""
    return max(k_min, min(K_MAX_CAP, int(3 * math.sqrt(num_texts))))


def _check_int(name: str, value, fix: str) -> int:
    return int(check_scalar(value, name, numbers.Integral, hint=fix, type_error=TypeError))


def _check_k_bounds(k_min, k_max) -> tuple[int, int | None]:
    """The checks of (k_min, k_max) that need no data: whole numbers, k_min >= 2, k_max >= k_min (or None)."""
    k_min = _check_int("k_min", k_min, "pass e.g. k_min=2")
    if k_min < 2:
        raise ValueError(
            f"`k_min` must be at least 2 (one cluster is no clustering), got {k_min}; pass k_min=2 or more."
        )
    if k_max is None:
        return k_min, None
    k_max = _check_int("k_max", k_max, "pass e.g. k_max=60, or None for the default min(200, 3 sqrt(N))")
    if k_max < k_min:
        raise ValueError(
            f"`k_max` ({k_max}) is smaller than `k_min` ({k_min}); pass k_max >= {k_min} "
            "(or k_max=None for the default, min(200, 3 sqrt(N)))."
        )
    return k_min, k_max


def check_k_range(k_min, k_max, num_texts: int) -> tuple[int, int]:
    """(k_min, k_max) checked against each other and the number of texts; ``k_max=None`` -> :func:`default_k_max`.
    Errors name the argument and the fix."""
    k_min, k_max = _check_k_bounds(k_min, k_max)
    if k_min >= num_texts:
        raise ValueError(
            f"`k_min` ({k_min}) is not smaller than the number of texts ({num_texts}): more clusters than texts leave "
            f"nothing to group; pass k_min <= {max(2, num_texts - 1)} or more texts."
        )
    if k_max is None:
        return k_min, min(default_k_max(num_texts, k_min), num_texts - 1)
    if k_max >= num_texts:
        raise ValueError(
            f"`k_max` ({k_max}) is not smaller than the number of texts ({num_texts}): more clusters than texts; "
            f"pass k_max <= {num_texts - 1} (or k_max=None for the default)."
        )
    return k_min, k_max


@dataclass(frozen=True)
class ClusterCountRequest:
    """How many clusters a run asks for: a fixed K, K from the labels, or ``"auto"`` (chosen without labels).

    Built once at the public edge (:meth:`parse`: a run's :class:`~hf_textcluster.runs.request.TrainingRequest`,
    ``evaluate`` and :class:`~hf_textcluster.runs.baselines.EmbeddingKMeans` go through it); what it holds is
    checked for everything that needs no data, and :meth:`check` adds what the texts decide.

    Attributes:
        num_clusters: a whole number K >= 2, ``"auto"``, or None (the number of classes of labelled texts).
        k_min: with ``"auto"``, the smallest K searched (default 2).
        k_max: with ``"auto"``, the largest K searched (None: min(200, 3 sqrt(N)), :func:`default_k_max`).
        criterion: with ``"auto"``, one of :data:`~hf_textcluster.choosing.criteria.K_CRITERIA` (default
            :data:`DEFAULT_CRITERION`).

    Example:
        >>> request = ClusterCountRequest.parse("auto", k_range=(2, 60), k_criterion="silhouette")
        >>> request.is_auto, request.k_range
        (True, (2, 60))
        >>> ClusterCountRequest.parse(20).num_clusters
        20
    """

    num_clusters: int | str | None = None
    k_min: int = 2
    k_max: int | None = None
    criterion: str = DEFAULT_CRITERION

    def __post_init__(self):
        if self.num_clusters is not None:
            object.__setattr__(self, "num_clusters", parse_num_clusters(self.num_clusters))
        if self.criterion not in K_CRITERIA:
            raise ValueError(f"Unknown `k_criterion` {self.criterion!r}; choose one of {', '.join(K_CRITERIA)}.")
        k_min, k_max = _check_k_bounds(self.k_min, self.k_max)
        object.__setattr__(self, "k_min", k_min)
        object.__setattr__(self, "k_max", k_max)

    @classmethod
    def parse(cls, num_clusters=None, k_range=None, k_criterion: str | None = None) -> ClusterCountRequest:
        """The request from the loose values users pass: ``num_clusters`` a whole number, ``"auto"`` (any case),
        None or already a request; ``k_range=(k_min, k_max)`` (either None for its default) and ``k_criterion``
        only with ``"auto"`` (given with None, they ask for it).

        Raises:
            ValueError: K < 2, or a string other than a number or "auto"; ``k_range`` / ``k_criterion`` for a
                fixed K; a malformed or inverted range; an unknown criterion.
            TypeError: K or a range bound that is not a whole number.
        """
        if isinstance(num_clusters, cls):
            if k_range is not None or k_criterion is not None:
                raise ValueError("Pass `k_range` / `k_criterion` inside the ClusterCountRequest, not beside it.")
            return num_clusters
        if num_clusters is None and (k_range is not None or k_criterion is not None):
            num_clusters = "auto"  # a range or a criterion to choose K with asks for K to be chosen
        request = cls(num_clusters)  # K parsed: a number >= 2, "auto" or None
        if not request.is_auto:
            if k_range is not None or k_criterion is not None:
                raise ValueError(
                    f"`k_range` / `k_criterion` apply to num_clusters='auto' (got num_clusters="
                    f"{request.num_clusters!r}); pass num_clusters='auto' (--num-clusters auto) or drop them."
                )
            return request
        k_range = (None, None) if k_range is None else k_range
        if isinstance(k_range, (str, bytes)) or not hasattr(k_range, "__len__") or len(k_range) != 2:
            raise ValueError(
                f"`k_range` must be a pair (k_min, k_max), e.g. (2, 60) (--k-range 2:60), got {k_range!r}."
            )
        k_min, k_max = k_range
        criterion = DEFAULT_CRITERION if k_criterion is None else k_criterion
        return cls("auto", k_min=2 if k_min is None else k_min, k_max=k_max, criterion=criterion)

    @staticmethod
    def parse_k_range(value: str) -> tuple[int | None, int | None]:
        """Command-line ``K_MIN:K_MAX`` -> (k_min, k_max); either side may be left out (``:60``, ``5:``)."""
        low, sep, high = value.partition(":")
        try:
            if not sep:
                raise ValueError
            return (int(low) if low.strip() else None, int(high) if high.strip() else None)
        except ValueError:
            raise ValueError(f"expected K_MIN:K_MAX, e.g. 2:60 (or :60, 5:), got {value!r}") from None

    @property
    def is_auto(self) -> bool:
        return self.num_clusters == "auto"

    @property
    def k_range(self) -> tuple[int, int | None]:
        """(k_min, k_max) as requested (k_max None: the default for the number of texts)."""
        return self.k_min, self.k_max

    def check(self, num_texts: int, texts=None) -> None:
        """The request against the texts, before any encoding pass: with ``"auto"``, the range against their number;
        a fixed K against their number (and the distinct ``texts``, when given:
        :func:`~hf_textcluster.modeling.input_checks.check_num_clusters`)."""
        if self.is_auto:
            check_k_range(self.k_min, self.k_max, num_texts)
        else:
            check_num_clusters(self.num_clusters, num_texts, texts=texts)

    def choose(self, embeddings, random_state: int | None = 0) -> AutoKResult:
        """K for these embeddings (``"auto"`` only), by :func:`estimate_num_clusters`."""
        if not self.is_auto:
            raise ValueError(f"num_clusters={self.num_clusters!r} is fixed: there is no K to choose.")
        if self.criterion == "umap_silhouette":  # on every text: the BERTopic way's own layouts
            return choose_in_layout(embeddings, k_min=self.k_min, k_max=self.k_max, random_state=random_state)
        return estimate_num_clusters(
            embeddings, k_min=self.k_min, k_max=self.k_max, criterion=self.criterion, random_state=random_state
        )

    def to_dict(self) -> dict:
        """The request as ``training_run.json`` records it: ``{"criterion": .., "k_range": [k_min, k_max]}``."""
        return {"criterion": self.criterion, "k_range": [self.k_min, self.k_max]}


def _as_embeddings(embeddings) -> np.ndarray:
    if embeddings is None or isinstance(embeddings, (str, bytes)):
        raise TypeError(
            f"`embeddings` must be an N x d array of numbers (one row per text), got {type(embeddings).__name__}."
        )
    try:
        array = np.asarray(embeddings)  # no copy of a float32 array (N may be a million): only the sample is
        if array.dtype.kind not in "fiu":
            array = array.astype(np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"`embeddings` must be an N x d array of numbers (one row per text): {err}") from err
    if array.ndim != 2:
        raise ValueError(
            f"`embeddings` must be 2-D (N texts x d dimensions), got shape {array.shape}; "
            "embed a list of texts, e.g. model.embed(texts)."
        )
    if array.shape[0] < 3:
        raise ValueError(f"`embeddings` has {array.shape[0]} rows: choosing K needs at least 3 texts.")
    return array


def compare_criteria(
    embeddings,
    k_min: int = 2,
    k_max: int | None = None,
    criteria=None,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
    random_state: int | None = 0,
    n_init: int = 1,
    n_neighbors: int = 10,
) -> dict[str, AutoKResult]:
    """:func:`estimate_num_clusters` for several criteria on the same sample, sharing the k-means fits (each result is
    the one ``estimate_num_clusters(criterion=c)`` returns; its ``seconds`` count every k-means fit it used).

    ``criteria``: names from :data:`~hf_textcluster.choosing.criteria.K_CRITERIA` (default: all)."""
    criteria = K_CRITERIA if criteria is None else criteria
    criteria = [criteria] if isinstance(criteria, str) else list(criteria)
    for c in criteria:
        if c not in K_CRITERIA:
            raise ValueError(f"Unknown `criterion` {c!r} for choosing K; choose one of {', '.join(K_CRITERIA)}.")
    x = _as_embeddings(embeddings)
    n = x.shape[0]
    sample_size = _check_int("sample_size", sample_size, f"pass e.g. sample_size={DEFAULT_SAMPLE_SIZE}")
    if sample_size < 3:
        raise ValueError(
            f"`sample_size` must be at least 3, got {sample_size}; pass e.g. sample_size={DEFAULT_SAMPLE_SIZE}."
        )
    requested_k_max = k_max
    k_min, k_max = check_k_range(k_min, k_max, n)
    notes = []
    rows = sample_rows(n, sample_size, random_state)
    x = np.asarray(x[rows], dtype=np.float64)
    if not np.isfinite(x).all():
        bad = int(rows[np.flatnonzero(~np.isfinite(x).all(axis=1))[0]])
        raise ValueError(f"`embeddings` row {bad} holds NaN or infinite values; re-embed (in fp32) or drop that text.")
    x = l2_normalize(x)
    distinct = len(np.unique(np.round(x, 5), axis=0))
    limit = distinct - 1 if len(x) == n else min(distinct - 1, len(x) // 2)  # a sample: >= ~2 texts per cluster
    if k_max > limit:
        if limit < k_min:
            raise ValueError(
                f"`k_min` ({k_min}) is too large for these texts: {'a sample of ' if len(x) < n else ''}{len(x)} "
                f"texts with {distinct} distinct embeddings; pass a smaller k_min"
                + (" or a larger sample_size." if len(x) < n else " or more varied texts.")
            )
        note = f"k_max lowered from {k_max} to {limit}: " + (
            f"the sample of {len(x)} texts is too small for more clusters (raise sample_size)"
            if len(x) < n
            else f"only {distinct} distinct embeddings"
        )
        if requested_k_max is not None:
            warnings.warn(note, stacklevel=2)
        notes.append(note)
        k_max = limit
    fits = KMeansSearch(x, random_state, n_init)
    results = {}
    for criterion in criteria:
        scores, seconds = score_criterion(criterion, x, k_min, k_max, fits, n_neighbors)
        results[criterion] = AutoKResult(
            num_clusters=best_k(criterion, scores),
            criterion=criterion,
            scores=scores,
            k_min=k_min,
            k_max=k_max,
            sample_size=len(x),
            num_texts=n,
            seconds=seconds,
            random_state=random_state,
            notes=list(notes),
        )
    return results


def estimate_num_clusters(
    embeddings,
    k_min: int = 2,
    k_max: int | None = None,
    criterion: str | None = None,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
    random_state: int | None = 0,
    n_init: int = 1,
    n_neighbors: int = 10,
) -> AutoKResult:
    """The number of clusters K in [``k_min``, ``k_max``] that ``criterion`` (one of
    :data:`~hf_textcluster.choosing.criteria.K_CRITERIA`, default :data:`DEFAULT_CRITERION`) finds in ``embeddings``
    (N x d, one row per text), without labels.

    ``k_max=None``: min(200, 3 sqrt(N)) (:func:`default_k_max`). The search runs on a seeded sample of at most
    ``sample_size`` rows (``random_state`` also seeds k-means), L2-normalised; k_max is lowered (with a note in the
    result) when that sample has too few distinct rows for it. ``n_init``: k-means restarts per K; ``n_neighbors``:
    the kNN graph of ``eigengap``.

    Raises ValueError naming the argument: k_min < 2, k_max < k_min, k_min or k_max not smaller than the number of
    texts, an unknown criterion; TypeError for embeddings that are not an N x d array of numbers.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> x = np.repeat(np.eye(4) * 5, 25, axis=0) + rng.normal(size=(100, 4))
        >>> estimate_num_clusters(x, k_max=8, criterion="silhouette").num_clusters
        4
    """
    criterion = DEFAULT_CRITERION if criterion is None else criterion
    if not isinstance(criterion, str):
        raise TypeError(
            f"`criterion` must be one criterion name ({', '.join(K_CRITERIA)}), got {type(criterion).__name__}; "
            "use compare_criteria(...) for several."
        )
    results = compare_criteria(embeddings, k_min, k_max, (criterion,), sample_size, random_state, n_init, n_neighbors)
    return results[criterion]


def choose_in_layout(features, k_min: int = 2, k_max: int | None = None, random_state: int | None = 0) -> AutoKResult:
    """K by ``umap_silhouette`` (:mod:`~hf_textcluster.choosing.layout_k`) on every row of ``features`` (N x d; at
    most :data:`LAYOUT_MAX_ROWS`, else a seeded sample): the layouts it reads are those the BERTopic way's k-means
    clusters at the chosen K (drawn once per ``reusing_results`` block). On every row, clusters holding clear groups
    are split and become the BERTopic way's partition at their number within the block (``split_from``: K before)."""
    start = time.perf_counter()
    x = _as_embeddings(features)
    k_min, k_max = check_k_range(k_min, k_max, x.shape[0])
    whole = x.shape[0] <= LAYOUT_MAX_ROWS
    if not whole:
        x = x[sample_rows(x.shape[0], LAYOUT_MAX_ROWS, random_state)]
    layout = umap_layouts(x, random_state)[0]
    partitions = layout_partitions(layout, candidate_ks(k_min, k_max), random_state)
    scores = {k: score for k, (score, _) in partitions.items()}
    if not scores:
        raise ValueError(
            f"No K in {k_min}..{k_max} splits these texts: they are (nearly) identical; pass num_clusters=K or more "
            "varied texts."
        )
    best = best_k("umap_silhouette", scores)
    groups = split_layout_clusters(x, partitions[best][1], layout, k_max, random_state) if whole else None
    return AutoKResult(
        num_clusters=best if groups is None else int(groups.max()) + 1,
        split_from=None if groups is None else best,
        criterion="umap_silhouette",
        scores=scores,
        k_min=k_min,
        k_max=k_max,
        sample_size=x.shape[0],
        num_texts=len(features),
        seconds=time.perf_counter() - start,
        random_state=random_state,
    )
