"""Naming clusters by their c-TF-IDF keywords: from the model's predictions, or from the clusters the caller has."""

import numpy as np
import pytest

from hf_textcluster.representation import name_clusters


def test_given_clusters_name_as_predicted_ones(toy_model, toy_corpus):
    texts = toy_corpus[0]
    predicted = name_clusters(toy_model, texts, sample_size=50, random_state=3, precision="fp32")
    labels = toy_model.predict(texts, precision="fp32")
    given = name_clusters(toy_model, texts, sample_size=50, random_state=3, labels=labels)
    assert given == predicted
    assert toy_model.config.id2label == given.names


def test_given_clusters_are_the_ones_named(toy_model, toy_corpus):
    texts = toy_corpus[0]
    labels = np.zeros(len(texts), dtype=np.int64)
    labels[1::2] = 2  # a partition the model does not serve: it is named, not predicted
    names = name_clusters(toy_model, texts, sample_size=None, labels=labels)
    assert names.sizes == {0: len(texts) - len(texts) // 2, 1: 0, 2: len(texts) // 2}


@pytest.mark.parametrize(
    "labels",
    [np.zeros(3, dtype=np.int64), np.full(120, 3), np.full(120, -1), np.zeros(120, dtype=np.float32)],
    ids=["too-few", "above-k", "negative", "floats"],
)
def test_bad_given_clusters_are_clear_errors(toy_model, toy_corpus, labels):
    with pytest.raises(ValueError, match=r"`labels` must be `model.predict\(texts\)`"):
        name_clusters(toy_model, toy_corpus[0], labels=labels)
