"""SIGINT / SIGKILL at any moment of training, then the same command, equals the uninterrupted run: every method (the
multi-stage ones inside their last stage, DEC-MLM between its per-epoch target refreshes, DEC-CRL with its topic
decoder), in fp32 and in bf16 autocast (bf16 works on every CPU, slower without native support; the models are
tiny)."""

from __future__ import annotations

import pytest
import torch
from transformers import TrainerCallback

from hf_textcluster import train_clusterer
from hf_textcluster.data import load_texts
from hf_textcluster.training.checkpoints import training_module_parameters, training_module_state
from hf_textcluster.training.trainer import ClusteringTrainer

pytestmark = pytest.mark.slow  # three training runs per case, every method in fp32 and bf16

TRAIN = dict(
    per_device_train_batch_size=16,
    disable_tqdm=True,
    report_to="none",
    serve="head",
    max_steps=10,
    save_strategy="steps",
    save_steps=3,
)
CONFIGS = {
    "sccl": None,
    "clusterbert": {"stage1_fraction": 0.2, "stage2_fraction": 0.4},
    "aecl": {
        "stage1_fraction": 0.2,
        "stage2_fraction": 0.4,
        "projection_dim": 8,
        "attention_ff_dim": 16,
        "reference_size": 20,
    },
    "deccrl": {"latent_dim": 8, "num_topics": 2},
    "decmlm": None,
}


class _Killed(BaseException):
    pass


class _KillAt(TrainerCallback):
    def __init__(self, step):
        self.step = step

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise _Killed


def _run(method, encoder, corpus, output_dir, bf16):
    torch.manual_seed(0)
    return train_clusterer(
        method,
        load_texts(*corpus),
        str(output_dir),
        encoder=str(encoder),
        config_overrides=CONFIGS[method],
        training_overrides={**TRAIN, "bf16": bf16},
        evaluate=False,
    )


@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16"])
@pytest.mark.parametrize("method", list(CONFIGS))
def test_killed_mid_run_then_the_same_command_equals_the_uninterrupted_run(
    method, bf16, tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch
):
    straight = _run(method, tiny_encoder_dir, toy_corpus, tmp_path / "straight", bf16)
    original = ClusteringTrainer.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.add_callback(_KillAt(7))  # after checkpoint-6, inside the last stage of the multi-stage methods

    monkeypatch.setattr(ClusteringTrainer, "__init__", init)
    with pytest.raises(_Killed):
        _run(method, tiny_encoder_dir, toy_corpus, tmp_path / "killed", bf16)
    monkeypatch.setattr(ClusteringTrainer, "__init__", original)
    resumed = _run(method, tiny_encoder_dir, toy_corpus, tmp_path / "killed", bf16)
    assert resumed.trainer.state.global_step == 10
    texts = toy_corpus[0]
    assert resumed.model.predict(texts).tolist() == straight.model.predict(texts).tolist()
    for name, tensor in straight.model.state_dict().items():
        torch.testing.assert_close(resumed.model.state_dict()[name], tensor, rtol=1e-5, atol=1e-5, msg=name)
    # what trains besides the model (ClusterBERT's decoder) resumes exactly too
    resumed_modules = training_module_state(resumed.trainer)
    for name, tensor in training_module_state(straight.trainer).items():
        torch.testing.assert_close(resumed_modules[name], tensor, rtol=1e-5, atol=1e-5, msg=name)


def test_what_trains_besides_the_model_starts_each_step_from_zero_gradients(tiny_encoder_dir, toy_corpus, tmp_path):
    """The Trainer zeroes the model's gradients only; ClusterBERT's decoder has parameters of its own (its
    cross-attention), whose gradients must not sum over the steps."""
    result = _run("clusterbert", tiny_encoder_dir, toy_corpus, tmp_path / "run", False)
    own = [param for _, param in training_module_parameters(result.trainer)]
    assert own and all(param.grad is None for param in own)
