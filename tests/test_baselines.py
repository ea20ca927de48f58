"""Baselines: BoW / TF-IDF / encoder embeddings + k-means, and their input errors."""

import numpy as np
import pytest

from hf_textcluster.evaluation.metrics import cluster_accuracy
from hf_textcluster.runs.baselines import EmbeddingKMeans, VectorizerKMeans, make_baseline


@pytest.mark.parametrize("kind", ["bow", "tfidf"])
def test_vectorizer_kmeans_separates_toy_topics(kind, toy_corpus):
    texts, labels = toy_corpus
    predictions = VectorizerKMeans(3, kind=kind, random_state=0).fit_predict(texts)
    assert predictions.shape == (len(texts),)
    assert cluster_accuracy(labels, predictions) > 0.6  # 3 topics with disjoint vocabularies; chance is ~0.33


def test_random_state_makes_it_reproducible(toy_corpus):
    texts, _ = toy_corpus
    a = VectorizerKMeans(3, random_state=1).fit_predict(texts)
    b = VectorizerKMeans(3, random_state=1).fit_predict(texts)
    np.testing.assert_array_equal(a, b)


def test_embedding_kmeans_with_a_tiny_encoder(tiny_encoder_dir, toy_corpus):
    texts, _ = toy_corpus
    model = EmbeddingKMeans(3, encoder=str(tiny_encoder_dir), show_progress_bar=False)
    predictions = model.fit_predict(texts)
    assert predictions.shape == (len(texts),) and model.embeddings_.shape == (len(texts), 32)


@pytest.mark.parametrize(
    "texts,k,error,match",
    [
        (None, 2, TypeError, "`texts` is None"),
        ([], 2, ValueError, "empty"),
        (["a b", ""], 2, ValueError, "item 1|index 1"),
        (["a b", None], 2, TypeError, "item 1"),
        (["a b", "c d"], 1, ValueError, ">= 2"),
        (["a b", "c d"], 3, ValueError, r"larger than the number of texts \(2\)"),
        (["a b", "c d"], 2.5, TypeError, "num_clusters"),
    ],
)
def test_bad_input_gets_a_clear_error(texts, k, error, match):
    with pytest.raises(error, match=match):
        VectorizerKMeans(k).fit_predict(texts)


def test_unknown_baseline_lists_the_valid_ones():
    with pytest.raises(ValueError, match="bow-kmeans, tfidf-kmeans, embeddings-kmeans"):
        make_baseline("lda", 3)
