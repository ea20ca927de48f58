"""How the criteria of the choice of K (:data:`~hf_textcluster.choosing.criteria.K_CRITERIA`) score the candidate K
of one sample.

- A criterion that scores partitions scores one k-means solution per K, shared by all of them (:class:`KMeansSearch`),
  on a grid of K (every K up to 16, then ~10% steps, :func:`candidate_ks`) and then at every K (at most
  ``REFINE_POINTS``) around the best grid point (:func:`search_kmeans`).
- ``eigengap`` scores every K at once, with no k-means: the smallest eigenvalues of the normalised Laplacian of a kNN
  graph of the sample (:func:`laplacian_spectrum`); K's score is the gap lambda_{K+1} - lambda_K
  (:func:`search_eigengap`).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import eigsh

from .criteria import get_criterion

DENSE_UP_TO = 16  # every K up to here is tried; above, a ~10% geometric grid, refined around the best point
GRID_RATIO = 1.1
REFINE_POINTS = 10
MINIBATCH_ABOVE = 20000  # samples larger than this are clustered with MiniBatchKMeans
KMEANS_DIMS = 64  # k-means runs on the sample's first 64 principal components (~10x faster); scores use all dims


def candidate_ks(k_min: int, k_max: int) -> list[int]:
    """The grid searched first: every K from ``k_min`` to 16, then steps of ~10% up to ``k_max`` (always included)."""
    ks = list(range(k_min, max(k_min, min(k_max, DENSE_UP_TO)) + 1))
    k = float(ks[-1])
    while ks[-1] < k_max:
        k = max(k * GRID_RATIO, ks[-1] + 1)
        ks.append(min(k_max, int(round(k))))
    return ks


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
    sign = 1.0 if get_criterion(criterion).higher_is_better else -1.0
    return max(scores, key=lambda k: (sign * scores[k], -k))  # ties: the smaller K


def knn_affinity(x: np.ndarray, n_neighbors: int = 10, scale_neighbor: int = 7):
    """Symmetric sparse kNN affinity of the normalised rows ``x``: w_ij = exp(-d_ij^2 / (sigma_i sigma_j)), d the
    cosine distance, sigma_i the distance of i to its ``scale_neighbor``-th neighbour (self-tuning)."""
    n = x.shape[0]
    k = min(n_neighbors, n - 1)
    neighbors = np.empty((n, k), dtype=np.int64)
    distances = np.empty((n, k))
    for start in range(0, n, 2048):
        sim = x[start : start + 2048] @ x.T
        rows = np.arange(sim.shape[0])
        sim[rows, start + rows] = -np.inf  # not one's own neighbour
        part = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sim, part, axis=1), axis=1)
        neighbors[start : start + len(rows)] = np.take_along_axis(part, order, axis=1)
        distances[start : start + len(rows)] = np.maximum(
            1.0 - np.take_along_axis(sim, neighbors[start : start + len(rows)], axis=1), 0.0
        )
    sigma = np.maximum(distances[:, min(scale_neighbor, k) - 1], 1e-6)
    weights = np.exp(-(distances**2) / (sigma[:, None] * sigma[neighbors]))
    w = sparse.csr_matrix((weights.ravel(), (np.repeat(np.arange(n), k), neighbors.ravel())), shape=(n, n))
    return w.maximum(w.T)


def laplacian_spectrum(x: np.ndarray, num_eigenvalues: int, n_neighbors: int = 10, random_state=0) -> np.ndarray:
    """The ``num_eigenvalues`` smallest eigenvalues (ascending) of the normalised Laplacian I - D^-1/2 W D^-1/2 of
    the kNN affinity of ``x``."""
    w = knn_affinity(x, n_neighbors)
    degree = np.asarray(w.sum(axis=1)).ravel()
    inv_sqrt = sparse.diags(1.0 / np.sqrt(np.maximum(degree, 1e-12)))
    n = x.shape[0]
    laplacian = (sparse.identity(n) - inv_sqrt @ w @ inv_sqrt).tocsc()
    if n <= 1500 or num_eigenvalues >= n // 2:
        lam = np.linalg.eigvalsh(laplacian.toarray())[:num_eigenvalues]
    else:
        # shift-invert around 0 (L + 1e-3 I is positive definite): the smallest eigenvalues converge in a few
        # iterations; which="SA" / "LA" without it misses some of them when they are many and close together
        v0 = np.random.default_rng(random_state if isinstance(random_state, int) else 0).random(n)
        lam = np.sort(eigsh(laplacian, k=num_eigenvalues, sigma=-1e-3, which="LM", return_eigenvectors=False, v0=v0))
    return np.clip(lam, 0.0, 2.0)


def search_eigengap(x: np.ndarray, k_min: int, k_max: int, random_state, n_neighbors: int) -> dict[int, float]:
    """``eigengap``'s score of every K in [``k_min``, ``k_max``]: lambda_{K+1} - lambda_K."""
    lam = laplacian_spectrum(x, k_max + 1, n_neighbors=n_neighbors, random_state=random_state)
    return {k: float(lam[k] - lam[k - 1]) for k in range(k_min, k_max + 1)}  # lam[k-1] is the k-th smallest


def search_kmeans(criterion: str, x: np.ndarray, k_min: int, k_max: int, fits: KMeansSearch) -> dict[int, float]:
    """Scores of the grid, then of every K (at most REFINE_POINTS) between the best grid point's neighbours."""
    scores: dict[int, float] = {}
    grid = candidate_ks(k_min, k_max)
    for k in grid:
        scores[k] = kmeans_score(criterion, x, fits(k), fits.random_state)
    best = best_k(criterion, scores)
    i = grid.index(best)
    low, high = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    between = [k for k in range(low + 1, high) if k not in scores]
    if len(between) > REFINE_POINTS:
        between = sorted({between[int(round(j))] for j in np.linspace(0, len(between) - 1, REFINE_POINTS)})
    for k in between:
        scores[k] = kmeans_score(criterion, x, fits(k), fits.random_state)
    return scores


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
