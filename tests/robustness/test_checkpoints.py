"""Nothing trained is lost to a crash: a checkpoint counts as complete only when everything a resumed run needs is in
it, a checkpoint cut off while saving falls back to the previous complete one (with a warning naming both), and a
finished run started again is not trained further. Each case: the interrupted command run again equals the
uninterrupted run."""

from __future__ import annotations

import logging
import os

import pytest
import torch
from transformers.trainer_callback import TrainerState

from hf_textcluster import train_clusterer
from hf_textcluster.data import load_texts
from hf_textcluster.training.checkpoints import CHECKPOINT_MANIFEST, TRAINING_MODULES_FILE, last_complete_checkpoint
from hf_textcluster.training.trainer import ClusteringTrainer

pytestmark = pytest.mark.slow  # two or three training runs per case

TRAIN = dict(
    per_device_train_batch_size=16, bf16=False, logging_steps=1, disable_tqdm=True, report_to="none", serve="head"
)


class _Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs (not even `finally` blocks that catch Exception)."""


def _run(method, encoder, corpus, output_dir, config=None, **training):
    torch.manual_seed(0)
    texts, labels = corpus
    return train_clusterer(
        method,
        load_texts(texts, labels),
        str(output_dir),
        encoder=str(encoder),
        config_overrides=config,
        training_overrides={**TRAIN, **training},
        evaluate=False,
        keep_checkpoints=True,  # the tests stand a finished run's checkpoints for an interrupted run's
    )


def _assert_same_weights(a, b):
    # fp32 resume is exact up to float rounding (the calibration's quantiles move by ~1e-6 on values ~0.05)
    for name, tensor in a.state_dict().items():
        torch.testing.assert_close(b.state_dict()[name], tensor, rtol=1e-5, atol=1e-5, msg=name)


def _kill_after_trainer_state(monkeypatch, checkpoint: str):
    """SIGKILL right after ``<checkpoint>/trainer_state.json`` is written (the moment a checkpoint looks complete)."""
    original = TrainerState.save_to_json

    def save_then_die(self, json_path):
        original(self, json_path)
        if os.path.basename(os.path.dirname(json_path)) == checkpoint:
            raise _Killed

    monkeypatch.setattr(TrainerState, "save_to_json", save_then_die)
    return lambda: monkeypatch.setattr(TrainerState, "save_to_json", original)


CLUSTERBERT = {"stage1_fraction": 0.2, "stage2_fraction": 0.4}  # 10 steps: stage 3 from step 6
AECL = {
    "stage1_fraction": 0.2,
    "stage2_fraction": 0.4,
    "projection_dim": 8,
    "attention_ff_dim": 16,
    "reference_size": 20,
}


@pytest.mark.parametrize("method,config", [("clusterbert", CLUSTERBERT), ("aecl", AECL)])
def test_killed_right_after_trainer_state_resumes_exactly(
    method, config, tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch
):
    # ClusterBERT's decoder weights and AECL's stage-2 pseudo-labels are written with the checkpoint, not after it
    steps = dict(max_steps=10, save_strategy="steps", save_steps=4)
    straight = _run(method, tiny_encoder_dir, toy_corpus, tmp_path / "straight", config, **steps)
    restore = _kill_after_trainer_state(monkeypatch, "checkpoint-4")
    with pytest.raises(_Killed):
        _run(method, tiny_encoder_dir, toy_corpus, tmp_path / "killed", config, **steps)
    restore()
    checkpoint = tmp_path / "killed" / "checkpoint-4"
    assert (checkpoint / CHECKPOINT_MANIFEST).is_file()
    if method == "clusterbert":
        assert (checkpoint / TRAINING_MODULES_FILE).is_file()
    else:
        assert (checkpoint / "hf_textcluster_aecl_pseudo_labels.npy").is_file()  # step 4 is in stage 2
    resumed = _run(method, tiny_encoder_dir, toy_corpus, tmp_path / "killed", config, **steps)
    assert resumed.trainer.state.global_step == 10
    _assert_same_weights(straight.model, resumed.model)


def test_a_checkpoint_cut_off_falls_back_to_the_previous_one(
    tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch, caplog
):
    steps = dict(max_steps=10, save_strategy="steps", save_steps=4)
    straight = _run("clusterbert", tiny_encoder_dir, toy_corpus, tmp_path / "straight", CLUSTERBERT, **steps)
    restore = _kill_after_trainer_state(monkeypatch, "checkpoint-8")
    with pytest.raises(_Killed):
        _run("clusterbert", tiny_encoder_dir, toy_corpus, tmp_path / "killed", CLUSTERBERT, **steps)
    restore()
    broken = tmp_path / "killed" / "checkpoint-8"
    (broken / TRAINING_MODULES_FILE).unlink()  # what a crash before the method's files leaves
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        assert last_complete_checkpoint(str(tmp_path / "killed")).endswith("checkpoint-4")
    message = " ".join(r.getMessage() for r in caplog.records)
    assert str(broken) in message and TRAINING_MODULES_FILE in message and "checkpoint-4" in message
    resumed = _run("clusterbert", tiny_encoder_dir, toy_corpus, tmp_path / "killed", CLUSTERBERT, **steps)
    assert resumed.trainer.state.global_step == 10
    _assert_same_weights(straight.model, resumed.model)


def test_a_truncated_trainer_state_is_skipped(tiny_encoder_dir, toy_corpus, tmp_path):
    _run("sccl", tiny_encoder_dir, toy_corpus, tmp_path / "run", max_steps=4, save_strategy="steps", save_steps=2)
    state = tmp_path / "run" / "checkpoint-4" / "trainer_state.json"
    state.write_text(state.read_text()[:40])
    assert last_complete_checkpoint(str(tmp_path / "run")).endswith("checkpoint-2")


def _count_steps(monkeypatch):
    calls = []
    original = ClusteringTrainer.training_step

    def counted(self, *args, **kwargs):
        calls.append(self.state.global_step)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ClusteringTrainer, "training_step", counted)
    return calls


def test_a_finished_run_started_again_is_not_trained_further(tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch):
    steps = dict(max_steps=5, save_strategy="steps", save_steps=5)  # the last checkpoint is the last step
    first = _run("sccl", tiny_encoder_dir, toy_corpus, tmp_path / "run", **steps)
    weights = {k: v.clone() for k, v in first.model.state_dict().items()}
    calls = _count_steps(monkeypatch)
    again = _run("sccl", tiny_encoder_dir, toy_corpus, tmp_path / "run", **steps)
    assert calls == [] and again.trainer.state.global_step == 5
    for name, tensor in weights.items():
        torch.testing.assert_close(again.model.state_dict()[name], tensor, msg=name)


def test_killed_during_the_final_calibration_resumes_without_training(
    tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch
):
    steps = dict(max_steps=5, save_strategy="steps", save_steps=2)  # checkpoints at 2 and 4: 5 is the last step
    straight = _run("sccl", tiny_encoder_dir, toy_corpus, tmp_path / "straight", **steps)

    def die(self, *args, **kwargs):
        raise _Killed

    original = ClusteringTrainer.calibrate_model
    monkeypatch.setattr(ClusteringTrainer, "calibrate_model", die)
    with pytest.raises(_Killed):
        _run("sccl", tiny_encoder_dir, toy_corpus, tmp_path / "killed", **steps)
    monkeypatch.setattr(ClusteringTrainer, "calibrate_model", original)
    assert last_complete_checkpoint(str(tmp_path / "killed")).endswith("checkpoint-5")
    calls = _count_steps(monkeypatch)
    resumed = _run("sccl", tiny_encoder_dir, toy_corpus, tmp_path / "killed", **steps)
    assert calls == [] and resumed.trainer.state.global_step == 5
    _assert_same_weights(straight.model, resumed.model)
    torch.testing.assert_close(resumed.model.calibration.state_dict(), straight.model.calibration.state_dict())
