"""Collapsed clusters are never silent: the served model is checked once training ends, for every method (AECL's
head does not exist during stage 1, and its checks during training use a head mode other than the served one),
and a resumed run keeps its health checks."""

from __future__ import annotations

import logging

import pytest
import torch
from transformers import TrainerCallback

from hf_textcluster import train_clusterer
from hf_textcluster.data import load_texts

TRAIN = dict(per_device_train_batch_size=16, bf16=False, disable_tqdm=True, report_to="none", serve="head")
AECL = {
    "stage1_fraction": 0.4,
    "stage2_fraction": 0.3,
    "projection_dim": 8,
    "attention_ff_dim": 16,
    "reference_size": 20,
}


class _CollapseAtTheEnd(TrainerCallback):
    """What a small budget can leave: a head that puts every text in cluster 0 (after the last periodic check)."""

    def __init__(self, model):
        self.model = model

    def on_train_end(self, args, state, control, **kwargs):
        with torch.no_grad():
            last = [m for m in self.model.cluster_head.modules() if isinstance(m, torch.nn.Linear)][-1]
            last.weight.zero_()
            last.bias.fill_(-10.0)
            last.bias[0] = 10.0


def _run(tiny_encoder_dir, corpus, output_dir, monkeypatch=None, collapse=False, **training):
    from hf_textcluster.models.aecl.trainer_aecl import AECLTrainer

    if collapse:
        original = AECLTrainer.__init__

        def init(self, *args, **kwargs):
            original(self, *args, **kwargs)
            self.add_callback(_CollapseAtTheEnd(self.model))

        monkeypatch.setattr(AECLTrainer, "__init__", init)
    torch.manual_seed(0)
    return train_clusterer(
        "aecl",
        load_texts(*corpus),
        str(output_dir),
        encoder=str(tiny_encoder_dir),
        config_overrides=AECL,
        training_overrides={**TRAIN, **training},
        evaluate=False,
        keep_checkpoints=True,  # the tests stand a finished run's checkpoints for an interrupted run's
    )


def test_a_collapsed_aecl_model_is_announced(tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch, caplog):
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        result = _run(tiny_encoder_dir, toy_corpus, tmp_path / "collapsed", monkeypatch, collapse=True, max_steps=5)
    assert set(result.model.predict(toy_corpus[0]).tolist()) == {0}
    warned = [r.getMessage() for r in caplog.records if "collapsed" in r.getMessage()]
    assert len(warned) == 1 and "100% of 120 training texts" in warned[0] and "uses 1 of its 3 clusters" in warned[0]
    assert result.trainer.final_health == {"clusters_used": 1, "largest_share": 1.0}


def test_a_small_budget_aecl_collapse_is_announced(tiny_encoder_dir, toy_corpus, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        result = _run(tiny_encoder_dir, toy_corpus, tmp_path / "small", max_steps=5)
    counts = torch.bincount(torch.as_tensor(result.model.predict(toy_corpus[0])), minlength=3)
    assert counts.max() >= 0.9 * 120  # the served model: (nearly) every text in one cluster
    assert len([r for r in caplog.records if "collapsed" in r.getMessage()]) == 1


def test_a_healthy_model_is_not_flagged(tiny_encoder_dir, toy_corpus, tmp_path, caplog):
    torch.manual_seed(0)
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        result = train_clusterer(
            "sccl",
            load_texts(*toy_corpus),
            str(tmp_path / "sccl"),
            encoder=str(tiny_encoder_dir),
            training_overrides={**TRAIN, "max_steps": 4},
            evaluate=False,
        )
    assert not [r for r in caplog.records if "collapsed" in r.getMessage()]
    assert result.trainer.final_health["clusters_used"] == 3


def test_health_checks_go_on_after_a_resume(tiny_encoder_dir, toy_corpus, tmp_path):
    import shutil

    steps = dict(max_steps=8, save_strategy="steps", save_steps=4, health_check_steps=2)
    straight = _run(tiny_encoder_dir, toy_corpus, tmp_path / "run", **steps)
    checked = [entry["step"] for entry in straight.trainer.health_history]
    for name in ("checkpoint-8",):
        shutil.rmtree(tmp_path / "run" / name)
    (tmp_path / "run" / "model.safetensors").unlink()  # as if killed after checkpoint-4
    resumed = _run(tiny_encoder_dir, toy_corpus, tmp_path / "run", **steps)
    assert [entry["step"] for entry in resumed.trainer.health_history] == [s for s in checked if s > 4]
    assert checked and max(checked) == 8
    for a, b in zip(straight.trainer.health_history[-2:], resumed.trainer.health_history[-2:]):
        assert a["agreement"] == pytest.approx(b["agreement"], abs=1e-6)
