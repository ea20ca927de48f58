"""One registry of label-free criteria, used by the choice of K and the choice of the served partition."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import calinski_harabasz_score, davies_bouldin_score

from hf_textcluster.choosing import auto_k, selection
from hf_textcluster.choosing.criteria import CRITERIA, Criterion, get_criterion, register_criterion


def _blobs(k=3, per_cluster=20, seed=0):
    rng = np.random.default_rng(seed)
    x = np.repeat(np.eye(k) * 5, per_cluster, axis=0) + rng.normal(size=(k * per_cluster, k))
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    return x, np.repeat(np.arange(k), per_cluster)


def test_both_choices_score_with_the_registrys_functions():
    x, y = _blobs()
    for name, direct in (("calinski_harabasz", calinski_harabasz_score), ("davies_bouldin", davies_bouldin_score)):
        expected = float(direct(x, y))
        assert auto_k._kmeans_score(name, x, y) == pytest.approx(expected)
        signed = expected if CRITERIA[name].higher_is_better else -expected
        assert selection.score_partitions(x, {"p": y}, criterion=name)["p"] == pytest.approx(signed)
    assert auto_k._kmeans_score("silhouette", x, y) == pytest.approx(
        selection.score_partitions(x, {"p": y}, criterion="silhouette")["p"]
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
        name, scores = selection.choose_partition(x, {"three": y, "two": two}, criterion="fewest_clusters")
        assert name == "two" and scores == {"three": -3.0, "two": -2.0}
        assert calls == [0, 0]
    finally:
        CRITERIA.pop("fewest_clusters")


def test_unknown_and_malformed_criteria_are_refused():
    with pytest.raises(ValueError, match="Unknown criterion 'elbow'; choose one of silhouette"):
        get_criterion("elbow")
    with pytest.raises(TypeError, match="must be a Criterion"):
        register_criterion("silhouette")


def test_auto_ks_old_keyword_still_works_with_a_warning():
    x, _ = _blobs(per_cluster=15)
    with pytest.warns(DeprecationWarning, match="`method=` is now `criterion=`"):
        old = auto_k.estimate_num_clusters(x, k_max=6, method="silhouette")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = auto_k.estimate_num_clusters(x, k_max=6, criterion="silhouette")
    assert (old.num_clusters, old.scores, old.criterion) == (new.num_clusters, new.scores, "silhouette")
    assert new.method == "silhouette"
    with pytest.raises(ValueError, match="Pass `criterion` only"):
        auto_k.estimate_num_clusters(x, k_max=6, method="silhouette", criterion="silhouette")
    with pytest.warns(DeprecationWarning, match="`methods=` is now `criteria=`"):
        assert list(auto_k.compare_criteria(x, k_max=6, methods=("silhouette",))) == ["silhouette"]
