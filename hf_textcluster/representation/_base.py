"""What every cluster representation provides: keywords per cluster, and names made of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


class BaseRepresentation:
    """Words that describe each cluster of a partition (as BERTopic's ``representation`` models do).

    Subclasses implement :meth:`extract`; :meth:`labels` turns its keywords into short, unique cluster names
    (``"oracle · sql · table"``), the ``id2label`` a model serves.
    """

    def extract(
        self, texts: Sequence[str] | None, clusters: Sequence[int] | None, num_clusters: int
    ) -> dict[int, list[str]]:
        """Keywords of each cluster ``0 .. num_clusters - 1`` (best first; ``[]`` for a cluster with none).

        Args:
            texts: the texts that were clustered (representations learned by a model may not need them).
            clusters: one cluster id per text.
            num_clusters: how many clusters the partition has (empty ones included).

        Returns:
            ``{cluster: [keyword, ...]}`` for every cluster.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement `extract(texts, clusters, num_clusters)`.")

    @staticmethod
    def labels(keywords: Mapping[int, Sequence[str]], words_per_label: int = 3) -> dict[int, str]:
        """Cluster names made of their top keywords (``"oracle · sql · table"``), unique, ``cluster_<k>`` if none."""
        return unique_names({k: " · ".join(keywords[k][:words_per_label]) or f"cluster_{k}" for k in keywords})


def unique_names(names: Mapping[int, str]) -> dict[int, str]:
    """``names`` in cluster order, a name already taken suffixed with its cluster's id (``"sql (3)"``): ``id2label``
    must be one-to-one."""
    unique: dict[int, str] = {}
    for k in sorted(names):
        unique[k] = f"{names[k]} ({k})" if names[k] in unique.values() else names[k]
    return unique


def check_clusters(texts: Sequence[str], clusters: Sequence[int]) -> tuple[list[str], np.ndarray]:
    """``texts`` as a list and ``clusters`` as an int array, one cluster per text (else a ValueError)."""
    rows, ids = list(texts), np.asarray(clusters, dtype=int)
    if len(rows) != len(ids):
        raise ValueError(f"`texts` has {len(rows)} items but `clusters` has {len(ids)}; give one cluster per text.")
    return rows, ids
