"""Refinement by iterative classification and the label-free choice of a partition, on synthetic blobs."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from hf_textcluster.choosing.candidate_choice import choose_partition, score_partitions
from hf_textcluster.choosing.criteria import SERVE_CRITERIA
from hf_textcluster.choosing.linear_heads import DISTIL_C, RefinementResult, distil_partition, l2_normalize
from hf_textcluster.choosing.refinement import refine_partition


def _blobs(sizes, dim=16, spread=0.35, seed=0):
    """Well-separated directions on the sphere (what a sentence encoder's clusters look like)."""
    rng = np.random.default_rng(seed)
    centres = l2_normalize(rng.normal(size=(len(sizes), dim)))
    x = np.concatenate([c + spread * rng.normal(size=(n, dim)) / np.sqrt(dim) for c, n in zip(centres, sizes)])
    y = np.repeat(np.arange(len(sizes)), sizes)
    return x, y


def _corrupt(y, fraction, k, seed=0):
    rng = np.random.default_rng(seed)
    noisy = y.copy()
    idx = rng.choice(len(y), size=int(fraction * len(y)), replace=False)
    noisy[idx] = (noisy[idx] + rng.integers(1, k, size=idx.size)) % k
    return noisy


def test_refinement_repairs_a_corrupted_partition():
    x, y = _blobs([60, 80, 100, 70])
    noisy = _corrupt(y, 0.25, 4)
    result = refine_partition(x, noisy, random_state=0)
    assert isinstance(result, RefinementResult)
    assert not result.declined, result.reason
    assert np.mean(noisy == y) < 0.8
    assert np.mean(result.labels == y) > 0.98
    assert 0.2 < result.changed < 0.3
    assert 1 <= result.rounds == len(result.history) <= 20
    assert result.labels.dtype == np.int64


def test_linear_head_reproduces_the_labels():
    x, y = _blobs([60, 80, 100, 70])
    result = refine_partition(x * 7.0, _corrupt(y, 0.2, 4), random_state=0)  # scale must not matter
    assert result.coef.shape == (4, 16) and result.coef.dtype == np.float32
    assert result.intercept.shape == (4,) and result.centroids.shape == (4, 16)
    head = np.argmax(l2_normalize(x) @ result.coef.T + result.intercept, axis=1)
    assert np.mean(head == result.labels) == result.head_agreement == 1.0
    assert np.array_equal(result.predict(x), result.labels)


def test_declines_when_small_clusters_would_be_wiped_out(monkeypatch):
    # Two tiny clusters sit inside big ones: an input that splits them off cannot survive classification
    # with a classifier that starves small classes (a penalised logistic regression in place of the LDA); the guard
    # must return the input and say why.
    x, y = _blobs([150, 150], seed=1)
    labels = y.copy()
    labels[:3] = 2
    labels[150:153] = 3
    starving = lambda: LogisticRegression(C=0.01, max_iter=200)  # noqa: E731
    monkeypatch.setattr("hf_textcluster.choosing.refinement.SharedCovarianceClassifier", starving)
    result = refine_partition(x, labels, random_state=0)
    assert result.declined
    assert "vanished" in result.reason or "kept under" in result.reason
    assert np.array_equal(result.labels, labels)
    assert result.changed == 0.0
    assert np.mean(result.predict(x) == labels) == result.head_agreement


def test_deterministic_under_random_state():
    x, y = _blobs([40, 50, 60], seed=2)
    noisy = _corrupt(y, 0.3, 3, seed=3)
    a = refine_partition(x, noisy, random_state=5)
    b = refine_partition(x, noisy, random_state=5)
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.coef, b.coef)
    assert a.history == b.history


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"embeddings": np.zeros(5)}, "embeddings"),
        ({"labels": np.zeros(7, dtype=int)}, "labels"),
        ({"labels": np.array(["a"] * 10)}, "labels"),
        ({"labels": -np.ones(10, dtype=int)}, "labels"),
        ({"num_clusters": 1}, "num_clusters"),
        ({"num_clusters": 2, "labels": np.arange(10) % 3}, "num_clusters"),
        ({"max_rounds": -1}, "max_rounds"),
        ({"tol": 1.5}, "tol"),
        ({"outlier_fraction": 0.7}, "outlier_fraction"),
        ({"train_fraction": (0.9, 0.5)}, "train_fraction"),
        ({"random_state": "zero"}, "random_state"),
    ],
)
def test_argument_validation(kwargs, match):
    args = {"embeddings": np.random.default_rng(0).normal(size=(10, 4)), "labels": np.arange(10) % 2}
    args.update(kwargs)
    embeddings, labels = args.pop("embeddings"), args.pop("labels")
    with pytest.raises(ValueError, match=match):
        refine_partition(embeddings, labels, **args)


