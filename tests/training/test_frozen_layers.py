"""`frozen_layers`: the encoder's embeddings and lowest layers stay as pretrained; the others train."""

from __future__ import annotations

import pytest
import torch

from hf_textcluster import train_clusterer
from hf_textcluster.data import load_texts
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.models.sccl.modeling_sccl import SCCLModel
from hf_textcluster.training.arguments import ClusteringTrainingArguments
from hf_textcluster.training.initialization import freeze_lower_layers


def _weights(model) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.encoder.named_parameters()}


def test_the_frozen_layers_do_not_move_and_the_others_do(tiny_encoder_dir, toy_corpus, tmp_path):
    texts, labels = toy_corpus
    before = _weights(from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3))
    result = train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(tmp_path),
        encoder=str(tiny_encoder_dir),
        num_clusters=3,
        augmentation="word_deletion",
        training_overrides={
            "per_device_train_batch_size": 16,
            "bf16": False,
            "save_strategy": "no",
            "disable_tqdm": True,
            "max_steps": 4,
            "frozen_layers": 1,
        },
        evaluate=False,
        save=False,
    )
    after = _weights(result.model)
    moved = {name for name in before if not torch.equal(before[name], after[name])}
    assert not any(name.startswith(("embeddings.", "encoder.layer.0.")) for name in moved)
    assert any(name.startswith("encoder.layer.1.") for name in moved)


def test_too_many_frozen_layers_is_one_clear_error(tiny_encoder_dir):
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    total = model.encoder.config.num_hidden_layers
    with pytest.raises(ValueError, match=f"pass at most {total}"):
        freeze_lower_layers(model.encoder, total + 1)
    with pytest.raises(ValueError, match="frozen_layers"):
        ClusteringTrainingArguments(output_dir="unused", frozen_layers=-1)
