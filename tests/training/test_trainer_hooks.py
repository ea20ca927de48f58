"""The two private Trainer methods ClusteringTrainer overrides, for want of a public hook at that point of the loop:
if transformers renames them or stops calling them, these tests fail (the overrides would otherwise go silently
unused: a finished run started again would train one more step, and the training modules would go unclipped)."""

from __future__ import annotations

import inspect

from transformers import Trainer

from hf_textcluster.training.trainer import ClusteringTrainer


def test_the_trainer_loop_still_runs_each_epoch_through_run_epoch():
    assert callable(getattr(Trainer, "_run_epoch", None)), "transformers.Trainer._run_epoch is gone"
    assert "self._run_epoch(" in inspect.getsource(Trainer._inner_training_loop)
    assert ClusteringTrainer._run_epoch is not Trainer._run_epoch


def test_the_trainer_still_clips_gradients_through_clip_grad_norm_of_the_model():
    assert callable(getattr(Trainer, "_clip_grad_norm", None)), "transformers.Trainer._clip_grad_norm is gone"
    assert list(inspect.signature(Trainer._clip_grad_norm).parameters) == ["self", "model"]
    assert "self._clip_grad_norm(model)" in inspect.getsource(Trainer._run_epoch)
    assert callable(getattr(Trainer, "_has_mixed_mesh_grads", None))
    assert ClusteringTrainer._clip_grad_norm is not Trainer._clip_grad_norm


def test_public_overrides_accept_every_argument_the_trainer_passes():
    for name in ("training_step", "create_optimizer", "save_model", "log", "evaluate", "train"):
        ours = inspect.signature(getattr(ClusteringTrainer, name)).parameters
        kinds = {p.kind for p in ours.values()}
        for parameter in list(inspect.signature(getattr(Trainer, name)).parameters)[1:]:
            if parameter in ("args", "kwargs"):
                continue
            accepted = parameter in ours or inspect.Parameter.VAR_KEYWORD in kinds
            assert accepted, f"ClusteringTrainer.{name} lacks {parameter!r}, which Trainer.{name} takes"
