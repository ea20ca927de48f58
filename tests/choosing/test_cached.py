"""The objectives trained on cached embeddings: each loss against its equation computed by hand, seeded and
deterministic runs, their candidates' names, one-line errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hf_textcluster.choosing.cached import adapter_loss, fit_adapter, fit_scan, scan_loss


def _blobs(n_per=30, k=3, d=8, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d)) * 4
    x = np.repeat(centres, n_per, axis=0) + rng.normal(size=(k * n_per, d))
    return x.astype(np.float32), np.repeat(np.arange(k), n_per)


def test_scan_loss_is_eq_2_by_hand():
    anchor = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1]])
    neighbour = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    consistency = -(math.log(0.7 * 0.6 + 0.2 * 0.3 + 0.1 * 0.1) + math.log(0.1 * 0.2 + 0.8 * 0.2 + 0.1 * 0.6)) / 2
    mean = [(0.7 + 0.1) / 2, (0.2 + 0.8) / 2, (0.1 + 0.1) / 2]
    negative_entropy = sum(m * math.log(m) for m in mean)
    assert float(scan_loss(anchor, neighbour, 5.0)) == pytest.approx(consistency + 5.0 * negative_entropy, rel=1e-5)
    # every neighbour of each text at once (broadcast): the mean over all pairs, p̄ over the texts
    both = torch.stack([neighbour, neighbour.flip(0)], dim=1)
    pairs = [(a, b) for a, row in zip(anchor.tolist(), both.tolist()) for b in row]
    by_pair = -sum(math.log(sum(x * y for x, y in zip(a, b))) for a, b in pairs) / 4
    value = scan_loss(anchor[:, None, :], both, 5.0)
    assert float(value) == pytest.approx(by_pair + 5.0 * negative_entropy, rel=1e-5)


def test_adapter_loss_is_sccl_instance_contrast_plus_eta_kl_by_hand():
    torch.manual_seed(0)
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    pa, pb = torch.randn(3, 5), torch.randn(3, 5)
    centres = torch.randn(2, 4)
    z = [v / v.norm() for v in torch.cat([pa, pb]).tolist() for v in [torch.tensor(v)]]
    contrast = 0.0
    for i in range(6):
        positive = (i + 3) % 6
        logits = [float(z[i] @ z[j]) / 0.5 for j in range(6) if j != i]
        others = [j for j in range(6) if j != i]
        contrast += -(float(z[i] @ z[positive]) / 0.5 - math.log(sum(math.exp(v) for v in logits)))
        assert positive in others
    contrast /= 6
    q = [[1 / (1 + float(((a[i] - c) ** 2).sum())) for c in centres] for i in range(3)]
    q = [[v / sum(row) for v in row] for row in q]
    f = [sum(q[i][k] for i in range(3)) for k in range(2)]
    p = [[q[i][k] ** 2 / f[k] for k in range(2)] for i in range(3)]
    p = [[v / sum(row) for v in row] for row in p]
    kl = sum(p[i][k] * math.log(p[i][k] / q[i][k]) for i in range(3) for k in range(2)) / 3
    assert float(adapter_loss(a, b, pa, pb, centres, temperature=0.5, eta=2.0)) == pytest.approx(
        contrast + 2.0 * kl, rel=1e-5
    )


def test_scan_is_seeded_and_served_by_its_head():
    x, _ = _blobs()
    before = torch.get_rng_state()
    made = fit_scan(x, 3, neighbours=5, random_state=1)
    assert torch.equal(torch.get_rng_state(), before)  # the global RNG is left as it was
    again = fit_scan(x, 3, neighbours=5, random_state=1)
    assert set(made.candidates) == {"scan"} and set(made.serving) == {"scan"}
    np.testing.assert_array_equal(made.candidates["scan"], again.candidates["scan"])
    # its linear head on the L2-normalised embeddings serves exactly its partition
    np.testing.assert_array_equal(made.serving["scan"].predict(x), made.candidates["scan"])
    assert made.features.shape == x.shape
    # the entropy term keeps every cluster in use
    assert np.unique(made.candidates["scan"]).size == 3


def test_adapter_is_seeded_and_its_candidates_are_in_its_space():
    x, _ = _blobs()
    view = x + np.random.default_rng(1).normal(size=x.shape).astype(np.float32) * 0.1
    made = fit_adapter(x, view, 3, steps=20, random_state=0)
    again = fit_adapter(x, view, 3, steps=20, random_state=0)
    assert set(made.candidates) == {"head", "kmeans", "umap_kmeans"}
    for name, labels in made.candidates.items():
        assert labels.shape == (len(x),) and labels.max() < 3, name
        np.testing.assert_array_equal(labels, again.candidates[name], err_msg=name)
    assert made.features.shape == x.shape and not np.allclose(made.features, x)  # the adapter moved the texts
    assert fit_adapter(x[:12], view[:12], 3, steps=2).candidates.keys() == {"head", "kmeans"}  # too few for UMAP


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda x: fit_scan(x, 1), "num_clusters"),
        (lambda x: fit_scan(x, 3, neighbours=len(x)), "neighbours"),
        (lambda x: fit_scan(x[:, :0], 3), "embeddings"),
        (lambda x: fit_adapter(x, x[:-1], 3), "view_embeddings"),
        (lambda x: fit_adapter(x, x, 3, steps=0), "steps"),
    ],
)
def test_bad_arguments_fail_with_one_line_naming_them(call, match):
    x, _ = _blobs()
    with pytest.raises(ValueError, match=match) as err:
        call(x)
    assert "\n" not in str(err.value)


def test_the_package_reproduces_the_studys_partitions():
    """training/studies/cached_heads.py measured these objectives; the package's functions give its partitions."""
    threads = torch.get_num_threads()
    from sklearn.cluster import KMeans

    from hf_textcluster.editing.kmeans import _umap_kmeans_groups
    from training.studies import cached_heads as study

    torch.set_num_threads(threads)  # the study sets its own at import
    x, _ = _blobs(n_per=40, k=3, d=16, seed=2)
    view = x + np.random.default_rng(3).normal(size=x.shape).astype(np.float32) * 0.3
    np.testing.assert_array_equal(fit_scan(x, 3, random_state=1).candidates["scan"], study.scan(x, 3, seed=1)[0])
    made = fit_adapter(x, view, 3, steps=40, random_state=1)
    head, adapted = study.sccl_cache(x, view, 3, seed=1, steps=40)
    np.testing.assert_array_equal(made.candidates["head"], head)
    np.testing.assert_allclose(made.features, adapted, atol=1e-5)
    np.testing.assert_array_equal(made.candidates["kmeans"], KMeans(3, n_init=10, random_state=1).fit_predict(adapted))
    np.testing.assert_array_equal(made.candidates["umap_kmeans"], _umap_kmeans_groups(adapted, 3, random_state=1))
