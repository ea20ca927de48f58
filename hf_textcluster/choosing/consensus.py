"""A consensus of several partitions of the same texts: the cluster ensemble every candidate votes in.

Topchy, Jain & Punch (2003), "Combining multiple weak clusterings" (ICDM), show that the partition maximising the
quadratic mutual information with a set of partitions is found by k-means on the concatenated one-hot membership
matrix of those partitions (each text a row of 0/1 indicators, one block of columns per partition). That is what
:func:`consensus_partition` computes, with the library's k-means (scikit-learn's ``KMeans``) on a sparse matrix: no
co-association matrix
(N x N) is ever built, so it scales to the corpora a clusterer trains on. (The ``cluster-ensembles`` package on PyPI,
Strehl & Ghosh's CSPA/HGPA/MCLA, has not been released since 2015 and needs METIS; it is not used.)

No labels ever enter this module. It depends on numpy, scipy and scikit-learn only.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.metrics import normalized_mutual_info_score

from ..editing.kmeans import fit_kmeans
from ..modeling.validation import check_scalar

__all__ = ["average_nmi", "consensus_partition", "dense_partitions", "membership_matrix"]


def dense_partitions(partitions: Any, n: int | None = None, name: str = "partitions") -> dict[str, np.ndarray]:
    """``partitions`` (name -> ``(N,)`` cluster ids of any hashable kind) as name -> int64 ids ``0 .. K-1``, checked:
    a non-empty mapping of 1-D arrays of one length, ``n`` when given (``name``: the argument the errors name).

    Raises:
        ValueError: no partition, or one not of one cluster id per text.

    Example:
        >>> dense_partitions({"a": ["x", "y", "x"]})["a"].tolist()
        [0, 1, 0]
    """
    if not isinstance(partitions, Mapping) or not partitions:
        raise ValueError(f"`{name}` must be a non-empty mapping name -> (N,) cluster ids.")
    dense = {}
    for key, labels in partitions.items():
        y = np.asarray(labels)
        if y.ndim != 1 or (n is not None and y.shape[0] != n):
            raise ValueError(
                f"`{name}[{key!r}]` must hold one cluster id per text ({n if n is not None else 'N'}); "
                f"got shape {y.shape}."
            )
        n = y.shape[0]
        dense[str(key)] = np.unique(y, return_inverse=True)[1].reshape(-1).astype(np.int64)
    return dense


def membership_matrix(partitions: Mapping[str, np.ndarray]) -> sparse.csr_matrix:
    """The concatenated one-hot membership matrix (N x sum of the partitions' cluster counts) of ``partitions``.

    Args:
        partitions: name -> ``(N,)`` cluster ids (any hashable ids; only the grouping matters).

    Returns:
        A sparse float32 CSR matrix with one 1 per text and partition.

    Raises:
        ValueError: no partition, or partitions of different lengths.

    Example:
        >>> membership_matrix({"a": [0, 0, 1], "b": [1, 0, 0]}).toarray().tolist()
        [[1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0]]
    """
    blocks = []
    for ids in dense_partitions(partitions).values():
        n = len(ids)
        shape = (n, int(ids.max()) + 1 if n else 0)
        blocks.append(sparse.csr_matrix((np.ones(n, dtype=np.float32), (np.arange(n), ids)), shape=shape))
    return sparse.hstack(blocks, format="csr", dtype=np.float32)


def consensus_partition(
    partitions: Mapping[str, np.ndarray],
    num_clusters: int,
    *,
    random_state: int = 0,
    n_init: int = 10,
) -> np.ndarray:
    """The consensus of ``partitions``: k-means on their one-hot membership matrix (Topchy, Jain & Punch 2003).

    Every partition weighs the same (one 1 per text each); texts that most partitions put together end up together.

    Args:
        partitions: name -> ``(N,)`` cluster ids of the same N texts (at least two partitions).
        num_clusters: K of the consensus (an int in [2, N]).
        random_state: seed of k-means.
        n_init: k-means restarts (the best inertia is kept).

    Returns:
        ``(N,)`` int64 cluster ids in ``[0, num_clusters)``.

    Raises:
        ValueError: fewer than two partitions, partitions of different lengths, or a bad ``num_clusters``.

    Example:
        >>> a = [0, 0, 0, 1, 1, 1]
        >>> consensus_partition({"a": a, "b": a, "c": [0, 0, 1, 1, 1, 1]}, 2).tolist()
        [0, 0, 0, 1, 1, 1]
    """
    matrix = membership_matrix(partitions)
    if len(partitions) < 2:
        raise ValueError(f"`partitions` must hold at least 2 partitions to agree on; got {len(partitions)}.")
    n = matrix.shape[0]  # the number of texts: at most one cluster each
    check_scalar(num_clusters, "num_clusters", numbers.Integral, min_val=2, max_val=n)
    labels = np.asarray(fit_kmeans(matrix, int(num_clusters), n_init=n_init, random_state=random_state).labels_)
    # ids in order of first appearance, so equal partitions give equal ids whatever k-means numbered
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inverse.reshape(-1)].astype(np.int64)


def average_nmi(
    partitions: Mapping[str, np.ndarray], *, source: Callable[[str], str | None] | None = None
) -> dict[str, float]:
    """ANMI (Strehl & Ghosh 2002, "Cluster ensembles"): each partition's mean normalized mutual information with the
    others, the quantity a consensus maximises, so a high value marks the partition most others agree with.

    Args:
        partitions: name -> ``(N,)`` cluster ids of the same texts (at least 2 partitions).
        source: optional name -> the source that made it (e.g. the model): a partition is then compared only with
            partitions of *other* sources (``None`` sources, e.g. a consensus made of them all, are never compared
            with), so a source's near-duplicate read-outs do not vote for each other.

    Returns:
        ``{name: ANMI}`` in the order of ``partitions`` (0.0 where nothing is left to compare with).

    Raises:
        ValueError: as :func:`membership_matrix`, or fewer than 2 partitions.

    Example:
        >>> scores = average_nmi({"a": [0, 0, 1, 1], "b": [0, 0, 1, 1], "c": [0, 1, 0, 1]})
        >>> scores["a"] == scores["b"] > scores["c"]
        True
    """
    membership_matrix(partitions)  # checks
    if len(partitions) < 2:
        raise ValueError(f"`partitions` must hold at least 2 partitions to compare; got {len(partitions)}.")
    ids = {n: np.unique(np.asarray(y), return_inverse=True)[1].reshape(-1) for n, y in partitions.items()}

    @functools.cache  # each pair once
    def nmi(a: str, b: str) -> float:
        return float(normalized_mutual_info_score(ids[a], ids[b]))

    scores = {}
    for n in ids:
        others = [m for m in ids if m != n]
        if source is not None:
            others = [m for m in others if source(m) is not None and source(m) != source(n)]
        scores[n] = float(np.mean([nmi(*sorted((n, m))) for m in others])) if others else 0.0
    return scores
