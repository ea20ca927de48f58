"""``eigengap``, the criterion of the choice of K that needs no k-means: the smallest eigenvalues of the normalised
Laplacian of a kNN graph of the sample (:func:`laplacian_spectrum`); K's score is the gap lambda_{K+1} - lambda_K
(:func:`search_eigengap`)."""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import eigsh

from ..editing.kmeans import exact_neighbours


def knn_affinity(x: np.ndarray, n_neighbors: int = 10, scale_neighbor: int = 7):
    """Symmetric sparse kNN affinity of the rows ``x``: w_ij = exp(-d_ij^2 / (sigma_i sigma_j)), d the cosine distance,
    sigma_i the distance of i to its ``scale_neighbor``-th other row (self-tuning)."""
    n = x.shape[0]
    k = min(n_neighbors, n - 1)
    neighbors, distances = exact_neighbours(x, k, exclude_self=True)
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
