"""How many tokens the default reads each text to: the texts' own lengths decide, within the encoder's limit."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from hf_textcluster.training.collator import READING_LENGTHS, reading_length, token_counts


@pytest.fixture(scope="module")
def tokenizer(tiny_encoder_dir):
    return AutoTokenizer.from_pretrained(tiny_encoder_dir)


def _texts(words: int, n: int = 100) -> list[str]:
    return [" ".join(["alpha"] * words)] * n


def test_token_counts_include_the_special_tokens(tokenizer):
    assert token_counts(_texts(5, 3), tokenizer, 32).tolist() == [7, 7, 7]


def test_short_texts_are_read_to_the_shortest_length(tokenizer):
    assert reading_length(_texts(10), tokenizer, 512) == READING_LENGTHS[0] == 32


@pytest.mark.parametrize(("words", "expected"), [(40, 64), (100, 128), (200, 256)])
def test_long_texts_are_read_to_the_first_length_that_holds_them(tokenizer, words, expected):
    assert reading_length(_texts(words), tokenizer, 512) == expected


def test_a_few_long_texts_do_not_lengthen_every_text(tokenizer):
    texts = _texts(10, 97) + _texts(300, 3)  # 3% long: 95% fit in 32 tokens
    assert reading_length(texts, tokenizer, 512) == 32
    assert reading_length(_texts(10, 90) + _texts(300, 10), tokenizer, 512) == 512


def test_the_encoders_limit_caps_it(tokenizer):
    assert reading_length(_texts(300), tokenizer, 256) == 256
    assert reading_length(_texts(100), tokenizer, 64) == 64


def test_counting_long_texts_says_nothing_about_the_models_maximum(tokenizer, caplog):
    tokenizer.model_max_length = 64
    with caplog.at_level("WARNING"):
        assert token_counts(_texts(300, 2), tokenizer, 512).tolist() == [302, 302]
    assert "longer than the specified maximum" not in caplog.text
