"""``fit_kmeans(init="best")``: k-means++ restarts against one Lloyd run from the UMAP clusters, the lower inertia kept;
the default start of the trainers and of ``initialize_clusters``."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from hf_textcluster.editing import kmeans as kmeans_module
from hf_textcluster.editing.kmeans import KMEANS_INITS, fit_kmeans
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.training.initialization import run_kmeans


def _many_small_blobs(seed: int = 0) -> np.ndarray:
    """40 well-separated blobs of unequal sizes: k-means++ restarts leave some blobs merged and others split, the UMAP
    neighbourhood graph sees every blob."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=6, size=(40, 10))
    sizes = rng.integers(5, 40, size=40)
    return np.concatenate([c + rng.normal(size=(s, 10)) for c, s in zip(centres, sizes)]).astype(np.float32)


def _one_gaussian(seed: int = 0) -> np.ndarray:
    """One Gaussian cut into 3 parts: no structure for the UMAP graph to find, the k-means++ restarts do best."""
    return np.random.default_rng(seed).normal(size=(300, 4)).astype(np.float32)


def _umap_started(x: np.ndarray, k: int, n_init: int):
    from sklearn.cluster import KMeans

    groups = kmeans_module._umap_kmeans_groups(x, k, n_init, 0)
    means = np.stack([x[groups == c].mean(axis=0) for c in range(k)])
    return KMeans(n_clusters=k, init=means, n_init=1, random_state=0).fit(x)


def test_best_is_one_of_the_accepted_starts():
    assert "best" in KMEANS_INITS and "k-means++" in KMEANS_INITS and "umap" in KMEANS_INITS


def test_the_umap_start_wins_by_inertia_on_many_small_blobs():
    pytest.importorskip("umap")
    from sklearn.cluster import KMeans

    x = _many_small_blobs()
    plus_plus = KMeans(n_clusters=40, n_init=2, random_state=0).fit(x)
    from_umap = _umap_started(x, 40, 2)
    assert from_umap.inertia_ < plus_plus.inertia_  # the premise: here the UMAP start is the better one
    best = fit_kmeans(x, 40, n_init=2, random_state=0, init="best")
    assert best.start_ == "umap"
    assert best.inertia_ == pytest.approx(from_umap.inertia_)
    np.testing.assert_array_equal(best.labels_, from_umap.labels_)
    assert best.labels_.shape == (len(x),)


def test_k_means_plus_plus_wins_without_structure_and_is_then_exactly_k_means_plus_plus():
    pytest.importorskip("umap")
    from sklearn.cluster import KMeans

    x = _one_gaussian()
    plus_plus = KMeans(n_clusters=3, n_init=10, random_state=0).fit(x)
    from_umap = _umap_started(x, 3, 10)
    assert plus_plus.inertia_ <= from_umap.inertia_
    best = fit_kmeans(x, 3, n_init=10, random_state=0, init="best")
    assert best.start_ == "k-means++"
    np.testing.assert_array_equal(best.labels_, plus_plus.labels_)
    assert best.inertia_ == pytest.approx(min(plus_plus.inertia_, from_umap.inertia_))


def test_best_is_deterministic_for_a_seed():
    pytest.importorskip("umap")
    x = _many_small_blobs(seed=3)[:400]
    first = fit_kmeans(x, 12, n_init=2, random_state=5, init="best")
    second = fit_kmeans(x, 12, n_init=2, random_state=5, init="best")
    assert first.start_ == second.start_
    np.testing.assert_array_equal(first.labels_, second.labels_)
    np.testing.assert_array_equal(first.cluster_centers_, second.cluster_centers_)


def test_every_start_records_itself():
    x = _one_gaussian()
    assert fit_kmeans(x, 3, n_init=2, init="k-means++").start_ == "k-means++"
    if importlib.util.find_spec("umap") is not None:
        assert fit_kmeans(x, 3, n_init=2, init="umap").start_ == "umap"


