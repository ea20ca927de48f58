"""k-means as the trainers, the evaluation and the baselines run it: scikit-learn's ``KMeans``, exact up to
``max_samples`` rows; above that, fitted on a seeded sample of ``max_samples`` rows and every row then assigned to
its nearest centre. Lloyd's iterations cost rows x K x dims each, times ``n_init`` restarts: on a million texts the
sample keeps the fit at the cost of 100k rows, and the assignment is one linear pass (scikit-learn chunks it)."""

from __future__ import annotations

import numpy as np
from transformers.utils import logging

logger = logging.get_logger(__name__)

DEFAULT_KMEANS_MAX_SAMPLES = 100_000


def fit_kmeans(features, num_clusters: int, n_init: int = 10, random_state: int | None = 0,
               max_samples: int | None = DEFAULT_KMEANS_MAX_SAMPLES):
    """A fitted ``sklearn.cluster.KMeans`` whose ``labels_`` cover every row of ``features`` (dense or sparse).

    ``max_samples``: rows the centres are fitted on (a seeded sample when there are more; ``None``: all rows).
    Below it the result is exactly ``KMeans(...).fit(features)``.
    """
    try:  # in a try: transformers' remote-code loader then does not require scikit-learn for inference
        from sklearn.cluster import KMeans
    except ImportError as err:
        raise ImportError("k-means needs scikit-learn: `pip install scikit-learn`.") from err

    if max_samples is not None and (isinstance(max_samples, bool) or not isinstance(max_samples, int)
                                    or max_samples < num_clusters):
        raise ValueError(f"`max_samples` must be an integer >= num_clusters ({num_clusters}) or None (all rows), "
                         f"got {max_samples!r}.")
    kmeans = KMeans(n_clusters=num_clusters, n_init=n_init, random_state=random_state)
    n = features.shape[0]
    if max_samples is None or n <= max_samples:
        return kmeans.fit(features)
    rows = np.sort(np.random.default_rng(random_state).choice(n, size=max_samples, replace=False))
    kmeans.fit(features[rows])
    logger.info("k-means fitted on a seeded sample of %d of %d rows; every row assigned to its nearest centre.",
                max_samples, n)
    kmeans.labels_ = kmeans.predict(features)
    return kmeans
