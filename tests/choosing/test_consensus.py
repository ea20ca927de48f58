"""The consensus of candidate partitions (Topchy, Jain & Punch 2003) and the criteria of `train --method auto`
against direct re-computation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.neighbors import KNeighborsClassifier

from hf_textcluster.choosing.candidate_choice import candidate_criteria
from hf_textcluster.choosing.consensus import average_nmi, consensus_partition, membership_matrix
from hf_textcluster.choosing.criteria import knn_holdout


def _blobs(seed=0, per=30, k=3, d=8):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d)) * 4
    x = np.repeat(centres, per, axis=0) + rng.normal(size=(k * per, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True), np.repeat(np.arange(k), per)


def test_membership_matrix_is_the_concatenated_one_hot_matrix():
    matrix = membership_matrix({"a": [5, 5, 7], "b": ["x", "y", "y"]}).toarray()
    assert matrix.tolist() == [[1, 0, 1, 0], [1, 0, 0, 1], [0, 1, 0, 1]]
    with pytest.raises(ValueError, match="one cluster id per text"):
        membership_matrix({"a": [0, 1, 1], "b": [0, 1]})
    with pytest.raises(ValueError, match="non-empty mapping"):
        membership_matrix({})


def test_consensus_of_relabelled_copies_is_the_partition_and_follows_the_majority():
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(4), 25)
    copies = {f"copy{i}": rng.permutation(4)[truth] for i in range(3)}  # the same partition, ids permuted
    noisy = truth.copy()
    noisy[rng.choice(100, size=30, replace=False)] = rng.integers(0, 4, size=30)
    consensus = consensus_partition({**copies, "noisy": noisy}, 4)
    assert adjusted_rand_score(truth, consensus) == 1.0
    # ids in order of first appearance: deterministic whatever k-means numbered
    assert consensus[0] == 0 and set(consensus.tolist()) == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="at least 2"):
        consensus_partition({"a": truth}, 4)
    with pytest.raises(ValueError, match="num_clusters"):
        consensus_partition(copies, 1)


def test_average_nmi_is_the_mean_nmi_with_the_others():
    rng = np.random.default_rng(1)
    parts = {f"s{i % 2}/p{i}": rng.integers(0, 3, size=60) for i in range(4)}
    parts["consensus"] = rng.integers(0, 3, size=60)
    names = list(parts)
    anmi = average_nmi(parts)
    for n in names:
        direct = np.mean([normalized_mutual_info_score(parts[n], parts[m]) for m in names if m != n])
        assert anmi[n] == pytest.approx(direct)
    # against other sources only: s0's read-outs are compared with s1's, never with each other or the consensus
    independent = average_nmi(parts, source=lambda name: name.split("/")[0] if "/" in name else None)
    for n in names:
        others = [m for m in names if "/" in m and m.split("/")[0] != (n.split("/")[0] if "/" in n else None)]
        direct = np.mean([normalized_mutual_info_score(parts[n], parts[m]) for m in others])
        assert independent[n] == pytest.approx(direct)


def test_knn_holdout_is_a_neighbour_vote_scored_on_the_other_half():
    x, truth = _blobs()
    score = knn_holdout
    rng = np.random.default_rng(7)
    shuffled = rng.permutation(truth)
    assert score(x, truth, 0) > 0.9 > 0.3 > score(x, shuffled, 0)
    # direct re-computation: the seeded halves, a 10-neighbour cosine vote each way, the mean NMI
    rows = np.random.default_rng(3).permutation(x.shape[0])
    halves = (rows[: rows.size // 2], rows[rows.size // 2 :])
    direct = []
    for fit, held in (halves, halves[::-1]):
        vote = KNeighborsClassifier(n_neighbors=10, metric="cosine", algorithm="brute").fit(x[fit], shuffled[fit])
        direct.append(normalized_mutual_info_score(shuffled[held], vote.predict(x[held])))
    assert score(x, shuffled, 3) == pytest.approx(np.mean(direct))


def test_candidate_criteria_score_each_candidate_in_its_own_space():
    x_good, truth = _blobs(0)
    x_noise = np.random.default_rng(5).normal(size=x_good.shape)
    x_noise /= np.linalg.norm(x_noise, axis=1, keepdims=True)
    candidates = {"a/head": truth, "b/head": truth.copy(), "pretrained/kmeans": truth.copy(), "consensus": truth}
    values = candidate_criteria(candidates, {"a": x_good, "b": x_noise, "pretrained": x_good}, random_state=0)
    # the same partition looks separable in the space that clusters it, not in noise
    assert values["separability"]["a/head"] > values["separability"]["b/head"]
    # the consensus is scored in every trained signal's space: the mean of the two
    expected = (values["separability"]["a/head"] + values["separability"]["b/head"]) / 2
    assert values["separability"]["consensus"] == pytest.approx(expected)
    assert values["agreement"]["a/head"] == pytest.approx(1.0)