@pytest.mark.parametrize("why", ["no umap", "too few rows", "sparse"])
def test_best_falls_back_to_k_means_plus_plus_alone(why, monkeypatch, caplog):
    from scipy import sparse
    from sklearn.cluster import KMeans
    from transformers.utils import logging as hf_logging

    x = _one_gaussian()
    if why == "no umap":
        real_find_spec = importlib.util.find_spec
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda name, *a: None if name == "umap" else real_find_spec(name, *a)
        )
    elif why == "too few rows":
        x = x[:16]
    else:
        x = sparse.csr_matrix(np.where(x > 0.5, x, 0))

    def no_umap(*args, **kwargs):
        raise AssertionError("UMAP must not run here")

    monkeypatch.setattr(kmeans_module, "_umap_kmeans_groups", no_umap)
    hf_logging.set_verbosity_info()
    hf_logging.enable_propagation()
    try:
        with caplog.at_level("INFO", logger="hf_textcluster.editing.kmeans"):
            best = fit_kmeans(x, 3, n_init=3, random_state=0, init="best")
    finally:
        hf_logging.disable_propagation()
        hf_logging.set_verbosity_warning()
    assert best.start_ == "k-means++"
    np.testing.assert_array_equal(best.labels_, KMeans(n_clusters=3, n_init=3, random_state=0).fit(x).labels_)
    assert "k-means++ alone" in caplog.text
    expected = {"no umap": "umap-learn", "too few rows": "too few", "sparse": "sparse"}[why]
    assert expected in caplog.text


def test_best_with_a_sample_assigns_every_row():
    pytest.importorskip("umap")
    x = _many_small_blobs(seed=1)
    fitted = fit_kmeans(x, 10, n_init=2, random_state=0, max_samples=200, init="best")
    assert fitted.labels_.shape == (len(x),) and fitted.start_ in ("k-means++", "umap")
    np.testing.assert_array_equal(fitted.labels_, fitted.predict(x))


def test_a_bad_start_is_refused_with_the_choices():
    x = _one_gaussian()
    with pytest.raises(ValueError, match=r"`init` \(kmeans_init\) must be one of .*'best'.*got 'auto'"):
        fit_kmeans(x, 3, init="auto")
    with pytest.raises(ValueError, match="max_samples"):
        fit_kmeans(x, 3, init="best", max_samples=2)


def test_training_arguments_accept_best_and_refuse_others(tmp_path):
    from hf_textcluster.training.arguments import ClusteringTrainingArguments

    assert ClusteringTrainingArguments(output_dir=str(tmp_path), kmeans_init="best").kmeans_init == "best"
    with pytest.raises(ValueError, match="kmeans_init"):
        ClusteringTrainingArguments(output_dir=str(tmp_path), kmeans_init="umap-lloyd")


def test_recluster_cli_offers_best():
    import argparse

    from hf_textcluster.cli import recluster

    parser = argparse.ArgumentParser()
    recluster.add_arguments(parser.add_subparsers().add_parser("recluster"))
    args = parser.parse_args(["recluster", "--model", "m", "--input", "t.csv", "--kmeans-init", "best"])
    assert args.kmeans_init == "best"
    with pytest.raises(SystemExit):
        parser.parse_args(["recluster", "--model", "m", "--input", "t.csv", "--kmeans-init", "auto"])


def test_the_trainer_starts_from_best_by_default_and_says_which_start_won(
    tiny_encoder_dir, toy_corpus, tmp_path, caplog
):
    pytest.importorskip("umap")
    import torch
    from datasets import Dataset
    from transformers.utils import logging as hf_logging

    from hf_textcluster import ClusteringTrainingArguments, SCCLModel, SCCLTrainer

    texts, labels = toy_corpus
    dataset = Dataset.from_dict({"text": texts, "text_aug1": texts, "text_aug2": texts, "label": labels})
    args = ClusteringTrainingArguments(
        output_dir=str(tmp_path / "run"),
        report_to="none",
        disable_tqdm=True,
        use_cpu=True,
        save_strategy="no",
        max_steps=0,
        seed=0,
    )
    assert args.kmeans_init == "best"
    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    trainer = SCCLTrainer(model=model, args=args, train_dataset=dataset)
    hf_logging.set_verbosity_info()
    hf_logging.enable_propagation()
    try:
        with caplog.at_level("INFO"):
            trainer.initialize_clusters()
            run_kmeans(trainer, model.embed(texts))  # a later k-means of the same run is not announced again
    finally:
        hf_logging.disable_propagation()
        hf_logging.set_verbosity_warning()
    expected = fit_kmeans(
        model.kmeans_features(torch.from_numpy(model.embed(texts))).detach().numpy(), 3, random_state=0, init="best"
    )
    assert model.kmeans_start_ == expected.start_
    np.testing.assert_array_equal(trainer.initial_kmeans_labels, expected.labels_)
    announced = [r.getMessage() for r in caplog.records if "started from" in r.getMessage()]
    assert announced == [f"k-means (kmeans_init='best') started from {expected.start_}."]


