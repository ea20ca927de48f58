"""Metrics against scikit-learn / scipy and brute force on random labelings."""

import itertools

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from hf_textcluster.evaluation.metrics import (
    adjusted_rand_index,
    best_cluster_to_class_mapping,
    cluster_accuracy,
    clustering_scores,
    compute_metrics,
    normalized_mutual_info,
    purity,
)


def _brute_force_acc(y_true, y_pred):
    classes, clusters = sorted(set(y_true)), sorted(set(y_pred))
    best = 0
    # every injective map from the smaller set into the larger one
    if len(clusters) <= len(classes):
        for perm in itertools.permutations(classes, len(clusters)):
            mapping = dict(zip(clusters, perm))
            best = max(best, sum(mapping[p] == t for t, p in zip(y_true, y_pred)))
    else:
        for perm in itertools.permutations(clusters, len(classes)):
            mapping = {c: k for k, c in zip(classes, perm)}
            best = max(best, sum(mapping.get(p) == t for t, p in zip(y_true, y_pred)))
    return best / len(y_true)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n_classes,n_clusters", [(3, 3), (3, 5), (4, 2)])
def test_acc_matches_brute_force(seed, n_classes, n_clusters):
    rng = np.random.default_rng(seed)
    y_true = rng.integers(0, n_classes, 40)
    y_pred = rng.integers(0, n_clusters, 40) + 100  # cluster ids need not be class ids
    assert cluster_accuracy(y_true, y_pred) == pytest.approx(_brute_force_acc(list(y_true), list(y_pred)))


def test_acc_is_permutation_invariant_and_perfect():
    y = np.array([0, 0, 1, 1, 2, 2])
    assert cluster_accuracy(y, (y + 1) % 3) == 1.0
    assert best_cluster_to_class_mapping(y, (y + 1) % 3) == {1: 0, 2: 1, 0: 2}


@pytest.mark.parametrize("seed", range(3))
def test_nmi_ari_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    y_true, y_pred = rng.integers(0, 4, 60), rng.integers(0, 6, 60)
    assert normalized_mutual_info(y_true, y_pred) == pytest.approx(normalized_mutual_info_score(y_true, y_pred))
    assert adjusted_rand_index(y_true, y_pred) == pytest.approx(adjusted_rand_score(y_true, y_pred))


def test_purity_by_hand():
    y_true = ["a", "a", "b", "b", "b", "c"]
    y_pred = [0, 0, 0, 1, 1, 1]  # cluster 0 -> a (2 of 3), cluster 1 -> b (2 of 3)
    assert purity(y_true, y_pred) == pytest.approx(4 / 6)


def test_compute_metrics_for_trainer_takes_probabilities():
    from transformers import EvalPrediction

    probs = np.eye(3)[[0, 0, 1, 2]]
    scores = compute_metrics(EvalPrediction(predictions=probs, label_ids=np.array([5, 5, 6, 7])))
    assert scores["acc"] == 1.0 and scores["nmi"] == pytest.approx(1.0)
    assert set(clustering_scores([0, 1], [1, 0], prefix="kmeans_")) == {
        "kmeans_acc",
        "kmeans_nmi",
        "kmeans_ari",
        "kmeans_purity",
    }


def test_bad_metric_input():
    with pytest.raises(ValueError, match="labels_pred"):
        cluster_accuracy([0, 1, 2], [0, 1])
    with pytest.raises(ValueError, match="empty"):
        cluster_accuracy([], [])
