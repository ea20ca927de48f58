"""The label-free criteria only the benchmark computes: neither the default nor an option of the package uses them,
and the benchmark records them beside the package's to compare criteria after the fact (docs/results.md).

:data:`REGISTRY` is the package's registry and these; :func:`score_all` and :func:`criteria_of` score candidates by
any of its names, as ``score_partitions`` and ``candidate_criteria`` score by the package's.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import adjusted_rand_score, silhouette_score

from hf_textcluster.choosing.consensus import average_nmi, dense_partitions
from hf_textcluster.choosing.criteria import (
    AUTO_CRITERIA,
    CRITERIA,
    SERVE_CRITERIA,
    CandidatePool,
    Criterion,
    knn_holdout,
)
from hf_textcluster.editing.kmeans import keeping_torch_threads

_SAMPLE = 5000  # as the package's silhouettes: a seeded sample of at most this many texts


def _source(name: str) -> str | None:
    """The signal (or ``pretrained``) before the slash of a candidate's name; None for the consensus."""
    return name.split("/", 1)[0] if "/" in name else None


def _agreement_independent(pool: CandidatePool) -> dict[str, float]:
    return average_nmi(pool.candidates, source=_source)


def _agreement_ari(pool: CandidatePool) -> dict[str, float]:
    c = pool.candidates
    return {n: float(np.mean([adjusted_rand_score(c[n], c[m]) for m in c if m != n])) for n in c}


def reduced_silhouettes(z: np.ndarray, candidates, random_state: int) -> dict[str, float]:
    """The euclidean silhouette of every candidate in a reduced space ``z`` (e.g. a UMAP fitted already)."""
    euclidean = Criterion("", lambda x, y, seed: float(silhouette_score(x, y)), degenerate=-1.0, sample=_SAMPLE)
    return {n: euclidean.value(np.asarray(z, dtype=np.float64), y, random_state) for n, y in candidates.items()}


def _only_space(pool: CandidatePool, criterion: str) -> np.ndarray:
    if len(pool.spaces) != 1:
        raise ValueError(f"`criterion` {criterion!r} scores candidates of one space; got {len(pool.spaces)}.")
    return pool.space(next(iter(pool.spaces)))


def _silhouette_pca(pool: CandidatePool) -> dict[str, float]:
    from sklearn.decomposition import PCA

    x = _only_space(pool, "silhouette_pca")
    z = PCA(n_components=min(10, x.shape[1], x.shape[0]), random_state=pool.random_state).fit_transform(x)
    return reduced_silhouettes(z, pool.candidates, pool.random_state)


def _silhouette_umap(pool: CandidatePool) -> dict[str, float]:
    import umap

    x = _only_space(pool, "silhouette_umap")
    reducer = umap.UMAP(n_components=5, metric="cosine", n_neighbors=15, min_dist=0.0, random_state=pool.random_state)
    with keeping_torch_threads():
        return reduced_silhouettes(reducer.fit_transform(x), pool.candidates, pool.random_state)


_POOL = {"scores": "candidates", "space": None}
_REDUCED = {"scores": "candidates", "space": "own"}
BENCH_CRITERIA = (
    Criterion("knn_holdout", knn_holdout, True, "NMI of a 10-neighbour vote of one half on the other", degenerate=0.0),
    Criterion("silhouette_pca", _silhouette_pca, True, "euclidean silhouette after PCA to 10 dimensions", **_REDUCED),
    Criterion("silhouette_umap", _silhouette_umap, True, "euclidean silhouette in a 5-d cosine UMAP", **_REDUCED),
    Criterion("agreement_independent", _agreement_independent, True, "ANMI with other sources' candidates", **_POOL),
    Criterion("agreement_ari", _agreement_ari, True, "mean adjusted Rand index with the other candidates", **_POOL),
)
REGISTRY = {**CRITERIA, **{c.name: c for c in BENCH_CRITERIA}}

# What the benchmark records: the package's criteria of each choice and its own, in table order.
SERVE_RECORDED = (*SERVE_CRITERIA, "silhouette_pca", "silhouette_umap", "agreement_ari", "knn_holdout")
AUTO_RECORDED = (*AUTO_CRITERIA, "agreement_independent", "agreement_ari", "knn_holdout")


def criteria_of(candidates, spaces, *, texts=None, criteria=AUTO_RECORDED, random_state: int = 0) -> dict:
    """``{criterion: {candidate: value}}`` of candidates made in different spaces (as ``candidate_criteria``)."""
    pool = CandidatePool(
        dense_partitions(candidates, name="candidates"),
        spaces,
        texts=texts,
        random_state=random_state,
        registry=REGISTRY,
    )
    return {c: pool.values(c) for c in criteria}


def score_all(features: np.ndarray, candidates, criterion: str, random_state: int = 0) -> dict[str, float]:
    """``{candidate: value}`` of one model's candidates in its space ``features`` (as ``score_partitions``)."""
    spaces = {"embeddings": np.asarray(features, dtype=np.float64)}
    return criteria_of(candidates, spaces, criteria=[criterion], random_state=random_state)[criterion]
