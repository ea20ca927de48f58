"""k-means as the trainers, the evaluation and the baselines run it: scikit-learn's ``KMeans``, exact up to
``max_samples`` rows; above that, fitted on a seeded sample of ``max_samples`` rows and every row then assigned to
its nearest centre. Lloyd's iterations cost rows x K x dims each, times ``n_init`` restarts: on a million texts the
sample keeps the fit at the cost of 100k rows, and the assignment is one linear pass (scikit-learn chunks it).

``init="umap"``: the centres are the means, in the original space, of the clusters k-means finds on a UMAP
reduction of the rows (BERTopic's: 15 neighbours, 5 dimensions, cosine), and each row goes to its nearest centre, so
a centroid head serves the result exactly. With many clusters k-means++ restarts end in poor local optima that the
neighbourhood graph avoids (GoogleNews-TS, K 152: 80.2 vs 71.9 ACC on MiniLM), but not everywhere (Biomedical: 47.6
vs 51.2). Lloyd's iterations from these centres are skipped: on StackOverflow they fall back to k-means++'s optimum
(72.5 vs 75.2), elsewhere they moved ACC by at most 1.8 (``bench.py kmeans-init`` in docs/results.md)."""

from __future__ import annotations

import warnings

import numpy as np
from transformers.utils import logging

logger = logging.get_logger(__name__)

DEFAULT_KMEANS_MAX_SAMPLES = 100_000
KMEANS_INITS = ("k-means++", "umap")


def fit_kmeans(features, num_clusters: int, n_init: int = 10, random_state: int | None = 0,
               max_samples: int | None = DEFAULT_KMEANS_MAX_SAMPLES, init: str = "k-means++"):
    """A fitted ``sklearn.cluster.KMeans`` whose ``labels_`` cover every row of ``features`` (dense or sparse).

    ``max_samples``: rows the centres are fitted on (a seeded sample when there are more; ``None``: all rows).
    Below it the result is exactly ``KMeans(...).fit(features)``. ``init``: ``"k-means++"`` (scikit-learn's) or
    ``"umap"`` (the nearest of the means of the clusters k-means finds on a UMAP reduction; needs umap-learn).
    """
    try:  # in a try: transformers' remote-code loader then does not require scikit-learn for inference
        from sklearn.cluster import KMeans
    except ImportError as err:
        raise ImportError("k-means needs scikit-learn: `pip install scikit-learn`.") from err

    if max_samples is not None and (isinstance(max_samples, bool) or not isinstance(max_samples, int)
                                    or max_samples < num_clusters):
        raise ValueError(f"`max_samples` must be an integer >= num_clusters ({num_clusters}) or None (all rows), "
                         f"got {max_samples!r}.")
    if init not in KMEANS_INITS:
        raise ValueError(f"`init` (kmeans_init) must be one of {KMEANS_INITS}, got {init!r}.")
    n = features.shape[0]
    rows = None
    if max_samples is not None and n > max_samples:
        rows = np.sort(np.random.default_rng(random_state).choice(n, size=max_samples, replace=False))
    fitted_on = features if rows is None else features[rows]
    if init == "umap":
        kmeans = NearestCentres.of_groups(fitted_on, _umap_kmeans_groups(fitted_on, num_clusters, n_init, random_state))
    else:
        kmeans = KMeans(n_clusters=num_clusters, n_init=n_init, random_state=random_state).fit(fitted_on)
    if rows is not None:
        logger.info("k-means fitted on a seeded sample of %d of %d rows; every row assigned to its nearest centre.",
                    max_samples, n)
        kmeans.labels_ = kmeans.predict(features)
    return kmeans


class NearestCentres:
    """Fixed centres and the nearest-centre rule, with the attributes of a fitted ``KMeans`` callers use."""

    def __init__(self, centres: np.ndarray):
        self.cluster_centers_ = centres
        self.labels_ = None

    @classmethod
    def of_groups(cls, features, groups: np.ndarray) -> "NearestCentres":
        """The means of ``groups`` of ``features`` as centres; ``labels_`` = each row's nearest centre, ``groups_`` =
        the groups themselves."""
        features = np.asarray(features, dtype=np.float32)
        fitted = cls(np.stack([features[groups == k].mean(axis=0) for k in range(int(groups.max()) + 1)]))
        fitted.groups_ = groups
        fitted.labels_ = fitted.predict(features)
        return fitted

    def predict(self, features) -> np.ndarray:
        try:  # optional imports stay in a try (see fit_kmeans)
            from sklearn.metrics import pairwise_distances_argmin
        except ImportError as err:
            raise ImportError("k-means needs scikit-learn: `pip install scikit-learn`.") from err
        return pairwise_distances_argmin(np.asarray(features, dtype=self.cluster_centers_.dtype), self.cluster_centers_)


def _umap_kmeans_groups(features, num_clusters: int, n_init: int = 10, random_state: int | None = 0) -> np.ndarray:
    """The clusters k-means finds on a UMAP reduction of ``features`` (BERTopic's: 15 neighbours, 5 dimensions,
    cosine; seeded)."""
    try:  # optional imports stay in a try (see fit_kmeans)
        from sklearn.cluster import KMeans
        from umap import UMAP
    except ImportError as err:
        raise ImportError("kmeans_init='umap' needs umap-learn: `pip install umap-learn` (or the plot extra).") from err
    if hasattr(features, "toarray"):
        raise ValueError("kmeans_init='umap' needs dense features (embeddings), not a sparse matrix.")
    if features.shape[0] <= 16:  # UMAP's spectral layout needs more rows than its 15 neighbours
        raise ValueError(f"kmeans_init='umap' needs more than 16 texts, got {features.shape[0]}; use 'k-means++'.")
    with warnings.catch_warnings():  # a seeded UMAP runs single-threaded and says so on every call
        warnings.filterwarnings("ignore", message="n_jobs value .* overridden")
        reduced = UMAP(n_neighbors=15, n_components=5, min_dist=0.0, metric="cosine",
                       random_state=random_state).fit_transform(features)
    return KMeans(n_clusters=num_clusters, n_init=n_init, random_state=random_state).fit_predict(reduced)

