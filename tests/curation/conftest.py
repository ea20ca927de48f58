"""The trained model the after-fit tests read and edit, made once per module."""

from __future__ import annotations

import json

import pytest
import torch

from hf_textcluster.editing import initialize_clusters
from hf_textcluster.models import get_method
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.representation import name_clusters

K = 4


def fitted_model(encoder_dir, texts):
    """A tiny SCCL model whose K clusters are fitted and calibrated on ``texts`` (seeded)."""
    torch.manual_seed(0)
    model = from_encoder_pretrained(get_method("sccl").model_class, str(encoder_dir), num_clusters=K)
    initialize_clusters(model, texts)
    model.calibrate(texts)
    return model


@pytest.fixture(scope="module")
def saved(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    """A fitted, calibrated SCCL model named (with its clusters' summary) on its texts, whose training_run.json
    points at the texts' file and records scores."""
    texts, _ = toy_corpus
    root = tmp_path_factory.mktemp("saved")
    model = fitted_model(tiny_encoder_dir, texts)
    name_clusters(model, texts)
    model.save_pretrained(root / "model")
    (root / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    run = {
        "method": "sccl",
        "num_clusters": K,
        "metrics": {"acc": 0.5},
        "input": {"path": str(root / "texts.txt"), "text_column": "text"},
    }
    (root / "model" / "training_run.json").write_text(json.dumps(run), encoding="utf-8")
    return root
