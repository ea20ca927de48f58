"""Cluster representations: words that describe each cluster, and names made of them.

:class:`BaseRepresentation` is the interface (``extract(texts, clusters, num_clusters) -> {cluster: keywords}`` and
``labels(keywords)``); :class:`ClassTfidfRepresentation` (c-TF-IDF over each cluster's texts) and
:class:`LearnedTopicsRepresentation` (the topics DEC-CRL learns) implement it. :func:`label_clusters` stores the
names in a model's ``id2label``, what the ``text-clustering`` pipeline returns as ``"label"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..modeling.validation import validate_texts
from ._base import BaseRepresentation
from .ctfidf import ClassTfidfRepresentation
from .topics import LearnedTopicsRepresentation

__all__ = [
    "BaseRepresentation",
    "ClassTfidfRepresentation",
    "LearnedTopicsRepresentation",
    "cluster_keywords",
    "keyword_labels",
    "label_clusters",
]


def cluster_keywords(
    texts: Sequence[str], clusters: Sequence[int], num_clusters: int, top_n: int = 8, stop_words: str | None = "english"
) -> dict[int, list[str]]:
    """The ``top_n`` most distinctive words of each cluster (class-based TF-IDF, :class:`ClassTfidfRepresentation`)."""
    return ClassTfidfRepresentation(top_n=top_n, stop_words=stop_words).extract(texts, clusters, num_clusters)


def keyword_labels(keywords: Mapping[int, Sequence[str]], words_per_label: int = 3) -> dict[int, str]:
    """Cluster names made of their top keywords (``"oracle · sql · table"``), unique, ``cluster_<k>`` if none."""
    return BaseRepresentation.labels(keywords, words_per_label)


def label_clusters(
    model, texts: Sequence[str] | None = None, words_per_label: int = 3, batch_size: int = 64
) -> dict[int, str]:
    """Name each cluster of ``model`` and store the names as ``model.config.id2label`` (what the pipeline returns as
    ``"label"``). A model with a topic model (DEC-CRL) is named after the words it learned
    (:class:`LearnedTopicsRepresentation`); any other after its c-TF-IDF keywords on ``texts``. Returns the names.

    Raises:
        ValueError: ``texts`` missing for a model without a topic model.
    """
    if model.config.has_topic_model:
        keywords = LearnedTopicsRepresentation(model, top_n=words_per_label).extract()
    else:
        if texts is None:
            raise ValueError(
                f"`texts` is required: {type(model).__name__} learns no topics, its clusters are named after their "
                "keywords on texts (pass the training texts)."
            )
        texts = validate_texts(texts)
        clusters = model.predict(texts, batch_size=batch_size)
        keywords = cluster_keywords(texts, clusters, model.config.num_clusters)
    labels = keyword_labels(keywords, words_per_label)
    model.config.id2label = labels
    model.config.label2id = {name: k for k, name in labels.items()}
    return labels
