"""SCCLTrainer: the joint loss against a direct re-computation, two learning rates, k-means initialisation,
evaluation, and resuming an interrupted run."""

import numpy as np
import pytest
import torch
from datasets import Dataset
from transformers import TrainerCallback

from hf_textcluster import ClusteringTrainingArguments, SCCLModel, SCCLTrainer
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.models.sccl.losses_sccl import instance_contrastive_loss
from hf_textcluster.training.losses import dec_kl_loss, dec_target_distribution


def _args(tmp_path, **kwargs):
    defaults = dict(
        output_dir=str(tmp_path / "run"),
        per_device_train_batch_size=16,
        learning_rate=1e-4,
        report_to="none",
        disable_tqdm=True,
        use_cpu=True,
        save_strategy="no",
        max_steps=3,
        seed=0,
    )
    defaults.update(kwargs)
    return ClusteringTrainingArguments(**defaults)


def _model(tiny_encoder_dir, **kwargs):
    torch.manual_seed(0)
    return from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3, **kwargs)


def test_compute_loss_is_eq7(tiny_encoder_dir, views_dataset, tmp_path):
    model = _model(tiny_encoder_dir, eta=3.0, temperature=0.7, cluster_loss_weight=0.5)
    trainer = SCCLTrainer(model=model, args=_args(tmp_path), train_dataset=views_dataset)
    initialize_clusters(model, views_dataset["text"])
    batch = trainer.data_collator([views_dataset[i] for i in range(8)])
    model.eval()  # no dropout, so the direct computation sees the same embeddings
    loss = trainer.compute_loss(model, batch)

    def embed(prefix):
        return model.encode(
            batch[f"{prefix}input_ids"], batch[f"{prefix}attention_mask"], batch.get(f"{prefix}token_type_ids")
        )

    z1, z2 = model.contrast_head(embed("aug1_")), model.contrast_head(embed("aug2_"))
    q = model.cluster_head(embed(""))
    expected = 3.0 * instance_contrastive_loss(z1, z2, 0.7) + 0.5 * dec_kl_loss(dec_target_distribution(q), q)
    torch.testing.assert_close(loss, expected, rtol=1e-4, atol=1e-5)


def test_two_learning_rates(tiny_encoder_dir, views_dataset, tmp_path):
    model = _model(tiny_encoder_dir)
    trainer = SCCLTrainer(model=model, args=_args(tmp_path, learning_rate=2e-5), train_dataset=views_dataset)
    optimizer = trainer.create_optimizer()
    encoder_group, head_group = optimizer.param_groups
    assert encoder_group["lr"] == pytest.approx(2e-5) and head_group["lr"] == pytest.approx(2e-3)
    head_ids = {id(p) for p in head_group["params"]}
    assert id(model.cluster_head.centroids) in head_ids and id(model.contrast_head.dense.weight) in head_ids
    assert len(encoder_group["params"]) == len(list(model.encoder.parameters()))
    trainer = SCCLTrainer(model=model, args=_args(tmp_path, head_learning_rate=7e-4), train_dataset=views_dataset)
    assert trainer.create_optimizer().param_groups[1]["lr"] == pytest.approx(7e-4)


def test_train_initialises_centroids_with_kmeans_then_learns(tiny_encoder_dir, views_dataset, tmp_path):
    from sklearn.cluster import KMeans

    model = _model(tiny_encoder_dir)
    expected = KMeans(3, n_init=10, random_state=0).fit(model.embed(views_dataset["text"])).cluster_centers_
    trainer = SCCLTrainer(model=model, args=_args(tmp_path, max_steps=0), train_dataset=views_dataset)
    trainer.train()
    assert model.config.centroids_initialized
    np.testing.assert_allclose(model.cluster_head.centroids.detach().numpy(), expected, rtol=1e-4, atol=1e-5)
    before = model.cluster_head.centroids.detach().clone()
    encoder_before = model.encoder.embeddings.word_embeddings.weight.detach().clone()
    SCCLTrainer(model=model, args=_args(tmp_path, max_steps=3), train_dataset=views_dataset).train()
    assert not torch.equal(before, model.cluster_head.centroids.detach())
    assert not torch.equal(encoder_before, model.encoder.embeddings.word_embeddings.weight.detach())


def test_evaluate_reports_head_and_kmeans_metrics(tiny_encoder_dir, views_dataset, tmp_path):
    model = _model(tiny_encoder_dir)
    trainer = SCCLTrainer(model=model, args=_args(tmp_path), train_dataset=views_dataset, eval_dataset=views_dataset)
    trainer.train()
    metrics = trainer.evaluate()
    for key in ("eval_acc", "eval_nmi", "eval_ari", "eval_kmeans_acc", "eval_kmeans_nmi", "eval_clusters_used"):
        assert key in metrics
    assert 0.0 <= metrics["eval_acc"] <= 1.0


def test_loss_terms_are_logged(tiny_encoder_dir, views_dataset, tmp_path):
    model = _model(tiny_encoder_dir)
    trainer = SCCLTrainer(model=model, args=_args(tmp_path, logging_steps=1), train_dataset=views_dataset)
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert logged and all("loss_instance_cl" in e and "loss_cluster_kl" in e for e in logged)


def test_trainer_rejects_missing_views_and_dropped_columns(tiny_encoder_dir, toy_corpus, tmp_path):
    model = _model(tiny_encoder_dir)
    plain = Dataset.from_dict({"text": toy_corpus[0]})
    with pytest.raises(ValueError, match="text_aug1"):
        SCCLTrainer(model=model, args=_args(tmp_path), train_dataset=plain)
    with pytest.raises(ValueError, match="remove_unused_columns"):
        SCCLTrainer(model=model, args=_args(tmp_path, remove_unused_columns=True), train_dataset=plain)


class _StepRecorder(TrainerCallback):
    def __init__(self):
        self.steps = []

    def on_step_end(self, args, state, control, **kwargs):
        self.steps.append(state.global_step)


class _Interrupt(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 3:
            raise KeyboardInterrupt


def test_bf16_flag_really_runs_the_loss_under_autocast(tiny_encoder_dir, views_dataset, tmp_path):
    # Accelerate only autocasts model.forward; the SCCL loss calls encode() and the heads directly.
    model = _model(tiny_encoder_dir)
    dtypes = []
    # a Linear layer inside the encoder (LayerNorm outputs stay fp32 under autocast)
    model.encoder.encoder.layer[0].intermediate.dense.register_forward_hook(
        lambda module, args, output: dtypes.append(output.dtype)
    )
    SCCLTrainer(model=model, args=_args(tmp_path, bf16=True, max_steps=1), train_dataset=views_dataset).train()
    assert dtypes[-1] == torch.bfloat16
    dtypes.clear()
    model.config.centroids_initialized = True
    SCCLTrainer(model=model, args=_args(tmp_path, bf16=False, max_steps=1), train_dataset=views_dataset).train()
    assert dtypes[-1] == torch.float32
