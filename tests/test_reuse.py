"""``reusing_results``: within a block an encoding pass or a seeded k-means / UMAP k-means of the same inputs runs once
and gives what a new computation gives; outside a block nothing is kept."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hf_textcluster.editing import kmeans as kmeans_module
from hf_textcluster.editing.kmeans import fit_kmeans
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.models.decmlm import DECMLMModel
from hf_textcluster.models.sccl import SCCLModel
from hf_textcluster.reuse import MAX_ENTRIES, digest, embed, reuse, reusing_results


class Counter:
    def __init__(self):
        self.calls = 0

    def __call__(self, value):
        self.calls += 1
        return value


def test_a_result_is_computed_once_per_key_and_callers_get_copies():
    count = Counter()
    with reusing_results():
        first = reuse(lambda: ("k", np.arange(3)), lambda: count([1, 2]))
        first.append(99)  # a caller's change does not reach the kept result
        again = reuse(lambda: ("k", np.arange(3)), lambda: count([0]))
        other = reuse(lambda: ("k", np.arange(4)), lambda: count([3]))
        with reusing_results():  # a nested block shares the outer one's results
            inner = reuse(lambda: ("k", np.arange(3)), lambda: count([0]))
    assert (again, other, inner, count.calls) == ([1, 2], [3], [1, 2], 2)
    with reusing_results():  # a new block starts empty
        assert reuse(lambda: ("k", np.arange(3)), lambda: count([5])) == [5]
    key = Counter()
    assert reuse(lambda: key(("k",)), lambda: 7) == 7 and key.calls == 0  # outside a block: no key is even made


def test_at_most_max_entries_are_kept_the_oldest_dropped_first():
    count = Counter()
    with reusing_results():
        for i in range(MAX_ENTRIES + 1):
            reuse(lambda i=i: ("k", i), lambda i=i: count(i))
        reuse(lambda: ("k", MAX_ENTRIES), lambda: count(-1))  # still kept
        reuse(lambda: ("k", 0), lambda: count(-1))  # dropped: computed again
    assert count.calls == MAX_ENTRIES + 2


def test_what_is_kept_stays_within_max_bytes(monkeypatch):
    from hf_textcluster import reuse as reuse_module

    monkeypatch.setattr(reuse_module, "MAX_BYTES", 100)
    count = Counter()
    with reusing_results():
        for _ in range(2):  # 160 bytes: computed each time, never kept
            reuse(lambda: ("big",), lambda: count(np.zeros(20)))
        reuse(lambda: ("a",), lambda: count(np.zeros(10)))  # 80 bytes, kept
        reuse(lambda: ("b",), lambda: count(np.zeros(5)))  # 40 more: over 100, so "a" is dropped
        reuse(lambda: ("b",), lambda: count(np.zeros(5)))
        reuse(lambda: ("a",), lambda: count(np.zeros(10)))
    assert count.calls == 5


def test_the_digest_covers_dtype_shape_bytes_and_module_weights():
    x = np.arange(6, dtype=np.float32)
    assert digest(x) == digest(x.copy()) != digest(x.reshape(2, 3))
    assert digest(x) != digest(x.astype(np.float64)) and digest(x) != digest(torch.from_numpy(x))
    assert digest(torch.ones(3, dtype=torch.bfloat16)) != digest(torch.ones(3))
    layer = torch.nn.Linear(2, 2)
    before = digest(layer)
    with torch.no_grad():
        layer.weight[0, 0] += 1
    assert digest(layer) != before


def test_models_of_one_encoder_share_an_encoding_pass_until_its_weights_change(tiny_encoder_dir, monkeypatch):
    texts = ["alpha beta gamma", "delta epsilon", "beta beta alpha", "zeta eta theta iota"]
    sccl = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=2)
    dec = from_encoder_pretrained(DECMLMModel, str(tiny_encoder_dir), num_clusters=2)
    expected = embed(sccl, texts, batch_size=2, precision="fp32")
    passes = Counter()
    real = SCCLModel._encode_texts

    def counted(self, *args, **kwargs):
        passes(None)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SCCLModel, "_encode_texts", counted)
    monkeypatch.setattr(DECMLMModel, "_encode_texts", counted)
    with reusing_results():
        first = embed(sccl, texts, batch_size=2, precision="fp32")
        shared = embed(dec, texts, batch_size=2, precision="fp32")  # another method, the same untrained encoder
        assert passes.calls == 1
        np.testing.assert_array_equal(first, expected)
        np.testing.assert_array_equal(shared, expected)
        embed(dec, texts[:3], batch_size=2, precision="fp32")  # other texts
        embed(dec, texts, batch_size=4, precision="fp32")  # other batches
        assert passes.calls == 3
        with torch.no_grad():  # a training step changes the weights: a new pass
            next(dec.encoder.parameters()).add_(0.5)
        changed = embed(dec, texts, batch_size=2, precision="fp32")
        assert passes.calls == 4 and not np.array_equal(changed, expected)


def test_seeded_kmeans_and_umap_kmeans_run_once_and_give_what_they_give_alone(monkeypatch):
    pytest.importorskip("umap")
    x = np.random.default_rng(0).normal(size=(120, 6)).astype(np.float32)
    alone = {init: fit_kmeans(x, 4, init=init, random_state=0).labels_ for init in ("k-means++", "umap", "best")}
    fits = Counter()
    monkeypatch.setattr(kmeans_module, "reuse", lambda key, compute: reuse(key, lambda: fits(compute())))
    with reusing_results():
        together = {init: fit_kmeans(x, 4, init=init, random_state=0).labels_ for init in ("best", "k-means++", "umap")}
        # one k-means++ fit, one draw of the UMAP layouts and one UMAP k-means on them, shared by the three
        assert fits.calls == 3
        fit_kmeans(x, 4, init="k-means++", random_state=1)  # another seed
        assert fits.calls == 4
        fit_kmeans(x, 4, init="k-means++", random_state=None)  # unseeded: not kept
        assert fits.calls == 4
    for init in alone:
        np.testing.assert_array_equal(together[init], alone[init])