def test_best_on_a_cuda_tensor_is_the_torch_k_means_there():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from hf_textcluster.editing.kmeans import TorchKMeans

    x = torch.from_numpy(_many_small_blobs()).cuda()
    fitted = fit_kmeans(x, 40, n_init=2, random_state=0, init="best")
    assert isinstance(fitted, TorchKMeans) and fitted.start_ == "k-means++" and fitted.centers.is_cuda


def test_a_umap_start_leaves_torch_s_thread_count_as_it_was():
    """UMAP's numba threads reset the OpenMP thread count torch shares: training after a UMAP start would compute with
    another count than a resumed run that skips it, and the two would differ in the last bits."""
    pytest.importorskip("umap")
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        fit_kmeans(np.random.default_rng(0).normal(size=(60, 8)).astype(np.float32), 3, init="umap")
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_the_exact_neighbours_are_scikit_learns_brute_force_cosine_neighbours(exclude_self, dtype):
    from sklearn.neighbors import NearestNeighbors

    x = np.random.default_rng(0).normal(size=(50, 6)).astype(dtype)
    # scale-free; chunks of 7 rows cover every row
    indices, distances = kmeans_module.exact_neighbours(x * 3.0, 5, chunk=7, exclude_self=exclude_self)
    searched = NearestNeighbors(n_neighbors=5, metric="cosine", algorithm="brute").fit(x)
    # kneighbors() without query rows leaves each row itself out
    expected_distances, expected = searched.kneighbors() if exclude_self else searched.kneighbors(x)
    np.testing.assert_array_equal(indices, expected)
    np.testing.assert_allclose(distances, expected_distances, atol=1e-5)
    assert distances.dtype == dtype


def test_leaving_each_row_out_keeps_its_duplicates():
    """Only the row itself is left out: a copy of it stays its nearest neighbour, at distance 0."""
    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 3.0], [0.6, 0.8]], dtype=np.float32)
    indices, distances = kmeans_module.exact_neighbours(x, 2, chunk=2, exclude_self=True)
    assert not (indices == np.arange(5)[:, None]).any()
    assert indices[:4, 0].tolist() == [1, 0, 3, 2]  # rows 2 and 3 point the same way
    assert distances[:4, 0].tolist() == [0.0, 0.0, 0.0, 0.0]


class _LayoutBySeed:
    """Stands in for ``umap.UMAP``: the layout of seed 1 puts the first two of three blobs on top of each other (a
    layout that merged two clusters), every other seed keeps the three apart."""

    seeds: list = []

    def __init__(self, random_state=None, precomputed_knn=(None, None, None), **kwargs):
        self.random_state = random_state
        _LayoutBySeed.seeds.append(random_state)

    def fit_transform(self, x):
        blob = np.repeat(np.arange(3), len(x) // 3)
        rng = np.random.default_rng(self.random_state)
        centres = np.array([[0.0, 0.0], [0.0, 0.0], [9.0, 0.0]]) if self.random_state == 1 else np.eye(3, 2) * 9
        return centres[blob] + rng.normal(scale=0.3, size=(len(x), 2))


def test_several_layouts_keep_the_partition_the_others_agree_with(monkeypatch):
    """One layout in a few merges two clusters; of three, the partition agreeing most with the others is kept."""
    umap = pytest.importorskip("umap")
    from sklearn.metrics import adjusted_rand_score

    monkeypatch.setattr(umap, "UMAP", _LayoutBySeed)
    x = np.random.default_rng(0).normal(size=(90, 4)).astype(np.float32)
    blobs = np.repeat(np.arange(3), 30)
    _LayoutBySeed.seeds = []
    merged = kmeans_module._umap_kmeans_groups(x, 3, random_state=1, layouts=1)
    assert adjusted_rand_score(blobs, merged) < 0.9  # the premise: alone, that layout's partition is wrong
    kept = kmeans_module._umap_kmeans_groups(x, 3, random_state=1, layouts=3)
    assert _LayoutBySeed.seeds == [1, 1, 2, 3]  # one layout per seed from random_state on
    assert adjusted_rand_score(blobs, kept) == 1.0


def test_the_most_agreeing_partition_is_the_one_the_majority_shares():
    outlier = np.array([0, 0, 0, 0, 1, 2])
    majority = np.array([0, 0, 1, 1, 2, 2])
    relabelled = np.array([2, 2, 0, 0, 1, 1])  # the same partition under other cluster numbers
    assert kmeans_module._most_agreeing([outlier, majority, relabelled]) is majority
