"""One huge text costs no more than a text of max_length tokens: every text is cut (in characters, generously) before
it is tokenized, in one place used by predict, the pipeline and training; the prediction is the same as for the
text cut to max_length tokens."""

from __future__ import annotations

import pytest
import torch
from transformers import pipeline

import hf_textcluster  # noqa: F401
from hf_textcluster.modeling.validation import MAX_CHARS_PER_TOKEN


@pytest.fixture(scope="module")
def model(toy_model):
    return toy_model


def _record_lengths(tokenizer, monkeypatch):
    seen = []
    original = type(tokenizer).__call__

    def call(self, text=None, *args, **kwargs):
        texts = [text] if isinstance(text, str) else list(text or [])
        seen.extend(len(t) for t in texts)
        return original(self, text, *args, **kwargs)

    monkeypatch.setattr(type(tokenizer), "__call__", call)
    return seen


HUGE = "how do i join two tables in oracle " * 300_000  # ~10 MB on one line


def test_predict_and_the_pipeline_never_tokenize_a_huge_text_whole(model, monkeypatch):
    limit = MAX_CHARS_PER_TOKEN * model.config.max_length
    short = " ".join(HUGE.split()[: model.config.max_length])
    expected = model.predict([short]).tolist()
    seen = _record_lengths(model.tokenizer, monkeypatch)
    assert model.predict([HUGE]).tolist() == expected
    clusterer = pipeline("text-clustering", model=model, tokenizer=model.tokenizer)
    assert clusterer(HUGE)["cluster"] == expected[0]
    assert seen and max(seen) <= limit


def test_training_never_tokenizes_a_huge_text_whole(tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch):
    from transformers import AutoTokenizer

    from hf_textcluster import train_clusterer
    from hf_textcluster.data import load_texts

    texts, labels = toy_corpus
    seen = _record_lengths(AutoTokenizer.from_pretrained(str(tiny_encoder_dir)), monkeypatch)
    torch.manual_seed(0)
    result = train_clusterer(
        "sccl",
        load_texts([HUGE, *texts[1:]], labels),
        str(tmp_path / "run"),
        encoder=str(tiny_encoder_dir),
        evaluate=False,
        training_overrides={
            "max_steps": 2,
            "per_device_train_batch_size": 16,
            "bf16": False,
            "disable_tqdm": True,
            "report_to": "none",
            "serve": "head",
        },
    )
    assert result.trainer.state.global_step == 2
    assert seen and max(seen) <= MAX_CHARS_PER_TOKEN * result.model.config.max_length
