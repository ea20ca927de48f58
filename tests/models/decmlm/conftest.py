"""DEC-MLM fixtures: a tiny BERT checkpoint *with* a masked-LM head (the shared `tiny_encoder_dir` has none)."""

import shutil

import pytest
import torch


@pytest.fixture(scope="session")
def tiny_mlm_encoder_dir(tiny_encoder_dir, tmp_path_factory):
    """`tiny_encoder_dir`'s config and tokenizer, saved as a randomly initialised ``BertForMaskedLM``."""
    from transformers import AutoConfig, BertForMaskedLM

    path = tmp_path_factory.mktemp("tiny-bert-mlm")
    torch.manual_seed(1)
    model = BertForMaskedLM(AutoConfig.from_pretrained(tiny_encoder_dir))
    with torch.no_grad():  # non-trivial head weights, so that a test can tell them from a fresh init
        for param in model.cls.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    model.save_pretrained(path)
    for item in tiny_encoder_dir.iterdir():
        if item.name.startswith(("tokenizer", "special_tokens", "vocab")):
            shutil.copy(item, path / item.name)
    return path
