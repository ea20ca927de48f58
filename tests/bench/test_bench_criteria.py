"""The criteria only the benchmark computes: registered by name, scored as the package scores its own."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score, silhouette_score

from hf_textcluster.choosing.candidate_choice import score_partitions
from hf_textcluster.choosing.criteria import AUTO_CRITERIA, CRITERIA, SERVE_CRITERIA, knn_holdout
from training.bench.criteria import (
    AUTO_RECORDED,
    BENCH_CRITERIA,
    REGISTRY,
    SERVE_RECORDED,
    criteria_of,
    reduced_silhouettes,
    score_all,
)


def _blobs(seed=0, k=3, per=30):
    rng = np.random.default_rng(seed)
    x = np.repeat(np.eye(k) * 4, per, axis=0) + rng.normal(size=(k * per, k))
    return x / np.linalg.norm(x, axis=1, keepdims=True), np.repeat(np.arange(k), per)


def test_the_benchmarks_criteria_are_its_own_and_refused_by_the_package():
    names = {c.name for c in BENCH_CRITERIA}
    assert names <= set(REGISTRY) and not names & set(CRITERIA)  # the package's registry stays as it is
    assert set(SERVE_RECORDED) - set(SERVE_CRITERIA) <= names >= set(AUTO_RECORDED) - set(AUTO_CRITERIA)
    x, truth = _blobs()
    with pytest.raises(ValueError, match="criterion"):
        score_partitions(x, {"p": truth}, criterion="knn_holdout")


def test_the_benchmarks_criteria_score_as_their_definitions():
    x, truth = _blobs()
    rng = np.random.default_rng(1)
    candidates = {"a/head": truth, "a/kmeans": rng.permutation(truth), "b/kmeans": truth.copy(), "consensus": truth}
    values = criteria_of(
        candidates, {"a": x, "b": x}, criteria=["knn_holdout", "agreement_ari", "agreement_independent"]
    )
    for name, labels in candidates.items():
        assert values["knn_holdout"][name] == pytest.approx(knn_holdout(x, labels, 0))
        others = [m for m in candidates if m != name]
        ari = np.mean([adjusted_rand_score(labels, candidates[m]) for m in others])
        assert values["agreement_ari"][name] == pytest.approx(ari)
    # against other sources only: a's read-outs against b's, never against each other or the consensus
    assert values["agreement_independent"]["a/head"] == pytest.approx(
        normalized_mutual_info_score(truth, candidates["b/kmeans"])
    )
    scores = score_all(x, {"clean": truth, "shuffled": candidates["a/kmeans"]}, "silhouette_pca")
    assert scores["clean"] > scores["shuffled"]
    assert reduced_silhouettes(x, {"clean": truth}, 0)["clean"] == pytest.approx(silhouette_score(x, truth))