@pytest.mark.parametrize("criterion", SERVE_CRITERIA)
def test_choose_partition_prefers_the_clean_partition(criterion):
    x, y = _blobs([40, 50, 60], seed=4)
    rng = np.random.default_rng(0)
    candidates = {"shuffled": rng.permutation(y), "clean": y, "half": np.where(rng.random(y.size) < 0.5, y, 0)}
    name, scores = choose_partition(x, candidates, criterion=criterion, random_state=0)
    assert name == "clean", scores
    assert list(scores) == list(candidates)


def test_selection_ties_and_validation():
    x, y = _blobs([30, 30], seed=5)
    name, scores = choose_partition(x, {"b": y, "a": 1 - y}, criterion="silhouette")
    assert name == "b" and scores["a"] == scores["b"]
    with pytest.raises(ValueError, match="criterion"):
        score_partitions(x, {"a": y}, criterion="inertia")
    with pytest.raises(ValueError, match="candidates"):
        score_partitions(x, {"a": y[:-1]}, criterion="silhouette")
    with pytest.raises(ValueError, match="criterion"):
        score_partitions(x, {"a": y, "b": y}, criterion="agreement")


def test_default_recipe_keeps_small_real_clusters():
    x, y = _blobs([6, 120, 9, 150, 12], seed=6)
    result = refine_partition(x, _corrupt(y, 0.1, 5, seed=1), random_state=0)
    assert not result.declined, result.reason
    assert np.mean(result.labels == y) > 0.97
    assert np.bincount(result.labels, minlength=5).min() >= 5


def test_zero_rounds_only_distils_the_partition_into_the_head():
    x, y = _blobs([50, 60, 70], seed=7)
    result = refine_partition(x, y, max_rounds=0)
    assert result.rounds == 0 and result.history == [] and not result.declined
    assert "distilled" in result.reason
    assert np.array_equal(result.labels, y) and np.array_equal(result.predict(x), y)


def test_distilling_serves_the_heads_argmax_of_a_logistic_regression():
    x, y = _blobs([40, 70, 90, 5], seed=8)
    noisy = _corrupt(y, 0.1, 4, seed=2)
    result = distil_partition(x * 3.0, noisy, num_clusters=6, random_state=0)  # scale must not matter
    direct = LogisticRegression(C=DISTIL_C, max_iter=500).fit(l2_normalize(x), noisy)
    expected = direct.predict(l2_normalize(x))
    assert np.mean(result.labels == expected) > 0.99  # the same model, up to float32 serving
    assert np.array_equal(result.predict(x), result.labels)  # what is served is what is returned
    assert result.changed == pytest.approx(np.mean(result.labels != noisy))
    assert result.rounds == 0 and not result.declined and "logistic-regression" in result.reason
    assert result.coef.shape == (6, 16) and np.all(result.intercept[4:] < -1e8)  # empty clusters never win
    assert np.mean(result.labels == y) > np.mean(noisy == y)  # a text the space places elsewhere moves


def test_distilling_a_large_corpus_fits_on_a_seeded_sample():
    x, y = _blobs([300, 400, 500], seed=9)
    first = distil_partition(x, y, max_samples=200, random_state=1)
    again = distil_partition(x, y, max_samples=200, random_state=1)
    whole = distil_partition(x, y, max_samples=None, random_state=1)
    assert np.array_equal(first.coef, again.coef) and not np.array_equal(first.coef, whole.coef)
    assert np.mean(first.labels == y) > 0.99 and first.labels.shape == y.shape
    with pytest.raises(ValueError, match="max_samples"):
        distil_partition(x, y, max_samples=1)


def test_default_criterion_prefers_the_clean_partition():
    x, y = _blobs([40, 50, 60], seed=8)
    noisy = _corrupt(y, 0.3, 3, seed=2)
    name, _ = choose_partition(x, {"noisy": noisy, "clean": y})  # DEFAULT_SERVE_CRITERION
    assert name == "clean"
