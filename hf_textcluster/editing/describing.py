"""What an edit of a trained clusterer reads on texts, around the weight arithmetic of :mod:`.curation`: names for
the edited clusters (c-TF-IDF on their texts) and the clusters' summary saved again, the closest clusters to merge
(``reduce``), and the warnings about texts unlike a model's own. Plain functions that take the model, called by
:class:`~hf_textcluster.runs.clusterer.Clusterer`.

Example:
    >>> closest_merges(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]]), np.ones(3), 2)
    [[0, 1]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from transformers.utils import logging

from ..evaluation.metrics import cluster_accuracy
from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..representation import BaseRepresentation, name_clusters, store_names
from ..representation.ctfidf import keyword_representation
from ..representation.summary import SUMMARY_KEY, assign_texts, summarize_model

logger = logging.get_logger(__name__)

# Above this share of outliers (1% expected on the texts a model was calibrated on), the texts are not like those.
UNLIKE_CALIBRATION = 0.1
# Below this share of texts in the same cluster (ids matched), the texts are probably not the model's training texts.
LOW_AGREEMENT = 0.5


def name_edited_clusters(model, texts: Sequence[str], clusters: Sequence[int], edited: Sequence[int]) -> dict[int, str]:
    """Name the ``edited`` clusters of ``model`` after their c-TF-IDF keywords on ``texts`` (assigned ``clusters``);
    the other clusters keep their names, and a model whose names are all the defaults (``cluster_<i>``) keeps them.
    Returns the names given."""
    if not edited or all(str(name) == f"cluster_{k}" for k, name in model.config.id2label.items()):
        return {}
    num_clusters = model.config.num_clusters
    keywords = keyword_representation(model.config).extract(list(texts), np.asarray(clusters), num_clusters)
    labels = BaseRepresentation.labels(keywords)
    taken = {name for k, name in model.config.id2label.items() if k not in set(edited)}
    given = {}
    for k in edited:
        name = labels.get(k) or model.config.id2label[k]
        while name in taken:  # names stay unique (label2id)
            name = f"{name} ({k})"
        given[k] = name
        taken.add(name)
    store_names(model.config, {**model.config.id2label, **given})
    return given


def describe_edited_clusters(
    model, texts: Sequence[str], edited: Sequence[int], batch_size: int = DEFAULT_ENCODE_BATCH_SIZE
) -> np.ndarray:
    """After an edit, on ``texts`` (the training texts): name the ``edited`` clusters (:func:`name_edited_clusters`)
    and save the clusters' summary again (``config.cluster_summary``; one encoding pass for both). Returns the
    texts' clusters."""
    assignments = assign_texts(model, texts, batch_size=batch_size)
    name_edited_clusters(model, texts, assignments.clusters, edited)
    setattr(model.config, SUMMARY_KEY, summarize_model(model, list(texts), assignments))
    return np.asarray(assignments.clusters)


def recalibrate(model, texts: Sequence[str], **sampling) -> None:
    """After the served partition changed (``refine``, ``recluster``): calibrate and name it on ``texts``
    (``sampling``: ``sample_size``, ``random_state``, ``batch_size``); the running means of ``update`` described the
    old clusters."""
    model.online_state_ = None
    model.calibrate(texts, show_progress_bar=True, **sampling)
    name_clusters(model, texts, **sampling)


