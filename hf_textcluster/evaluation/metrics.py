"""Clustering metrics: accuracy under the best one-to-one matching (Hungarian), NMI, ARI and purity.

All functions take ground-truth labels and predicted cluster ids of any hashable type; the number of
predicted clusters may differ from the number of classes (unmatched clusters count as errors in ACC). Texts whose
label is missing (None, NaN, blank, or the class id -1 that ``load_texts`` gives them: see
:func:`~hf_textcluster.modeling.input_checks.missing_labels`) are left out of every score.

The same scores as an ``evaluate`` metric shipped in the package (loaded offline, no Hub):

>>> metric = load_clustering_metric()      # evaluate.load("<package>/evaluate_metrics/clustering_metrics")
>>> metric.compute(predictions=[1, 1, 0], references=[0, 0, 1])
{'acc': 1.0, 'nmi': 1.0, 'ari': 1.0, 'purity': 1.0}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn import metrics as sk_metrics

from ..modeling.input_checks import missing_labels


def _as_label_arrays(labels_true, labels_pred) -> tuple[np.ndarray, np.ndarray]:
    if labels_true is None or labels_pred is None:
        raise ValueError("`labels_true` and `labels_pred` must not be None.")
    y_true = np.asarray(labels_true).reshape(-1)
    y_pred = np.asarray(labels_pred).reshape(-1)
    if y_true.shape[0] != y_pred.shape[0]:
        raise ValueError(
            f"`labels_true` has {y_true.shape[0]} items but `labels_pred` has {y_pred.shape[0]}; "
            "pass one prediction per labelled text."
        )
    if y_true.shape[0] == 0:
        raise ValueError("`labels_true` and `labels_pred` are empty; pass at least one labelled prediction.")
    missing = missing_labels(y_true)
    if missing.any():  # texts without a known class are not scored (never a class of their own)
        if missing.all():
            raise ValueError(
                f"`labels_true` holds no label at all ({len(y_true)} missing): there is nothing to score against."
            )
        y_true, y_pred = y_true[~missing], y_pred[~missing]
    return y_true, y_pred


def contingency_matrix(labels_true, labels_pred) -> np.ndarray:
    """Counts of (class, cluster) pairs: rows are classes, columns are clusters."""
    y_true, y_pred = _as_label_arrays(labels_true, labels_pred)
    return sk_metrics.cluster.contingency_matrix(y_true, y_pred)


def best_cluster_to_class_mapping(labels_true, labels_pred) -> dict[Any, Any]:
    """The one-to-one map cluster -> class that maximises the number of matches (Hungarian algorithm).

    Clusters left without a class (more clusters than classes) are absent from the map.
    """
    y_true, y_pred = _as_label_arrays(labels_true, labels_pred)
    classes, clusters = np.unique(y_true), np.unique(y_pred)
    rows, cols = linear_sum_assignment(contingency_matrix(y_true, y_pred).T, maximize=True)  # clusters x classes
    return {clusters[r].item(): classes[c].item() for r, c in zip(rows, cols)}


def cluster_accuracy(labels_true, labels_pred) -> float:
    """ACC: the fraction of texts whose cluster maps to their class under the best one-to-one matching."""
    counts = contingency_matrix(labels_true, labels_pred)  # classes x clusters
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return float(counts[rows, cols].sum() / counts.sum())


def purity(labels_true, labels_pred) -> float:
    """Each cluster takes its most frequent class (several clusters may take the same one)."""
    counts = contingency_matrix(labels_true, labels_pred)
    return float(counts.max(axis=0).sum() / counts.sum())


def normalized_mutual_info(labels_true, labels_pred) -> float:
    """Normalised mutual information between two partitions (scikit-learn's, arithmetic mean).

    Args:
        labels_true: the known classes, one per text.
        labels_pred: the cluster ids, one per text (their values need not match the classes').

    Returns:
        A float in [0, 1]; 1 for identical partitions up to renaming.
    """
    y_true, y_pred = _as_label_arrays(labels_true, labels_pred)
    return float(sk_metrics.normalized_mutual_info_score(y_true, y_pred))


def adjusted_rand_index(labels_true, labels_pred) -> float:
    """Adjusted Rand index between two partitions (scikit-learn's).

    Args:
        labels_true: the known classes, one per text.
        labels_pred: the cluster ids, one per text.

    Returns:
        A float at most 1; about 0 for a random partition, 1 for identical ones up to renaming.
    """
    y_true, y_pred = _as_label_arrays(labels_true, labels_pred)
    return float(sk_metrics.adjusted_rand_score(y_true, y_pred))


def clustering_scores(labels_true, labels_pred, prefix: str = "") -> dict[str, float]:
    """ACC, NMI, ARI and purity in one dict (keys optionally prefixed, e.g. ``kmeans_acc``)."""
    return {
        f"{prefix}acc": cluster_accuracy(labels_true, labels_pred),
        f"{prefix}nmi": normalized_mutual_info(labels_true, labels_pred),
        f"{prefix}ari": adjusted_rand_index(labels_true, labels_pred),
        f"{prefix}purity": purity(labels_true, labels_pred),
    }


def clustering_metric_path() -> str:
    """The folder of the package's ``evaluate`` metric script (``evaluate.load(clustering_metric_path())``)."""
    return str(Path(__file__).resolve().parent / "evaluate_metrics" / "clustering_metrics")


def load_clustering_metric(**kwargs):
    """ACC / NMI / ARI / purity as an ``evaluate.EvaluationModule``: ``evaluate.load`` of the metric script shipped in
    the package (works offline). Its ``compute(predictions=cluster_ids, references=classes)`` returns what
    :func:`clustering_scores` does. ``kwargs`` go to ``evaluate.load`` (``keep_in_memory`` defaults to True: nothing
    is written to the ``evaluate`` cache folder)."""
    import evaluate

    kwargs.setdefault("keep_in_memory", True)
    return evaluate.load(clustering_metric_path(), **kwargs)


def compute_metrics(eval_pred) -> dict[str, float]:
    """A ``compute_metrics`` for ``transformers.Trainer``.

    ``eval_pred.predictions`` are soft assignments / logits (N x K, argmax taken) or cluster ids (N,);
    ``eval_pred.label_ids`` are the ground-truth classes.
    """
    predictions, label_ids = eval_pred.predictions, eval_pred.label_ids
    if isinstance(predictions, (tuple, list)):
        predictions = predictions[0]
    predictions = np.asarray(predictions)
    if predictions.ndim == 2:
        predictions = predictions.argmax(axis=-1)
    return clustering_scores(label_ids, predictions)
