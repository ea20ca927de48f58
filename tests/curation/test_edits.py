"""Merging, splitting and updating a clusterer's clusters by weight arithmetic: for every method and for a served
refined head, the edited model serves the new partition, and saves, loads and serves it through AutoModel and the
pipeline."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModel, pipeline

import hf_textcluster  # noqa: F401
from hf_textcluster.choosing.refinement import refine_partition
from hf_textcluster.editing import (
    initialize_clusters,
    least_typical,
    merge_clusters,
    set_refined_head,
    split_cluster,
    start_online,
    update,
)
from hf_textcluster.hub import save_pretrained
from hf_textcluster.models import METHODS, get_method
from hf_textcluster.models.building import from_encoder_pretrained

K = 5


def _model(method, encoder_dir, texts, refined=False):
    torch.manual_seed(0)
    model = from_encoder_pretrained(get_method(method).model_class, str(encoder_dir), num_clusters=K)
    if method == "aecl" and not refined:  # the clustering network G_p served (random here: the arithmetic is the same)
        initialize_clusters(model, texts)
        model.config.serving_head, model.config.serving_attention = "network", "self"
    else:
        initialize_clusters(model, texts)
    if refined:
        embeddings = model.embed(texts)
        with torch.no_grad():
            features = model.kmeans_features(torch.from_numpy(embeddings)).numpy()
        result = refine_partition(features, model.predict(texts), num_clusters=K, max_rounds=0)
        set_refined_head(model, result.coef, result.intercept, served_partition="kmeans+refined")
    return model.calibrate(texts)


@pytest.fixture(scope="module")
def corpus(toy_corpus):
    texts, _ = toy_corpus
    extra = [f"{w} {v} {u}" for w, v, u in zip(texts[0].split() * 40, texts[1].split() * 40, texts[2].split() * 40)]
    return texts + extra[:60]


CASES = [(m, False) for m in METHODS] + [("sccl", True), ("aecl", True)]


def _round_trip(model, texts, tmp_path):
    model.save_pretrained(tmp_path)
    loaded = AutoModel.from_pretrained(tmp_path)
    np.testing.assert_array_equal(loaded.predict(texts), model.predict(texts))
    clusterer = pipeline("text-clustering", model=loaded)
    out = clusterer(texts[:4])
    assert [o["cluster"] for o in out] == list(model.predict(texts[:4]))
    assert all(o["label"] == model.config.id2label[o["cluster"]] for o in out)
    return loaded


@pytest.mark.parametrize("method,refined", CASES)
def test_merge_serves_the_merged_partition(method, refined, tiny_encoder_dir, corpus, tmp_path):
    model = _model(method, tiny_encoder_dir, corpus, refined)
    before = model.predict(corpus)
    merged = merge_clusters(model, [[3, 1]], texts=corpus)
    assert merged.config.num_clusters == K - 1 and model.config.num_clusters == K
    assert list(merged.cluster_mapping_) == [0, 1, 2, 1, 3]
    after = merged.predict(corpus)
    expected = merged.cluster_mapping_[before]
    # the merged partition, up to the texts near the merged clusters' new boundary
    assert (after == expected).mean() >= 0.8
    assert merged.is_calibrated and merged.calibration.centres.shape[0] == K - 1
    np.testing.assert_array_equal(model.predict(corpus), before)  # the original is untouched
    _round_trip(merged, corpus, tmp_path)


@pytest.mark.parametrize("method,refined", CASES)
def test_split_serves_the_split_partition(method, refined, tiny_encoder_dir, corpus, tmp_path):
    model = _model(method, tiny_encoder_dir, corpus, refined)
    before = model.predict(corpus)
    big = int(np.bincount(before).argmax())
    split = split_cluster(model, big, n=2, texts=corpus)
    assert split.config.num_clusters == K + 1
    after = split.predict(corpus)
    others = before != big
    assert (after[others] == before[others]).mean() >= 0.9  # the other clusters keep their texts
    members = after[~others]
    assert set(members) <= {big, K} or (np.isin(members, [big, K]).mean() >= 0.9)
    assert np.isin(members, [big, K]).mean() >= 0.9 and min((members == big).sum(), (members == K).sum()) > 0
    _round_trip(split, corpus, tmp_path)


def test_merge_and_split_check_their_arguments(tiny_encoder_dir, corpus):
    model = _model("sccl", tiny_encoder_dir, corpus)
    for groups, match in (([[1]], "at least two"), ([[1, 9]], "cluster id in 0..4"), ([[1, 2], [2, 3]], "two of")):
        with pytest.raises(ValueError, match=match):
            merge_clusters(model, groups)
    with pytest.raises(ValueError, match="leaves one cluster"):
        merge_clusters(model, [[0, 1, 2, 3, 4]])
    with pytest.raises(ValueError, match="`texts` is required"):
        split_cluster(model, 0)
    with pytest.raises(ValueError, match="`n` must"):
        split_cluster(model, 0, n=1, texts=corpus)
    with pytest.raises(ValueError, match="needs at least"):
        split_cluster(model, 0, n=2, texts=corpus[:3])


def test_names_follow_the_edits(tiny_encoder_dir, corpus):
    model = _model("sccl", tiny_encoder_dir, corpus)
    assert merge_clusters(model, [[1, 3]]).config.id2label == {i: f"cluster_{i}" for i in range(K - 1)}
    model.config.id2label = {i: name for i, name in enumerate("abcde")}
    merged = merge_clusters(model, [[1, 3]])
    assert merged.config.id2label == {0: "a", 1: "b + d", 2: "c", 3: "e"}
    assert merged.config.label2id["b + d"] == 1


@pytest.mark.parametrize("method,refined", CASES)
def test_update_moves_centres_and_accepts_an_emerging_group(method, refined, tiny_encoder_dir, corpus, tmp_path):
    model = _model(method, tiny_encoder_dir, corpus, refined)
    start_online(model, corpus)
    result = update(model, corpus[:60])
    assert result.clusters.shape == (60,) and not result.accepted
    assert result.moved.shape == (K,) and np.isfinite(result.moved).all()
    # texts unlike anything the model saw: one word repeated, far from every centre
    new = [" ".join(["zzz"] * (3 + i % 4)) + " q" * (i % 3) for i in range(30)]
    batch = corpus[:30] + new
    result = update(model, batch, accept_new=True, min_new_size=10)
    assert result.far[30:].mean() > 0.5
    assert result.proposed is not None and np.isin(result.proposed, np.arange(30, 60)).mean() >= 0.9
    assert result.accepted and result.new_cluster == K and model.config.num_clusters == K + 1
    assert (model.predict([batch[i] for i in result.proposed]) == K).mean() >= 0.8
    # the seed found among the far texts grew by k-means steps: a few old texts nearer to its centre may join it
    assert (model.predict(corpus[:30]) == K).mean() <= 0.2
    _round_trip(model, corpus + new, tmp_path)


def _blobs(rng, centres, n, spread):
    points = np.concatenate([c + spread * rng.standard_normal((n, c.size)) for c in centres])
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def test_a_seed_grows_to_the_texts_nearer_to_it_than_to_every_existing_centre():
    from hf_textcluster.editing.rows import grown_group

    rng = np.random.default_rng(0)
    axes = np.eye(8)
    old = axes[:3]
    unit = _blobs(rng, [axes[0], axes[1], axes[2], axes[5]], 40, 0.2)  # rows 120..159: the new group
    grown = grown_group(unit, np.arange(120, 130), old)
    nearest_old = (1 - unit @ old.T).min(axis=1)
    centre = unit[grown].mean(axis=0) / np.linalg.norm(unit[grown].mean(axis=0))
    assert set(grown) == set(np.flatnonzero(1 - unit @ centre < nearest_old))
    assert set(grown) == set(range(120, 160))


def test_a_proposed_group_must_stand_apart_as_far_as_the_existing_clusters_do():
    from hf_textcluster.editing.rows import is_distinct

    rng = np.random.default_rng(0)
    axes = np.eye(8)
    old = axes[:3] + 0.8 * axes[7]  # three clusters 0.61 apart (cosine distance)
    old /= np.linalg.norm(old, axis=1, keepdims=True)
    far_group = _blobs(rng, [axes[5]], 30, 0.1)
    fringe = _blobs(rng, [old[0] + 0.3 * old[1]], 30, 0.1)  # the edge of cluster 0: nearer than the clusters are apart
    assert is_distinct(far_group, np.arange(30), old)
    assert not is_distinct(fringe, np.arange(30), old)
    assert is_distinct(fringe, np.arange(30), old[:1])  # one cluster: nothing to compare against


def test_least_typical_flags_a_share_of_each_cluster(tiny_encoder_dir, corpus):
    model = _model("sccl", tiny_encoder_dir, corpus)
    out = least_typical(model, corpus, fraction=0.1)
    assert set(out) == {"cluster", "distance", "typicality", "least_typical"}
    for k in np.unique(out["cluster"]):
        rows = out["cluster"] == k
        assert out["least_typical"][rows].sum() == int(np.ceil(0.1 * rows.sum()))
        flagged, kept = out["distance"][rows & out["least_typical"]], out["distance"][rows & ~out["least_typical"]]
        assert kept.size == 0 or flagged.min() >= kept.max()
    assert ((out["typicality"] >= 0) & (out["typicality"] <= 1)).all()
    with pytest.raises(ValueError, match="`fraction`"):
        least_typical(model, corpus, fraction=5)


def test_an_edited_model_runs_as_remote_code(tiny_encoder_dir, corpus, tmp_path):
    """An edited model ships like any other: the remote class (which holds no editing code) loads it and predicts as
    the package does, and the package's edits act on the remote class' model as on its own."""
    import json

    from transformers.dynamic_module_utils import get_class_from_dynamic_module

    merged = merge_clusters(_model("sccl", tiny_encoder_dir, corpus), [[0, 1]], texts=corpus)
    save_pretrained(merged, tmp_path, remote_code=True)
    config = json.loads((tmp_path / "config.json").read_text())
    remote_class = get_class_from_dynamic_module(config["auto_map"]["AutoModel"], str(tmp_path))
    assert remote_class.__module__.startswith("transformers_modules.")
    assert not hasattr(remote_class, "merge_clusters")
    remote = remote_class.from_pretrained(tmp_path)
    np.testing.assert_array_equal(remote.predict(corpus), merged.predict(corpus))
    again, package_again = merge_clusters(remote, [[0, 1]]), merge_clusters(merged, [[0, 1]])
    np.testing.assert_array_equal(again.predict(corpus), package_again.predict(corpus))


def test_the_online_rule_is_a_running_mean_with_counts(tiny_encoder_dir, corpus):
    """A centroid moves to the running mean of its texts; a linear row's logits change by the nearest-mean term
    s(|x - μ|² - |x - μ'|²) of the same move."""
    from hf_textcluster.editing.rows import OnlineCentres, head_inputs

    model = _model("sccl", tiny_encoder_dir, corpus, refined=True)
    embeddings = torch.from_numpy(model.embed(corpus))
    probs, inputs = head_inputs(model, embeddings)
    state = OnlineCentres.start(model, inputs, probs.argmax(-1))
    counts = state.counts.clone()
    centroids = model.cluster_head.centroids.detach().clone()
    linear_means = state.means["refined_head"].clone()
    x = torch.nn.functional.normalize(torch.randn(7, linear_means.shape[1]), dim=-1)
    logits_before = model.refined_head(x).detach()
    batch_probs, batch_inputs = head_inputs(model, embeddings[:50])
    labels = batch_probs.argmax(-1)
    state.update(model, batch_inputs, labels)
    for k in range(K):
        rows = labels == k
        m = int(rows.sum())
        if m == 0:
            torch.testing.assert_close(model.cluster_head.centroids[k].detach(), centroids[k])
            continue
        rate = m / (float(counts[k]) + m)
        expected = centroids[k] + rate * (batch_inputs["cluster_head"][rows].mean(0) - centroids[k])
        torch.testing.assert_close(model.cluster_head.centroids[k].detach(), expected, atol=1e-5, rtol=1e-5)
    assert torch.equal(state.counts, counts + torch.bincount(labels, minlength=K).double())
    new_means, scale = state.means["refined_head"], state.scales["refined_head"]
    term = scale * (torch.cdist(x, linear_means) ** 2 - torch.cdist(x, new_means) ** 2)
    torch.testing.assert_close(model.refined_head(x).detach() - logits_before, term, atol=1e-3, rtol=1e-3)
