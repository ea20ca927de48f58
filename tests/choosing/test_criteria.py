"""One registry of label-free criteria, used by the choice of K and the choice of the served partition."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import calinski_harabasz_score, davies_bouldin_score

from hf_textcluster.choosing import candidate_choice, k_search
from hf_textcluster.choosing.criteria import (
    AUTO_CRITERIA,
    CRITERIA,
    K_CRITERIA,
    SERVE_CRITERIA,
    Criterion,
    get_criterion,
    register_criterion,
)


def _blobs(k=3, per_cluster=20, seed=0):
    rng = np.random.default_rng(seed)
    x = np.repeat(np.eye(k) * 5, per_cluster, axis=0) + rng.normal(size=(k * per_cluster, k))
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    return x, np.repeat(np.arange(k), per_cluster)


def test_both_choices_score_with_the_registrys_functions():
    x, y = _blobs()
    for name, direct in (("calinski_harabasz", calinski_harabasz_score), ("davies_bouldin", davies_bouldin_score)):
        expected = float(direct(x, y))
        assert k_search.kmeans_score(name, x, y) == pytest.approx(expected)
        signed = expected if CRITERIA[name].higher_is_better else -expected
        assert candidate_choice.score_partitions(x, {"p": y}, criterion=name)["p"] == pytest.approx(signed)
    assert k_search.kmeans_score("silhouette", x, y) == pytest.approx(
        candidate_choice.score_partitions(x, {"p": y}, criterion="silhouette")["p"]
    )


def test_a_registered_criterion_plugs_into_the_choice_of_partition():
    x, y = _blobs()
    calls = []

    def prefers_fewer(features, labels, random_state):
        calls.append(random_state)
        return float(-np.unique(labels).size)

    register_criterion(Criterion("fewest_clusters", prefers_fewer, True, "test only"))
    try:
        two = np.minimum(y, 1)
        name, scores = candidate_choice.choose_partition(x, {"three": y, "two": two}, criterion="fewest_clusters")
        assert name == "two" and scores == {"three": -3.0, "two": -2.0}
        assert calls == [0, 0]
    finally:
        CRITERIA.pop("fewest_clusters")


def test_unknown_and_malformed_criteria_are_refused():
    with pytest.raises(ValueError, match="Unknown criterion 'elbow'; choose one of silhouette"):
        get_criterion("elbow")
    with pytest.raises(TypeError, match="must be a Criterion"):
        register_criterion("silhouette")


def test_every_choice_offers_registered_criteria_under_one_name():
    for offered, kinds in (
        (K_CRITERIA, {"k", "partition"}),
        (SERVE_CRITERIA, {"partition", "candidates"}),
        (AUTO_CRITERIA, {"partition", "candidates"}),
    ):
        for name in offered:
            assert CRITERIA[name].name == name and CRITERIA[name].scores in kinds, name
    assert set(K_CRITERIA) | set(SERVE_CRITERIA) | set(AUTO_CRITERIA) == set(CRITERIA)
    x, y = _blobs()
    with pytest.raises(ValueError, match="criterion"):  # it scores a number of clusters, not partitions
        candidate_choice.score_partitions(x, {"p": y}, criterion="eigengap")
