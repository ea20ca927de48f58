"""Cluster representations: words that describe each cluster, and names made of them.

:class:`BaseRepresentation` is the interface (``extract(texts, clusters, num_clusters) -> {cluster: keywords}`` and
``labels(keywords)``); :class:`ClassTfidfRepresentation` (c-TF-IDF over each cluster's texts) and
:class:`LearnedTopicsRepresentation` (the topics DEC-CRL learns) implement it. :func:`label_clusters` stores the
names in a model's ``id2label``, what the ``text-clustering`` pipeline returns as ``"label"``;
:class:`GeneratedNamesRepresentation` (optional) has a language model write the names from those keywords and each
cluster's typical members (``label_clusters(model, texts, generator=...)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..modeling.validation import validate_texts
from ._base import BaseRepresentation
from .ctfidf import ClassTfidfRepresentation
from .generation import DEFAULT_PROMPT, NAMES_FILE, GeneratedNamesRepresentation, clean_name
from .topics import LearnedTopicsRepresentation

__all__ = [
    "BaseRepresentation",
    "ClassTfidfRepresentation",
    "DEFAULT_PROMPT",
    "GeneratedNamesRepresentation",
    "NAMES_FILE",
    "clean_name",
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
    model,
    texts: Sequence[str] | None = None,
    words_per_label: int = 3,
    batch_size: int = 64,
    *,
    generator=None,
    prompt: str = DEFAULT_PROMPT,
    cache=None,
) -> dict[int, str]:
    """Name each cluster of ``model`` and store the names as ``model.config.id2label`` (what the pipeline returns as
    ``"label"``). A model with a topic model (DEC-CRL) is named after the words it learned
    (:class:`LearnedTopicsRepresentation`); any other after its c-TF-IDF keywords on ``texts``. With ``generator``, a
    language model writes each name from those keywords and the cluster's most typical ``texts`` (highest assignment
    probability), keeping the keyword name where it fails (:class:`GeneratedNamesRepresentation`). Returns the names.

    Args:
        model: a clusterer.
        texts: the texts its clusters are named from (the training texts); required without a topic model and with
            ``generator``.
        words_per_label: keywords per keyword name.
        batch_size: texts per encoding batch.
        generator: optional: a Hub id or local folder of a text-generation / text2text model, or a callable
            ``prompt -> text``.
        prompt: the generator's prompt template (``{keywords}``, ``{documents}``).
        cache: with ``generator``: the JSON file of earlier answers (e.g. ``<model dir>/cluster_names.json``).

    Raises:
        ValueError: ``texts`` missing where they are needed.

    Example:
        >>> label_clusters(model, train_texts)  # doctest: +SKIP
        {0: 'oracle · sql · table', 1: 'python · list · dict', ...}
    """
    needs_texts = not model.config.has_topic_model or generator is not None
    if texts is None and needs_texts:
        why = (
            "a language model names clusters from their typical texts"
            if generator is not None
            else (f"{type(model).__name__} learns no topics, its clusters are named after their keywords on texts")
        )
        raise ValueError(f"`texts` is required: {why} (pass the training texts).")
    if texts is not None:
        texts = validate_texts(texts)
    clusters = probabilities = None
    if needs_texts:
        probabilities = model.predict_proba(texts, batch_size=batch_size)
        clusters = probabilities.argmax(axis=1)
    if model.config.has_topic_model:
        keywords = LearnedTopicsRepresentation(model, top_n=max(words_per_label, 8 if generator else 0)).extract()
    else:
        keywords = cluster_keywords(texts, clusters, model.config.num_clusters)
    if generator is None:
        labels = keyword_labels(keywords, words_per_label)
    else:
        namer = GeneratedNamesRepresentation(generator, prompt=prompt, cache=cache)
        labels = namer.names(
            texts, clusters, model.config.num_clusters, typicality=probabilities.max(axis=1), keywords=keywords
        )
    model.config.id2label = labels
    model.config.label2id = {name: k for k, name in labels.items()}
    return labels
