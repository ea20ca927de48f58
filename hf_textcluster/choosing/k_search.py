"""How the criteria of the choice of K (:data:`~hf_textcluster.choosing.criteria.K_CRITERIA`) score the candidate K
of one sample.

- A criterion that scores partitions scores one k-means solution per K, shared by all of them (:class:`KMeansSearch`),
  on a grid of K (every K up to 16, then ~10% steps, :func:`candidate_ks`) and then at every K (at most
  ``REFINE_POINTS``) around the best grid point (:func:`search_kmeans`).
- ``eigengap`` scores every K at once, with no k-means (:mod:`~hf_textcluster.choosing.spectrum`).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .criteria import get_criterion
from .layout_k import candidate_ks

REFINE_POINTS = 10
MINIBATCH_ABOVE = 20000  # samples larger than this are clustered with MiniBatchKMeans
KMEANS_DIMS = 64  # k-means runs on the sample's first 64 principal components (~10x faster); scores use all dims


class KMeansSearch:
    """k-means solutions of one sample, computed once per K and shared by the k-means criteria (each gets the same
    labels for a K, so comparing the criteria compares only how they score them)."""

    def __init__(self, x: np.ndarray, random_state, n_init: int, dims: int | None = KMEANS_DIMS):
        self.random_state, self.n_init = random_state, n_init
        if dims and dims < min(x.shape):
            from sklearn.decomposition import PCA

            x = PCA(dims, random_state=random_state).fit_transform(x)
        self.x32 = np.ascontiguousarray(x, dtype=np.float32)
        self.labels: dict[int, np.ndarray] = {}
        self.fit_seconds: dict[int, float] = {}

    def __call__(self, k: int) -> np.ndarray:
        if k not in self.labels:
            from sklearn.cluster import KMeans, MiniBatchKMeans

            start = time.perf_counter()
            if len(self.x32) > MINIBATCH_ABOVE:
                model = MiniBatchKMeans(k, n_init=self.n_init, random_state=self.random_state, batch_size=4096)
            else:
                model = KMeans(k, n_init=self.n_init, random_state=self.random_state)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # ConvergenceWarning on near-duplicate texts
                self.labels[k] = model.fit_predict(self.x32)
            self.fit_seconds[k] = time.perf_counter() - start
        return self.labels[k]


def kmeans_score(criterion: str, x: np.ndarray, labels: np.ndarray, random_state=None) -> float:
    """The registry's score of ``labels`` on ``x``; the worst value when they hold a single cluster."""
    found = get_criterion(criterion)
    if len(np.unique(labels)) < 2:
        return -np.inf if found.higher_is_better else np.inf
    return found.score(x, labels, random_state)


def best_k(criterion: str, scores: dict[int, float]) -> int:
    """The K with the best score (the lowest for the lower-is-better criteria); ties go to the smaller K."""
    return max(scores, key=lambda k: (get_criterion(criterion).signed(scores[k]), -k))  # ties: the smaller K


def search_kmeans(criterion: str, x: np.ndarray, k_min: int, k_max: int, fits: KMeansSearch) -> dict[int, float]:
    """Scores of the grid, then of every K (at most REFINE_POINTS) between the best grid point's neighbours."""
    grid = candidate_ks(k_min, k_max)
    scores = {k: kmeans_score(criterion, x, fits(k), fits.random_state) for k in grid}
    i = grid.index(best_k(criterion, scores))
    low, high = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    between = [k for k in range(low + 1, high) if k not in scores]
    if len(between) > REFINE_POINTS:
        between = sorted({between[int(round(j))] for j in np.linspace(0, len(between) - 1, REFINE_POINTS)})
    return scores | {k: kmeans_score(criterion, x, fits(k), fits.random_state) for k in between}


def score_criterion(
    criterion: str, x: np.ndarray, k_min: int, k_max: int, fits: KMeansSearch, n_neighbors: int
) -> tuple[dict[int, float], float]:
    """(scores, seconds) of one criterion on the sample ``x``. A k-means criterion's seconds count every k-means fit
    it used, also those an earlier criterion made for it (``fits`` shares them)."""
    fitted_before = dict(fits.fit_seconds)
    start = time.perf_counter()
    found = get_criterion(criterion)
    if found.scores == "k":
        scores = found.score(x, k_min, k_max, fits.random_state, n_neighbors)
        return scores, time.perf_counter() - start
    scores = search_kmeans(criterion, x, k_min, k_max, fits)
    elapsed = time.perf_counter() - start
    reused = sum(fits.fit_seconds[k] for k in scores if k in fitted_before)  # fitted for an earlier criterion
    return scores, elapsed + reused
