"""Fixtures of the Hub tests: a real training run on the tiny encoder (SCCL), a fitted DEC-MLM model, the stand-in Hub
server, and a way to run client code in a fresh Python process whose environment points huggingface_hub at that
server.

``huggingface_hub`` reads ``HF_ENDPOINT`` (and ``HF_HUB_DISABLE_XET``, ``HF_HOME``) once, at import time, and this
test process imported it long ago with ``HF_HUB_OFFLINE=1``: every client runs in a subprocess with its own
environment, and reports back one JSON object.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hf_textcluster.models.building import from_encoder_pretrained

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hub_client import hub_environment  # noqa: E402
from hub_server import HubServer  # noqa: E402


@pytest.fixture(scope="session")
def hub_server():
    """The stand-in Hub on 127.0.0.1, an ephemeral port, for the whole session."""
    server = HubServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def hub_env(hub_server, tmp_path_factory) -> dict[str, str]:
    return hub_environment(hub_server.url, tmp_path_factory.mktemp("hf-home"))


@pytest.fixture(scope="session")
def trained_run(tiny_encoder_dir, toy_corpus, tmp_path_factory) -> Path:
    """A real (3-step) `train_clusterer` run of SCCL on the toy corpus: weights, tokenizer, training_run.json."""
    import torch

    from hf_textcluster import train_clusterer
    from hf_textcluster.data import load_texts

    texts, labels = toy_corpus
    output_dir = tmp_path_factory.mktemp("runs") / "sccl-toy"
    torch.manual_seed(0)
    train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(output_dir),
        encoder=str(tiny_encoder_dir),
        training_overrides={
            "max_steps": 3,
            "per_device_train_batch_size": 16,
            "bf16": False,
            "save_strategy": "no",
            "logging_steps": 1,
        },
    )
    return output_dir


@pytest.fixture(scope="session")
def decmlm_dir(tiny_encoder_dir, toy_corpus, tmp_path_factory) -> Path:
    """A fitted DEC-MLM model saved with its tokenizer: k-means centroids on the toy corpus, and masked-LM head weights
    moved away from their initial values (as after training), so that a test can tell whether they were loaded."""
    import torch

    from hf_textcluster import DECMLMModel
    from hf_textcluster.editing import initialize_clusters

    torch.manual_seed(0)
    model = from_encoder_pretrained(DECMLMModel, str(tiny_encoder_dir), num_clusters=3)
    with torch.no_grad():
        for param in model.mlm_head.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    initialize_clusters(model, toy_corpus[0], random_state=0)
    output_dir = tmp_path_factory.mktemp("runs") / "decmlm-toy"
    model.save_pretrained(output_dir)
    return output_dir


# A saved model of each registered method (hf_textcluster.models.METHODS), by fixture name.
MODEL_DIR_FIXTURES = {"sccl": "trained_run", "decmlm": "decmlm_dir"}


@pytest.fixture(scope="session")
def model_dir_of(request):
    """``model_dir_of(method)``: the saved model directory of that method (built on first use)."""

    def get(method: str) -> Path:
        return request.getfixturevalue(MODEL_DIR_FIXTURES[method])

    return get
