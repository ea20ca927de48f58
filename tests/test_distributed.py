"""Several processes: `accelerate launch` with 2 CPU processes (gloo) trains every method exactly as one process does
on the same global batch — the same loss, the same weights after the step — with k-means and the other whole-corpus
passes computed once on the main process and shared.

Launched for real (tests/distributed/train_one_step.py, once in one process with the global batch, once under
``accelerate launch --multi_gpu --num_processes 2``, which on a machine without GPUs runs CPU processes over gloo)."""

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file

SCRIPT = Path(__file__).parent / "distributed" / "train_one_step.py"
REPO = Path(__file__).resolve().parents[1]
METHODS = ["sccl", "deccrl", "decmlm", "aecl", "clusterbert"]
GLOBAL_BATCH = 120  # the whole toy corpus: the rows of a step do not depend on how the sampler shuffles


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def runs(tiny_encoder_dir, tmp_path_factory):
    encoder = tmp_path_factory.mktemp("encoder-no-dropout")
    for item in tiny_encoder_dir.iterdir():
        shutil.copy(item, encoder / item.name)
    config = json.loads((encoder / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # no randomness inside a step
    (encoder / "config.json").write_text(json.dumps(config))
    out = tmp_path_factory.mktemp("distributed")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    single = [sys.executable, str(SCRIPT), str(out), str(encoder), str(GLOBAL_BATCH)]
    two = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines",
           "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port()),
           str(SCRIPT), str(out), str(encoder), str(GLOBAL_BATCH)]
    for command in (single, two):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-4000:]
    return out


@pytest.mark.parametrize("method", METHODS)
def test_two_processes_train_as_one_on_the_same_global_batch(runs, method):
    one, two = (json.loads((runs / f"{method}-{n}.json").read_text()) for n in (1, 2))
    assert sorted(two["index"]) == sorted(one["index"]) == list(range(GLOBAL_BATCH))
    assert two["loss"] == pytest.approx(one["loss"], rel=1e-5)
    weights_one, weights_two = (load_file(runs / f"{method}-{n}.safetensors") for n in (1, 2))
    assert weights_one.keys() == weights_two.keys()
    for name, value in weights_one.items():
        # without the gradient average across processes these differ by 1e-3 to 1e-2
        assert (value.float() - weights_two[name].float()).abs().max() < 1e-5, name
