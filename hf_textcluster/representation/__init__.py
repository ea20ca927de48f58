"""Cluster representations: words that describe each cluster, and names made of them.

:class:`BaseRepresentation` is the interface (``extract(texts, clusters, num_clusters) -> {cluster: keywords}`` and
``labels(keywords)``); :class:`ClassTfidfRepresentation` (c-TF-IDF over each cluster's texts) and
:class:`LearnedTopicsRepresentation` (the topics DEC-CRL learns) implement it. :func:`name_clusters` stores the
names in a model's ``id2label``, what the ``text-clustering`` pipeline returns as ``"label"``;
:class:`GeneratedNamesRepresentation` (optional) has a language model write the names from those keywords and each
cluster's typical members (``name_clusters(model, texts, generator=...)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..markup import one_line
from ..modeling.validation import validate_texts
from ._base import BaseRepresentation
from .ctfidf import ClassTfidfRepresentation
from .generation import DEFAULT_PROMPT, NAMES_FILE, GeneratedNamesRepresentation, clean_name
from .summary import (
    MAX_KEYWORDS,
    SUMMARY_KEY,
    Assignments,
    assign_texts,
    cluster_info,
    cluster_keywords,
    named_by_topics,
    sample_rows,
    summarize_clusters,
)
from .topics import LearnedTopicsRepresentation

__all__ = [
    "Assignments",
    "BaseRepresentation",
    "ClassTfidfRepresentation",
    "ClusterNames",
    "DEFAULT_PROMPT",
    "GeneratedNamesRepresentation",
    "NAMES_FILE",
    "clean_name",
    "LearnedTopicsRepresentation",
    "assign_texts",
    "cluster_info",
    "name_clusters",
    "rename_clusters",
    "store_names",
]

# Texts a model's clusters are named on at most (a seeded sample beyond): the keywords of 10,000 texts are stable.
DEFAULT_NAMING_SAMPLE_SIZE = 10_000


@dataclass
class ClusterNames:
    """What :func:`name_clusters` found: per cluster its name, keywords and size on the texts it was named on.

    Attributes:
        names: cluster id -> name (what ``config.id2label`` now holds).
        keywords: cluster id -> its keywords, best first.
        sizes: cluster id -> how many of the texts it was named on fall in it.
        num_texts: how many texts it was named on (a seeded sample of at most ``sample_size``).
        source: ``"c-TF-IDF"`` or ``"learned topics"``.
        assignments: every text's :class:`Assignments`, when they were given (``assignments=``), else None.
    """

    names: dict[int, str]
    keywords: dict[int, list[str]]
    sizes: dict[int, int]
    num_texts: int
    source: str
    assignments: Assignments | None = field(default=None, repr=False, compare=False)


def name_clusters(
    model,
    texts: Sequence[str] | None = None,
    *,
    words_per_label: int = 3,
    sample_size: int | None = DEFAULT_NAMING_SAMPLE_SIZE,
    random_state: int | None = 0,
    batch_size: int = 64,
    precision: str | None = "auto",
    labels: Sequence[int] | np.ndarray | None = None,
    assignments: Assignments | None = None,
    generator=None,
    prompt: str = DEFAULT_PROMPT,
    cache=None,
) -> ClusterNames:
    """Name each cluster of what ``model`` serves and store the names as ``model.config.id2label`` (and
    ``label2id``): what ``predict``, the pipeline's ``label``, the report and the card show. The names are c-TF-IDF
    keywords of the clusters' texts (a seeded sample of at most ``sample_size`` of ``texts``, the training texts); a
    model that serves its own head and learns topics (DEC-CRL) is named after its learned topics instead. With
    ``generator``, a language model writes each name from those keywords and the cluster's most typical texts,
    keeping the keyword name where it fails (:class:`GeneratedNamesRepresentation`). The clusters' summary (sizes,
    mean confidence, up to 10 keywords and 3 representative texts each:
    :func:`~hf_textcluster.representation.summary.cluster_info`) is stored with them, as ``config.cluster_summary``.

    Args:
        model: a trained clusterer (changed in place: its config's ``id2label`` / ``label2id``).
        texts: the texts to name the clusters on (use the training texts); optional for a topic model's head
            without ``generator``.
        words_per_label: keywords per name (``"oracle · sql · table"``).
        sample_size: at most this many texts, a seeded sample (``None``: all).
        random_state: the sample's seed.
        batch_size: texts per encoder call.
        precision: as for ``model.predict``.
        labels: ``model.predict(texts)``, when the caller has them already (no encoding pass then); the sample's
            rows are taken from them.
        assignments: ``assign_texts(model, texts)``, when the caller has them (no encoding pass then): the summary's
            sizes, mean confidences and representative texts are then over all ``texts``, not the sample.
        generator: optional: a Hub id or local folder of a text-generation / text2text model, or a callable
            ``prompt -> text``.
        prompt: the generator's prompt template (``{keywords}``, ``{documents}``).
        cache: with ``generator``: the JSON file of earlier answers (e.g. ``<model dir>/cluster_names.json``).

    Returns:
        A :class:`ClusterNames` (names, keywords, sizes on those texts).

    Raises:
        ValueError: ``texts`` missing for a model that learns no topics (or serves another partition than its head)
            or with ``generator``, or ``labels`` that are not one cluster id of ``model`` per text.

    Example:
        >>> names = name_clusters(model, training_texts)  # doctest: +SKIP
        >>> model.config.id2label[0]                     # doctest: +SKIP
        'oracle · sql · table'
    """
    num_clusters = model.config.num_clusters
    learned = named_by_topics(model.config)
    if texts is None and (generator is not None or not learned):
        why = (
            "a language model names clusters from their typical texts"
            if generator is not None
            else (
                f"{type(model).__name__} serves a partition without learned topics, its clusters are named after "
                "their keywords on texts"
            )
        )
        raise ValueError(f"`texts` is required: {why} (pass the training texts).")
    sizes, num_texts = {k: 0 for k in range(num_clusters)}, 0
    summarized: tuple[list[str] | None, Assignments | None] = (None, None)  # what the summary is made of
    sample, sampled_clusters = None, None
    if texts is not None:
        texts = validate_texts(texts)
        if assignments is not None:  # -1: an outlier (a model that flags them), keywords of their own
            _check_labels(assignments.clusters, len(texts), num_clusters, lowest=-1)
        given = None if labels is None else Assignments(_check_labels(labels, len(texts), num_clusters))
        given = assignments or given
        rows = sample_rows(len(texts), sample_size, random_state)
        sample = [texts[int(i)] for i in rows]
        if given is None:
            sampled = assign_texts(model, sample, batch_size=batch_size, precision=precision)
        else:
            sampled = given.take(rows) if len(rows) < len(texts) else given
        summarized = (texts, assignments) if assignments is not None else (sample, sampled)
        sampled_clusters = sampled.clusters
        counts = np.bincount(sampled_clusters[sampled_clusters >= 0], minlength=num_clusters)
        sizes, num_texts = {k: int(counts[k]) for k in range(num_clusters)}, len(sample)
    keywords = cluster_keywords(model, sample, sampled_clusters, top_n=max(words_per_label, MAX_KEYWORDS))
    per_cluster = {k: list(words) for k, words in keywords.items() if k >= 0}  # -1, the outliers, is not named
    if generator is None:
        names = BaseRepresentation.labels(per_cluster, words_per_label)
    else:
        namer = GeneratedNamesRepresentation(generator, prompt=prompt, cache=cache)
        names = namer.names(sample, sampled.clusters, num_clusters, typicality=sampled.typicality, keywords=keywords)
    names = store_names(model.config, names)
    setattr(model.config, SUMMARY_KEY, summarize_clusters(*summarized, num_clusters, keywords))
    return ClusterNames(
        names=names,
        keywords=per_cluster,
        sizes=sizes,
        num_texts=num_texts,
        source="learned topics" if learned else "c-TF-IDF",
        assignments=assignments,
    )


def store_names(config, names: dict[int, str]) -> dict[int, str]:
    """Store ``names`` as ``config.id2label`` (and ``label2id``), what ``predict`` and the pipeline's ``label`` show."""
    config.id2label = names
    config.label2id = {name: k for k, name in names.items()}
    return names


def _check_labels(labels, num_texts: int, num_clusters: int, lowest: int = 0) -> np.ndarray:
    """``labels`` given to :func:`name_clusters`: one cluster id in ``[lowest, num_clusters)`` per text."""
    given = np.asarray(labels)
    if (
        given.shape != (num_texts,)
        or not np.issubdtype(given.dtype, np.integer)
        or given.size
        and (given.min() < lowest or given.max() >= num_clusters)
    ):
        raise ValueError(
            f"`labels` must be `model.predict(texts)`: {num_texts} cluster ids in [0, {num_clusters}); got an array of "
            f"shape {given.shape} and dtype {given.dtype}. Leave `labels` out to predict them."
        )
    return given


# The longest name a user gives a cluster (a name is shown in tables, on one line).
MAX_GIVEN_NAME_CHARS = 100


def rename_clusters(model, names: Mapping[int | str, str]) -> dict[int, str]:
    """Give clusters of ``model`` the ``names`` you choose (cluster id -> name; the other clusters keep theirs),
    stored as ``model.config.id2label`` (and ``label2id``): what ``predict``, the pipeline's ``label``,
    :func:`cluster_info`, the report and the card show. BERTopic's ``set_topic_labels``. Save the model to keep them
    (``hf-textcluster rename`` does both).

    Args:
        model: a clusterer (changed in place).
        names: cluster id (an int, or its digits as a string) -> its new name (one line of at most 100 characters).

    Returns:
        Every cluster's name now (``id2label``).

    Raises:
        ValueError: an id that is not one of the model's clusters, an empty or too long name, or a name given to two
            clusters.

    Example:
        >>> rename_clusters(model, {3: "refunds", 5: "billing"})[3]  # doctest: +SKIP
        'refunds'
    """
    num_clusters = model.config.num_clusters
    given: dict[int, str] = {}
    for key, name in dict(names).items():
        text = str(key).strip()
        if isinstance(key, bool) or not (isinstance(key, int) or text.isdigit()) or not 0 <= int(text) < num_clusters:
            raise ValueError(f"Cluster {key!r} is not a cluster of this model: give ids from 0 to {num_clusters - 1}.")
        cleaned = one_line(name) if isinstance(name, str) else ""
        if not cleaned or len(cleaned) > MAX_GIVEN_NAME_CHARS:
            raise ValueError(
                f"The name of cluster {int(text)} must be text of 1 to {MAX_GIVEN_NAME_CHARS} characters on one line; "
                f"got {name!r}."
            )
        given[int(text)] = cleaned
    merged = {int(k): str(v) for k, v in (model.config.id2label or {}).items()}
    merged.update(given)
    seen: dict[str, int] = {}
    for k in sorted(merged):
        if merged[k] in seen:
            raise ValueError(
                f"Clusters {seen[merged[k]]} and {k} would both be named {merged[k]!r}: names must be unique (they "
                "are the model's label2id); give one of them another name."
            )
        seen[merged[k]] = k
    return store_names(model.config, merged)
