"""The label-free cluster checks during training: a collapse is announced, early stopping on stable assignments."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from hf_textcluster import SCCLTrainer, train_clusterer
from hf_textcluster.data import load_texts
from hf_textcluster.training.arguments import ClusteringTrainingArguments
from hf_textcluster.training.callbacks import cluster_health


def test_cluster_health_values():
    health = cluster_health(np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0]), num_clusters=4)
    assert health["agreement"] == pytest.approx(1.0)  # the same partition, renamed
    assert health["size_entropy"] == pytest.approx(math.log(2) / math.log(4)) and health["clusters_used"] == 2
    one = cluster_health(np.zeros(6, dtype=int), np.array([0, 1, 2, 0, 1, 2]), num_clusters=3)
    assert one["size_entropy"] == 0.0 and one["clusters_used"] == 1 and one["agreement"] == pytest.approx(0.0)


def _train(tiny_encoder_dir, toy_corpus, tmp_path, **training):
    texts, labels = toy_corpus
    return train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(tmp_path),
        encoder=str(tiny_encoder_dir),
        augmentation="word_deletion",
        training_overrides={
            "per_device_train_batch_size": 16,
            "bf16": False,
            "save_strategy": "no",
            "logging_steps": 1,
            "disable_tqdm": True,
            "max_steps": 10,
            "health_check_steps": 2,
            **training,
        },
        evaluate=False,
    )


def test_a_collapsing_head_is_announced(tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(SCCLTrainer, "head_predictions", lambda self, texts: np.zeros(len(texts), dtype=int))
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        result = _train(tiny_encoder_dir, toy_corpus, tmp_path)
    warnings = [r.getMessage() for r in caplog.records if "collapsing" in r.getMessage()]
    assert len(warnings) == 1 and "uses 1 of 3 clusters" in warnings[0]  # once, not at every check
    history = result.trainer.health_history
    assert [h["step"] for h in history] == [2, 4, 6, 8, 10] and history[0]["clusters_used"] == 1
    logged = [e for e in result.trainer.state.log_history if "health_clusters_used" in e]
    assert logged and all(e["health_clusters_used"] == 1 for e in logged)


def test_a_healthy_run_is_quiet_and_early_stopping_is_off_by_default(tiny_encoder_dir, toy_corpus, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        result = _train(tiny_encoder_dir, toy_corpus, tmp_path)
    assert result.trainer.state.global_step == 10
    assert not [r for r in caplog.records if "collapsing" in r.getMessage()]
    assert min(h["agreement"] for h in result.trainer.health_history) > 0.3


def test_early_stopping_when_assignments_stop_changing(tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch, caplog):
    fixed = np.arange(1000) % 3
    monkeypatch.setattr(SCCLTrainer, "head_predictions", lambda self, texts: fixed[: len(texts)])
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        result = _train(tiny_encoder_dir, toy_corpus, tmp_path, early_stopping_tol=0.001)
    assert result.trainer.state.global_step == 4  # the second check sees 0% changed
    assert any("Early stopping at step 4" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "field,value", [("health_check_steps", -1), ("health_sample_size", 1), ("early_stopping_tol", 1.5)]
)
def test_bad_health_arguments(field, value, tmp_path):
    with pytest.raises(ValueError, match=field):
        ClusteringTrainingArguments(output_dir=str(tmp_path), **{field: value})
