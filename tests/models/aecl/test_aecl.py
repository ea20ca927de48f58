"""AECL: each loss term against a direct re-computation (Eq. 5-13), the three stages and their pseudo-labels, resume
inside stage 2, and serving that does not depend on the other texts of a call."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from transformers import TrainerCallback

from hf_textcluster import AECLConfig, AECLModel, AECLTrainer, ClusteringTrainingArguments
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.models.aecl.losses_aecl import (
    cluster_contrastive_loss,
    marginal_entropy,
    pseudo_label_loss,
    row_entropy,
    similarity_guided_contrastive_loss,
)
from hf_textcluster.models.aecl.trainer_aecl import set_reference_texts
from hf_textcluster.models.building import from_encoder_pretrained


def _cos(a, b):
    return float(torch.dot(a, b) / (a.norm() * b.norm()))


def _fraction(anchor, own, other, i, tau, numerator):
    """numerator / Σ_{k≠i} [exp(sim(anchor_i, own_k)/τ) + exp(sim(anchor_i, other_k)/τ)]."""
    denominator = sum(
        math.exp(_cos(anchor[i], own[k]) / tau) + math.exp(_cos(anchor[i], other[k]) / tau)
        for k in range(len(anchor))
        if k != i
    )
    return numerator / denominator


# ----- the losses, by their equations
# ----------------------------------------------------------------------------------
def test_similarity_guided_contrastive_loss_is_eq_6_to_9():
    torch.manual_seed(0)
    n, tau = 5, 0.5
    z0, z1, h0, h1 = (torch.randn(n, 4) for _ in range(4))
    s0, s1 = torch.softmax(torch.randn(n, n), -1), torch.softmax(torch.randn(n, n), -1)
    clusters = torch.tensor([0, 1, 0, 2, 1])
    total = 0.0
    for i in range(n):
        l1 = (
            _fraction(z0, z0, z1, i, tau, math.exp(_cos(z0[i], z1[i]) / tau))  # Eq. 6
            + _fraction(z1, z1, z0, i, tau, math.exp(_cos(z1[i], z0[i]) / tau))
        )
        for z, h, s in ((z0, h0, s0), (z1, h1, s1)):
            same = [j for j in range(n) if clusters[j] == clusters[i]]  # Λ_i
            l2 = _fraction(
                z, z, h, i, tau, sum(float(s[i, j]) * math.exp(_cos(z[i], h[j]) / tau) for j in same)
            ) + _fraction(h, h, z, i, tau, sum(float(s[i, j]) * math.exp(_cos(h[i], z[j]) / tau) for j in same))
            total += -math.log(l1 + l2)  # Eq. 9
    loss = similarity_guided_contrastive_loss(z0, z1, h0, h1, s0, s1, clusters, temperature=tau)
    assert loss.item() == pytest.approx(total / (2 * n), rel=1e-5)
    no_ic = sum(
        -math.log(
            _fraction(z0, z0, z1, i, tau, math.exp(_cos(z0[i], z1[i]) / tau))
            + _fraction(z1, z1, z0, i, tau, math.exp(_cos(z1[i], z0[i]) / tau))
        )
        for i in range(n)
    )
    loss = similarity_guided_contrastive_loss(z0, z1, h0, h1, s0, s1, clusters, tau, similarity_guided=False)
    assert loss.item() == pytest.approx(no_ic / n, rel=1e-5)  # "No IC": Eq. 6 alone


def test_similarity_guided_loss_has_finite_gradients_with_zero_weights():
    z0, z1, h0, h1 = (torch.randn(4, 3, requires_grad=True) for _ in range(4))
    s = torch.softmax(torch.randn(4, 4, requires_grad=True), -1)
    loss = similarity_guided_contrastive_loss(z0, z1, h0, h1, s, s, torch.tensor([0, 1, 2, 3]))  # Λ_i = {i}
    loss.backward()
    assert all(torch.isfinite(t.grad).all() for t in (z0, z1, h0, h1))


def test_cluster_contrastive_loss_is_eq_10_and_11():
    torch.manual_seed(1)
    p0, p1 = torch.softmax(torch.randn(6, 3), -1), torch.softmax(torch.randn(6, 3), -1)
    c0, c1, tau, m = p0.T, p1.T, 1.0, 3
    total = sum(
        -math.log(_fraction(c0, c0, c1, i, tau, math.exp(_cos(c0[i], c1[i]) / tau)))
        - math.log(_fraction(c1, c1, c0, i, tau, math.exp(_cos(c1[i], c0[i]) / tau)))
        for i in range(m)
    )
    assert cluster_contrastive_loss(p0, p1, tau).item() == pytest.approx(total / (2 * m), rel=1e-5)


def test_pseudo_label_and_entropy_losses_are_eq_12_5_13():
    p = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]])
    labels = torch.tensor([0, -1, 2])  # the second text has no confident pseudo-label
    assert pseudo_label_loss(p.log(), labels).item() == pytest.approx(-(math.log(0.7) + math.log(0.4)) / 3, rel=1e-6)
    entropies = [-sum(x * math.log(x) for x in row) for row in p.tolist()]
    assert row_entropy(p).item() == pytest.approx(sum(entropies) / 3, rel=1e-6)
    p1 = torch.tensor([[0.5, 0.25, 0.25], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]])
    q0, q1 = p.mean(0).tolist(), p1.mean(0).tolist()
    expected = -0.5 * (sum(x * math.log(x) for x in q0) + sum(x * math.log(x) for x in q1))
    assert marginal_entropy(p, p1).item() == pytest.approx(expected, rel=1e-6)


# ----- the trainer: stages, pseudo-labels, resume ---------------------------------------------------------------------
def _aecl_trainer(tiny_encoder_dir, dataset, output_dir, max_steps=6, **config):
    torch.manual_seed(0)
    model = from_encoder_pretrained(
        AECLModel,
        str(tiny_encoder_dir),
        num_clusters=3,
        projection_dim=8,
        attention_ff_dim=16,
        reference_size=20,
        **config,
    )
    args = ClusteringTrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=16,
        max_steps=max_steps,
        report_to="none",
        disable_tqdm=True,
        use_cpu=True,
        save_strategy="no",
        bf16=False,
        logging_steps=1,
    )
    return AECLTrainer(model=model, args=args, train_dataset=dataset)


def test_three_stages_log_their_loss_terms(tiny_encoder_dir, views_dataset, tmp_path):
    trainer = _aecl_trainer(
        tiny_encoder_dir, views_dataset, tmp_path / "run", stage1_fraction=1 / 3, stage2_fraction=1 / 3
    )
    assert trainer.model.config.centroids_initialized is False
    trainer.train()
    assert trainer.stage_bounds() == (2, 4)
    terms = [{k for k in entry if k.startswith("loss_")} for entry in trainer.state.log_history if "loss" in entry]
    assert terms[0] == terms[1] == {"loss_similarity_guided_cl"}
    assert terms[2] == terms[3] == {"loss_similarity_guided_cl", "loss_pseudo_label"}
    assert terms[4] == {
        "loss_similarity_guided_cl",
        "loss_pseudo_label",
        "loss_cluster_cl",
        "loss_row_entropy",
        "loss_marginal_entropy",
    }
    labels = trainer.targets
    assert labels.shape == (len(views_dataset),) and set(labels.tolist()) == {0, 1, 2}
    assert trainer.initial_kmeans_labels.shape == (len(views_dataset),)
    model = trainer.model
    assert model.config.centroids_initialized and model.config.num_reference_texts == 20
    assert model.reference_projections.shape == (20, 8)


def test_without_stage_1_the_initial_kmeans_labels_are_stage_2s(tiny_encoder_dir, views_dataset, tmp_path):
    trainer = _aecl_trainer(
        tiny_encoder_dir, views_dataset, tmp_path / "run", max_steps=3, stage1_fraction=0.0, stage2_fraction=0.4
    )
    trainer.train()
    assert trainer.stage_bounds() == (0, 1)
    np.testing.assert_array_equal(trainer.targets.numpy(), trainer.initial_kmeans_labels)


def test_without_stage_2_the_clustering_network_still_trains(tiny_encoder_dir, views_dataset, tmp_path):
    trainer = _aecl_trainer(
        tiny_encoder_dir, views_dataset, tmp_path / "run", max_steps=4, stage1_fraction=0.5, stage2_fraction=0.0
    )
    trainer.train()
    assert trainer.stage_bounds() == (2, 2) and trainer.targets is None
    assert trainer.model.config.centroids_initialized and trainer.model.config.num_reference_texts == 20
    assert len(trainer.model.predict(list(views_dataset["text"][:5]))) == 5


def test_stage_2_pseudo_labels_refresh_and_resume_from_a_checkpoint(tiny_encoder_dir, views_dataset, tmp_path):
    config = dict(stage1_fraction=1 / 6, stage2_fraction=1 / 2, pseudo_label_refresh_steps=2)
    straight = _aecl_trainer(tiny_encoder_dir, views_dataset, tmp_path / "straight", **config)
    refreshes = []
    original = AECLTrainer.refresh_targets

    def counting(self):
        refreshes.append(self.state.global_step)
        original(self)

    AECLTrainer.refresh_targets = counting
    try:
        straight.train()
    finally:
        AECLTrainer.refresh_targets = original
    assert straight.stage_bounds() == (1, 4) and refreshes == [1, 3]  # stage 2 start, then every 2 steps

    # interrupted after step 2 (inside stage 2, between refreshes): the labels come back from the checkpoint
    first = _aecl_trainer(tiny_encoder_dir, views_dataset, tmp_path / "resumed", **config)
    first.args.save_strategy, first.args.save_steps = "steps", 2

    class Interrupt(TrainerCallback):  # at the start of step 3: checkpoint-2 is written
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise KeyboardInterrupt

    first.add_callback(Interrupt())
    with pytest.raises(KeyboardInterrupt):
        first.train()
    assert (tmp_path / "resumed" / "checkpoint-2" / "hf_textcluster_aecl_pseudo_labels.npy").is_file()
    resumed = _aecl_trainer(tiny_encoder_dir, views_dataset, tmp_path / "resumed", **config)
    refreshes.clear()
    AECLTrainer.refresh_targets = counting
    try:
        resumed.train(resume_from_checkpoint=True)
    finally:
        AECLTrainer.refresh_targets = original
    assert resumed.state.global_step == 6 and refreshes == [3]  # not at step 2: the saved labels were used
    for name, tensor in straight.model.state_dict().items():
        torch.testing.assert_close(resumed.model.state_dict()[name], tensor, rtol=1e-5, atol=1e-6, msg=name)


# ----- serving: a text's cluster does not depend on its companions ---------------------------------------------------
def test_serving_does_not_depend_on_the_batch(tiny_encoder_dir, views_dataset, tmp_path):
    trainer = _aecl_trainer(tiny_encoder_dir, views_dataset, tmp_path / "run")
    trainer.train()
    model = trainer.model
    texts = list(views_dataset["text"][:40])
    alone = np.concatenate([model.predict_proba([t]) for t in texts[:10]])  # one text per call
    together = model.predict_proba(texts, batch_size=40)
    shuffled_order = np.random.default_rng(0).permutation(len(texts))
    shuffled = model.predict_proba([texts[i] for i in shuffled_order], batch_size=7)
    np.testing.assert_allclose(alone, together[:10], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(shuffled, together[shuffled_order], rtol=1e-5, atol=1e-6)
    with_others = model.predict_proba(texts[:3] + list(views_dataset["text"][60:90]), batch_size=64)
    np.testing.assert_allclose(with_others[:3], together[:3], rtol=1e-5, atol=1e-6)

    # the authors' behaviour, kept for comparison, does depend on the batch
    model.eval()
    z = model.cluster_features(torch.from_numpy(model.embed(texts)))
    with torch.no_grad():
        h_alone, _ = model.attend(z[:3], mode="batch")
        h_with_others, _ = model.attend(z, mode="batch")
        h_reference, _ = model.attend(z[:3], mode="reference")
        h_reference_with_others, _ = model.attend(z, mode="reference")
    assert (h_alone - h_with_others[:3]).abs().max() > 1e-4  # float noise is ~1e-7
    torch.testing.assert_close(h_reference, h_reference_with_others[:3], rtol=1e-5, atol=1e-6)
    model.config.serving_attention = "self"
    np.testing.assert_allclose(
        np.concatenate([model.predict_proba([t]) for t in texts[:5]]),
        model.predict_proba(texts[:5]),
        rtol=1e-5,
        atol=1e-6,
    )


def test_reference_serving_without_a_reference_set_is_a_clear_error(tiny_encoder_dir):
    model = from_encoder_pretrained(AECLModel, str(tiny_encoder_dir), num_clusters=3, projection_dim=8)
    model.config.centroids_initialized = True
    with pytest.raises(RuntimeError, match="no reference set"):
        model.predict_proba(["a text"])


def test_config_validation():
    for kwargs, match in [
        ({"stage1_fraction": 0.6, "stage2_fraction": 0.4}, "leave steps for stage 3"),
        ({"serving_attention": "all"}, "serving_attention"),
        ({"serving_head": "centroids"}, "serving_head"),
        ({"confidence_threshold": 0}, "confidence_threshold"),
        ({"pseudo_label_refresh_steps": 0}, "pseudo_label_refresh_steps"),
        ({"instance_temperature": 0}, "instance_temperature"),
    ]:
        with pytest.raises(ValueError, match=match):
            AECLConfig(**kwargs)
    config = AECLConfig()
    assert (config.instance_temperature, config.cluster_temperature) == (0.5, 1.0)  # the authors' code
    assert config.row_entropy_weight < 0 and config.marginal_entropy_weight < 0


def test_evaluation_scores_the_head_without_dropout(tiny_encoder_dir, toy_corpus, tmp_path):
    """A trainer leaves the model in training mode; scoring its head must not apply the clustering network's dropout."""
    from hf_textcluster.training.evaluation import evaluate_clusterer

    texts, labels = toy_corpus
    model = from_encoder_pretrained(AECLModel, str(tiny_encoder_dir), num_clusters=3, cluster_dropout=0.5)
    model.config.centroids_initialized = True
    set_reference_texts(model, texts[:20])
    model.train()
    scored = [evaluate_clusterer(model, texts, labels, kmeans=False)["acc"] for _ in range(3)]
    assert model.training  # restored
    model.eval()
    expected = evaluate_clusterer(model, texts, labels, kmeans=False)["acc"]
    assert scored == [expected] * 3


def test_training_a_reclustered_model_serves_its_network_again(tiny_encoder_dir, views_dataset, tmp_path):
    model = from_encoder_pretrained(AECLModel, str(tiny_encoder_dir), num_clusters=3, projection_dim=8)
    initialize_clusters(model, list(views_dataset["text"]))
    assert model.config.serving_head == "kmeans" and model.config.centroids_initialized
    AECLTrainer(
        model=model,
        args=ClusteringTrainingArguments(output_dir=str(tmp_path / "run"), report_to="none"),
        train_dataset=views_dataset,
    )
    assert model.config.serving_head == "network"