def closest_merges(centres: np.ndarray, sizes: np.ndarray, num_clusters: int) -> list[list[int]]:
    """The groups of clusters to merge so that ``num_clusters`` remain: again and again the two clusters whose
    centres are closest (cosine) merge, a merged cluster's centre being the size-weighted mean of its members'.

    Args:
        centres: (K, d) one centre per cluster.
        sizes: (K,) each cluster's size (its weight in a merged centre).
        num_clusters: how many clusters remain (``1 <= num_clusters <= K``).

    Returns:
        The groups of at least two old ids, each sorted, in order of their smallest id.

    Example:
        >>> closest_merges(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]]), np.ones(3), 2)
        [[0, 1]]
    """
    vectors = [np.asarray(c, dtype=np.float64) for c in centres]
    weights = [max(float(w), 1e-12) for w in sizes]
    groups = [[i] for i in range(len(vectors))]
    while len(groups) > num_clusters:
        unit = np.stack(vectors)
        unit = unit / np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
        similarity = unit @ unit.T
        np.fill_diagonal(similarity, -np.inf)
        i, j = sorted(np.unravel_index(int(np.argmax(similarity)), similarity.shape))
        total = weights[i] + weights[j]
        vectors[i] = (weights[i] * vectors[i] + weights[j] * vectors[j]) / total
        weights[i] = total
        groups[i] += groups.pop(j)
        del vectors[j], weights[j]
    return sorted((sorted(group) for group in groups if len(group) > 1), key=lambda group: group[0])


def reduce_groups(
    model, num_clusters, texts: Sequence[str] | None, batch_size: int = DEFAULT_ENCODE_BATCH_SIZE
) -> list[list[int]]:
    """The groups to merge so that ``num_clusters`` of ``model``'s clusters remain (:func:`closest_merges` on the
    calibrated centres and sizes; for a model that is not calibrated, on the mean embeddings of ``texts``).

    Raises:
        ValueError: ``num_clusters`` out of range, or no ``texts`` for a model that is not calibrated.
    """
    k = model.config.num_clusters
    if isinstance(num_clusters, bool) or not isinstance(num_clusters, (int, np.integer)) or not 2 <= num_clusters < k:
        raise ValueError(
            f"`num_clusters` must be a whole number from 2 to {k - 1} to reduce this model's {k} "
            f"clusters; got {num_clusters!r}."
        )
    if model.is_calibrated:
        centres = model.calibration.centres.detach().float().cpu().numpy()
        sizes = model.calibration.cluster_sizes.detach().float().cpu().numpy()
    elif texts is not None:
        embeddings = model.embed(texts, batch_size=batch_size, show_progress_bar=False)
        clusters = model.predict(texts, batch_size=batch_size, show_progress_bar=False)
        sizes = np.bincount(clusters, minlength=k).astype(np.float64)
        centres = np.stack(
            [embeddings[clusters == c].mean(axis=0) if sizes[c] else np.zeros(embeddings.shape[1]) for c in range(k)]
        )
    else:
        raise ValueError(
            "reducing a model that is not calibrated needs texts (texts=..., --input FILE): its clusters' centres "
            "come from them. Pass the training texts, or calibrate the model first (hf-textcluster calibrate)."
        )
    return closest_merges(centres, sizes, int(num_clusters))


def warn_if_unlike_calibration(model, texts: Sequence[str], batch_size: int, seed: int, sample_size: int = 2000):
    """A calibrated model re-calibrated on texts its calibration finds mostly outliers: one warning line."""
    if not model.is_calibrated:
        return
    rows = np.random.default_rng(seed).permutation(len(texts))[:sample_size]
    flagged = model.predict_with_confidence([texts[int(i)] for i in rows], batch_size=batch_size)["is_outlier"]
    if flagged.mean() > UNLIKE_CALIBRATION:
        logger.warning(
            f"{100 * flagged.mean():.0f}% of these texts are outliers for the model's current calibration (about 1% "
            "of its training texts are): are they its training texts? Calibrate on those."
        )


@torch.no_grad()
def warn_if_unlike_head(model, embeddings: np.ndarray, before: np.ndarray) -> None:
    """After re-clustering: new clusters that agree with the trained head's (``before``) on under half of the
    texts, ids matched one to one, are one warning line (the texts are probably not the training texts)."""
    after = model.cluster_probabilities(torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32)))
    share = cluster_accuracy(before, after.argmax(dim=-1).numpy())
    if share < LOW_AGREEMENT:
        logger.warning(
            f"The new clusters agree with the trained head on only {100 * share:.0f}% of these texts: are they the "
            f"model's training texts? Re-cluster on those (the model before is kept in previous/)."
        )
