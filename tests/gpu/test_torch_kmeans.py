"""The torch k-means (what k-means runs on when the features are on a GPU) against scikit-learn's, on CPU tensors."""

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from hf_textcluster.editing.kmeans import TorchKMeans, fit_kmeans, torch_kmeans


@pytest.fixture(scope="module")
def blobs():
    x, y = make_blobs(n_samples=600, centers=6, n_features=16, cluster_std=1.0, random_state=0)
    return x.astype(np.float32), y


def test_torch_kmeans_finds_the_blobs_as_sklearn_does(blobs):
    x, y = blobs
    ours = torch_kmeans(torch.from_numpy(x), 6, n_init=5, random_state=0)
    theirs = KMeans(n_clusters=6, n_init=5, random_state=0).fit(x)
    assert adjusted_rand_score(y, ours.labels_) == 1.0
    assert adjusted_rand_score(theirs.labels_, ours.labels_) == 1.0
    assert ours.inertia_ == pytest.approx(theirs.inertia_, rel=1e-4)
    assert ours.cluster_centers_.shape == (6, 16) and ours.labels_.shape == (600,)
    np.testing.assert_array_equal(ours.predict(x), ours.labels_)


def test_torch_kmeans_is_seeded_and_keeps_the_lowest_inertia(blobs):
    x = torch.from_numpy(blobs[0])
    one, again = torch_kmeans(x, 9, n_init=3, random_state=4), torch_kmeans(x, 9, n_init=3, random_state=4)
    np.testing.assert_array_equal(one.labels_, again.labels_)
    single = [torch_kmeans(x, 9, n_init=1, random_state=seed).inertia_ for seed in range(6)]
    # 9 clusters on 6 blobs: restarts end in different optima; more restarts never end worse than one of the same seed
    assert torch_kmeans(x, 9, n_init=6, random_state=0).inertia_ <= single[0] + 1e-3
    assert len({round(v, 2) for v in single}) > 1


def test_torch_kmeans_reseeds_an_emptied_cluster():
    x = torch.tensor([[0.0, 0.0]] * 5 + [[10.0, 10.0]] * 5 + [[10.0, 10.1]])
    fitted = torch_kmeans(x, 3, n_init=2, random_state=0)
    assert len(np.unique(fitted.labels_)) == 3


def test_fit_kmeans_keeps_sklearn_for_cpu_tensors(blobs):
    x = blobs[0]
    from_tensor = fit_kmeans(torch.from_numpy(x), 6, n_init=2, random_state=0)
    from_array = fit_kmeans(x, 6, n_init=2, random_state=0)
    assert not isinstance(from_tensor, TorchKMeans)
    np.testing.assert_array_equal(from_tensor.labels_, from_array.labels_)


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(features=np.zeros((4, 2))), "2-D torch tensor"),
        (dict(num_clusters=0), "num_clusters"),
        (dict(num_clusters=11), "num_clusters"),
        (dict(n_init=0), "n_init"),
    ],
)
def test_torch_kmeans_names_the_bad_argument(bad, message):
    kwargs = dict(features=torch.zeros(10, 2), num_clusters=2, n_init=1)
    kwargs.update(bad)
    with pytest.raises(ValueError, match=message):
        torch_kmeans(**kwargs)
