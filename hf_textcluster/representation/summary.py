"""The table of a model's clusters (BERTopic's ``get_topic_info``): per cluster its id, name, size, keywords,
representative texts and mean confidence, from the summary saved with the model or recomputed from texts.

Training saves a bounded summary of its training texts in the model's config (``config.cluster_summary``; at most
:data:`MAX_KEYWORDS` keywords and :data:`MAX_REPRESENTATIVE_TEXTS` texts of at most :data:`MAX_TEXT_CHARS`
characters per cluster), so :func:`cluster_info` works from the saved model alone, also after a push to the Hub
(the representative texts are training texts: they travel with ``config.json``). What a config carries is read
defensively: at most that many items of those lengths, on one line each, and a summary that does not describe the
model's clusters is ignored.

Example:
    >>> table = cluster_info(model)          # doctest: +SKIP
    >>> table = cluster_info(model, texts)   # doctest: +SKIP
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..markup import one_line
from ..modeling.calibration import DEFAULT_OUTLIER_QUANTILE
from ..modeling.validation import Interval, check_scalar, validate_texts
from .ctfidf import keyword_representation
from .topics import LearnedTopicsRepresentation

SUMMARY_KEY = "cluster_summary"  # the config attribute (and config.json key) the summary is saved under
MAX_KEYWORDS = 10
MAX_REPRESENTATIVE_TEXTS = 3
MAX_TEXT_CHARS = 200
MAX_KEYWORD_CHARS = 50
# The table's columns, in order.
COLUMNS = ("cluster", "name", "size", "keywords", "representative_texts", "mean_confidence")
OUTLIER_NAME = "outliers"  # the table's row -1 (BERTopic's topic -1)


@dataclass
class Assignments:
    """Texts' clusters as a model serves them, with how sure and how typical each is.

    Attributes:
        clusters: (N,) cluster ids; -1 for an outlier of a model that flags them (``config.flag_outliers``).
        confidence: (N,) the calibrated confidence (a calibrated model), else the soft-assignment probability of the
            assigned cluster; None when unknown.
        typicality: (N,) higher is more typical of its cluster: minus the cosine distance to the cluster's
            calibrated centre (a calibrated model), else the probability; None when unknown.
        probabilities: (N, K) the soft assignments, when asked for (``assign_embeddings(keep_probabilities=True)``).
    """

    clusters: np.ndarray
    confidence: np.ndarray | None = None
    typicality: np.ndarray | None = None
    probabilities: np.ndarray | None = None

    def take(self, rows: np.ndarray) -> Assignments:
        """The assignments of ``rows`` only."""
        return Assignments(
            self.clusters[rows],
            None if self.confidence is None else self.confidence[rows],
            None if self.typicality is None else self.typicality[rows],
        )


def assign_texts(model, texts: Sequence[str], batch_size: int = 128, precision: str | None = "auto") -> Assignments:
    """One encoding pass over ``texts``: their clusters, confidence and typicality (see :class:`Assignments`), with
    -1 for the outliers of a model that flags them (:func:`mark_outliers`).

    Example:
        >>> assign_texts(model, ["how do i join two tables"]).clusters  # doctest: +SKIP
        array([3])
    """
    texts = validate_texts(texts)
    if model.is_calibrated:
        out = model.predict_with_confidence(texts, batch_size=batch_size, show_progress_bar=False, precision=precision)
        assigned = Assignments(
            np.asarray(out["cluster"], dtype=np.int64),
            np.asarray(out["confidence"], dtype=np.float64),
            -np.asarray(out["distance"], dtype=np.float64),
        )
        return mark_outliers(model, assigned)
    probabilities = model.predict_proba(texts, batch_size=batch_size, show_progress_bar=False, precision=precision)
    top = probabilities.max(axis=1).astype(np.float64)
    return Assignments(probabilities.argmax(axis=1).astype(np.int64), top, top)


def assign_embeddings(
    model, embeddings: np.ndarray, batch_size: int = 4096, keep_probabilities: bool = False, outliers: bool = True
) -> Assignments:
    """:func:`assign_texts` from the texts' pooled embeddings (``model.embed``, or a training run's pass over its
    texts): the heads only, no encoding pass; the same result as :func:`assign_texts` on the texts. With
    ``keep_probabilities``, also the N x K soft assignments (``probabilities``); ``outliers=False``: every text's
    nearest cluster, never -1."""
    import torch

    # no text: the arrays are empty (each part is concatenated after this one)
    parts = [(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), np.zeros((0, model.config.num_clusters)))]
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for start in range(0, len(embeddings), batch_size):
                chunk = np.asarray(embeddings[start : start + batch_size], dtype=np.float32)
                batch = torch.as_tensor(chunk, device=model.device)
                probs = model.cluster_probabilities(batch).float()
                clusters = probs.argmax(dim=-1)
                if model.is_calibrated:
                    confidence = model.calibrated_confidence(batch, probs)
                    typicality = -model.calibration.distance(batch, clusters)
                else:
                    confidence = typicality = probs.gather(1, clusters[:, None])[:, 0]
                kept = probs.cpu().numpy() if keep_probabilities else parts[0][3]
                parts.append(
                    (clusters.cpu().numpy(), *(t.float().cpu().numpy() for t in (confidence, typicality)), kept)
                )
    finally:
        model.train(was_training)
    clusters, confidence, typicality, probabilities = (np.concatenate(arrays) for arrays in zip(*parts))
    assigned = Assignments(
        clusters.astype(np.int64),
        confidence.astype(np.float64),
        typicality.astype(np.float64),
        probabilities if keep_probabilities else None,
    )
    return mark_outliers(model, assigned) if outliers else assigned


def outlier_rows(model, assignments: Assignments) -> np.ndarray:
    """Which texts are far from every cluster, by the one rule training, ``predict`` and the pipeline share: a
    cosine distance to their cluster's calibrated centre beyond its ``outlier_quantile`` (0.99) of its calibration
    texts' (about 1% of the texts it was calibrated on). All False for a model that is not calibrated."""
    clusters = np.asarray(assignments.clusters)
    if not model.is_calibrated or assignments.typicality is None:
        return np.zeros(len(clusters), dtype=bool)
    thresholds = model.calibration.thresholds(DEFAULT_OUTLIER_QUANTILE).float().cpu().numpy()
    return (clusters == -1) | (-assignments.typicality > thresholds[np.maximum(clusters, 0)])


def mark_outliers(model, assignments: Assignments) -> Assignments:
    """``assignments`` with -1 for :func:`outlier_rows`, when the model flags outliers (``config.flag_outliers``:
    ``train --outliers``); else as they are."""
    if not getattr(model.config, "flag_outliers", False):
        return assignments
    clusters = np.where(outlier_rows(model, assignments), -1, assignments.clusters)
    return Assignments(clusters, assignments.confidence, assignments.typicality, assignments.probabilities)


def _clean_text(value: Any, max_chars: int) -> str:
    text = one_line(str(value)[: 4 * max_chars])  # a long value is cut before it is scanned
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def typical_texts(
    texts: Sequence[str], members: np.ndarray, typicality: np.ndarray | None, count: int, clean: Callable[[Any], str]
) -> list[str]:
    """Up to ``count`` distinct ``clean``-ed texts of the rows ``members``, the most typical first (in row order
    without ``typicality``)."""
    if typicality is not None:
        members = members[np.argsort(-typicality[members], kind="stable")]
    chosen: list[str] = []
    for i in members:
        text = clean(texts[int(i)])
        if text and text not in chosen:
            chosen.append(text)
        if len(chosen) == count:
            break
    return chosen


def sample_rows(num_rows: int, size: int | None, seed: int | None = 0) -> np.ndarray:
    """All row indices, or a seeded sample of ``size`` of them (sorted) when there are more.

    Raises:
        ValueError: ``size`` is not a positive integer or None (the error names it ``sample_size``).

    Example:
        >>> sample_rows(5, 10).tolist()
        [0, 1, 2, 3, 4]
    """
    check_scalar(size, "sample_size", int, min_val=1, allow_none=True)
    if size is None or num_rows <= size:
        return np.arange(num_rows)
    return np.sort(np.random.default_rng(seed).choice(num_rows, size=size, replace=False))


def named_by_topics(config) -> bool:
    """Whether a model's clusters are named after the topics it learned: a topic model (DEC-CRL) serving its own
    head (a re-fitted partition it may serve is not what the topics describe)."""
    return config.has_topic_model and getattr(config, "served_partition", "head") == "head"


def cluster_keywords(
    model, texts: Sequence[str] | None, clusters: np.ndarray | None, top_n: int = MAX_KEYWORDS
) -> dict[int, list[str]]:
    """Each cluster's keywords, best first: its learned topics' words for a model named after them (a DEC-CRL head),
    else c-TF-IDF of ``texts`` by ``clusters``. Texts at -1 (outliers) are one more class of that c-TF-IDF, as
    BERTopic's topic -1: their keywords come under -1 (and those outlier texts' words count against every cluster's).
    """
    num_clusters = model.config.num_clusters
    learned = named_by_topics(model.config)
    keywords = LearnedTopicsRepresentation(model, top_n=top_n).extract() if learned else {}
    flagged = texts is not None and bool((np.asarray(clusters) == -1).any())
    if learned and not flagged:
        return keywords
    classes = np.where(np.asarray(clusters) == -1, num_clusters, clusters)
    counted = keyword_representation(model.config, top_n).extract(texts, classes, num_clusters + flagged)
    outliers = {-1: counted.pop(num_clusters)} if flagged else {}
    return {**outliers, **(keywords if learned else counted)}


def _keywords(words: Sequence[str]) -> list[str]:
    return [_clean_text(word, MAX_KEYWORD_CHARS) for word in list(words)[:MAX_KEYWORDS]]


def summarize_clusters(
    texts: Sequence[str] | None,
    assignments: Assignments | None,
    num_clusters: int,
    keywords: Mapping[int, Sequence[str]],
) -> dict:
    """The bounded summary saved as ``config.cluster_summary``: ``{"num_texts": N, "outliers": texts at -1,
    "outlier_keywords": theirs, "outlier_texts": the first few, "clusters": [{"size", "mean_confidence", "keywords",
    "texts"}, ...]}`` (list index = cluster id). Without texts, only the keywords (sizes and confidences ``None``).

    Args:
        texts: the texts the clusters are summarised on (the training texts), or None.
        assignments: their :class:`Assignments` (one per text).
        num_clusters: K.
        keywords: cluster id -> keywords, best first (at most :data:`MAX_KEYWORDS` are kept); -1: the outliers'
            (:func:`cluster_keywords`).

    Example:
        >>> summary = summarize_clusters(["sql join", "git push"], Assignments(np.array([0, 1])), 2,
        ...                              {0: ["sql", "join"], 1: ["git", "push"]})
        >>> clusters = summary["clusters"]
        >>> clusters[1]
        {'size': 1, 'mean_confidence': None, 'keywords': ['git', 'push'], 'texts': ['git push']}
    """
    clusters = []
    counted = texts is not None and assignments is not None
    clean = functools.partial(_clean_text, max_chars=MAX_TEXT_CHARS)
    for k in range(num_clusters):
        words = _keywords(keywords.get(k, []))
        entry: dict[str, Any] = {"size": None, "mean_confidence": None, "keywords": words, "texts": []}
        if counted:
            members = np.flatnonzero(assignments.clusters == k)
            entry["size"] = int(members.size)
            if assignments.confidence is not None and members.size:
                entry["mean_confidence"] = round(float(assignments.confidence[members].mean()), 4)
            entry["texts"] = typical_texts(texts, members, assignments.typicality, MAX_REPRESENTATIVE_TEXTS, clean)
        clusters.append(entry)
    flagged = np.flatnonzero(np.asarray(assignments.clusters) == -1) if counted else np.zeros(0, int)
    summary = {"num_texts": len(texts) if counted else 0, "outliers": int(flagged.size), "clusters": clusters}
    summary["outlier_texts"] = typical_texts(texts, flagged, None, MAX_REPRESENTATIVE_TEXTS, clean)  # none: []
    return {**summary, "outlier_keywords": _keywords(keywords.get(-1, [])) if flagged.size else []}


def _strings(value: Any, limit: int, max_chars: int) -> list[str]:
    """The first ``limit`` non-empty cleaned strings of a list (read lazily: a long list is not scanned to its end)."""
    items = value if isinstance(value, list) else ()  # absent (an older summary) or not a list: none
    cleaned = (_clean_text(item, max_chars) if isinstance(item, str) else "" for item in items)
    return list(itertools.islice(filter(None, cleaned), limit))


def _count(value: Any) -> int | None:
    return value if Interval(int, 0).is_satisfied_by(value) else None


def _fraction(value: Any) -> float | None:
    return float(value) if Interval((int, float), 0, 1).is_satisfied_by(value) else None


def read_cluster_summary(config) -> dict | None:
    """The summary a config carries, cleaned and bounded (at most :data:`MAX_KEYWORDS` keywords and
    :data:`MAX_REPRESENTATIVE_TEXTS` texts of :data:`MAX_TEXT_CHARS` characters per cluster, each on one line), or
    None when it has none or one that does not describe its ``num_clusters`` clusters (an edit made without texts).

    Example:
        >>> first, *others = read_cluster_summary(model.config)["clusters"]  # doctest: +SKIP
        >>> first["keywords"]  # doctest: +SKIP
        ['oracle', 'sql', 'table', 'join', 'query']
    """
    summary = getattr(config, SUMMARY_KEY, None)
    num_clusters = config.num_clusters
    if not isinstance(summary, Mapping) or not isinstance(summary.get("clusters"), list):
        return None
    entries = summary["clusters"]
    if len(entries) != num_clusters or not all(isinstance(entry, Mapping) for entry in entries):
        return None
    clusters = [
        {
            "size": _count(entry.get("size")),
            "mean_confidence": _fraction(entry.get("mean_confidence")),
            "keywords": _strings(entry.get("keywords"), MAX_KEYWORDS, MAX_KEYWORD_CHARS),
            "texts": _strings(entry.get("texts"), MAX_REPRESENTATIVE_TEXTS, MAX_TEXT_CHARS),
        }
        for entry in entries
    ]
    return {
        "num_texts": _count(summary.get("num_texts")) or 0,
        "outliers": _count(summary.get("outliers")) or 0,
        "outlier_keywords": _strings(summary.get("outlier_keywords"), MAX_KEYWORDS, MAX_KEYWORD_CHARS),
        "outlier_texts": _strings(summary.get("outlier_texts"), MAX_REPRESENTATIVE_TEXTS, MAX_TEXT_CHARS),
        "clusters": clusters,
    }


def merge_summaries(summary: Mapping | None, mapping: Sequence[int], num_clusters: int) -> dict | None:
    """The summary of a model whose old cluster ``i`` became cluster ``mapping[i]`` (a merge), without texts: sizes
    summed, mean confidences weighted by size, keywords and texts taken in turn from the members, largest first.

    Example:
        >>> old = {"num_texts": 3, "clusters": [
        ...     {"size": 2, "mean_confidence": 0.5, "keywords": ["a"], "texts": ["x"]},
        ...     {"size": 1, "mean_confidence": 0.8, "keywords": ["b"], "texts": ["y"]},
        ...     {"size": 0, "mean_confidence": None, "keywords": [], "texts": []}]}
        >>> first, second = merge_summaries(old, [0, 0, 1], 2)["clusters"]
        >>> first
        {'size': 3, 'mean_confidence': 0.6, 'keywords': ['a', 'b'], 'texts': ['x', 'y']}
    """
    if summary is None:
        return None
    old = summary["clusters"]
    clusters = []
    for new_id in range(num_clusters):
        members = sorted((i for i, k in enumerate(mapping) if k == new_id), key=lambda i: -(old[i]["size"] or 0))
        sizes = [old[i]["size"] for i in members]
        entry: dict[str, Any] = {"size": None, "mean_confidence": None, "keywords": [], "texts": []}
        if all(size is not None for size in sizes):
            entry["size"] = int(sum(sizes))
            weighted = [(old[i]["mean_confidence"], old[i]["size"]) for i in members if old[i]["size"]]
            if weighted and all(c is not None for c, _ in weighted):
                entry["mean_confidence"] = round(sum(c * n for c, n in weighted) / sum(n for _, n in weighted), 4)
        for field, limit in (("keywords", MAX_KEYWORDS), ("texts", MAX_REPRESENTATIVE_TEXTS)):
            # in turn: every member's first item, then every member's second, ...
            for item in itertools.chain.from_iterable(itertools.zip_longest(*(old[i][field] for i in members))):
                if item is not None and item not in entry[field] and len(entry[field]) < limit:
                    entry[field].append(item)
        clusters.append(entry)
    kept = {key: value for key, value in summary.items() if key != "clusters"}  # a merge moves no outlier
    return {**kept, "clusters": clusters}


def _table(model, summary: Mapping):
    import pandas as pd

    names = model.config.id2label or {}
    rows = [
        {
            "cluster": k,
            "name": _clean_text(names.get(k, f"cluster_{k}"), MAX_TEXT_CHARS),
            "size": entry["size"],
            "keywords": list(entry["keywords"]),
            "representative_texts": list(entry["texts"]),
            "mean_confidence": entry["mean_confidence"],
        }
        for k, entry in enumerate(summary["clusters"])
    ]
    if summary.get("outliers"):  # first, as BERTopic's topic -1
        outliers = {"cluster": -1, "name": OUTLIER_NAME, "size": summary["outliers"], "mean_confidence": None}
        outliers.update(keywords=list(summary["outlier_keywords"]), representative_texts=list(summary["outlier_texts"]))
        rows.insert(0, outliers)
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    table["size"] = table["size"].astype("Int64")
    table["mean_confidence"] = table["mean_confidence"].astype("Float64")
    return table


def cluster_info(
    model,
    texts: Sequence[str] | None = None,
    *,
    batch_size: int = 128,
    precision: str | None = "auto",
    sample_size: int | None = 10_000,
    random_state: int | None = 0,
):
    """One row per cluster of ``model``: ``cluster`` (id), ``name`` (``config.id2label``), ``size``, ``keywords``
    (a list, best first), ``representative_texts`` (a list: the texts nearest their cluster's centre) and
    ``mean_confidence`` (the mean calibrated confidence of its texts; the mean probability of the assigned cluster
    for a model that is not calibrated), as BERTopic's ``get_topic_info``; first a row -1 (``"outliers"``, their
    count and keywords: c-TF-IDF with the outliers as one more class) when a model that flags outliers
    (``train --outliers``) left texts at -1.

    Without ``texts``, the summary saved at training time (the training texts') is read from the model: nothing is
    encoded. With ``texts``, everything is recomputed from them: one encoding pass, keywords by c-TF-IDF on a seeded
    sample of at most ``sample_size`` of them (a model that is named after the topics it learned, DEC-CRL's head,
    keeps those topics' words).

    Args:
        model: a trained clusterer.
        texts: texts to compute the table on (e.g. the training texts, or new ones); None: the saved summary.
        batch_size: texts per encoder call.
        precision: as for ``model.predict``.
        sample_size: with ``texts``: at most this many texts give the keywords (None: all).
        random_state: the sample's seed.

    Returns:
        A ``pandas.DataFrame`` with the columns of :data:`COLUMNS`, one row per cluster in id order (-1 first).

    Raises:
        ValueError: no ``texts`` and the model carries no summary of its clusters (one edited without texts, or
            trained by an earlier version).

    Example:
        >>> table = cluster_info(model)  # doctest: +SKIP
        >>> table[["cluster", "name", "size"]].head(2)  # doctest: +SKIP
           cluster                  name  size
        0        0  oracle · sql · table    41
        1        1   python · list · dict   39
    """
    if texts is None:
        summary = read_cluster_summary(model.config)
        if summary is None:
            raise ValueError(
                f"`texts` is required: this {type(model).__name__} carries no summary of its "
                f"{model.config.num_clusters} clusters (training saves one; an edit made without texts drops it). "
                "Pass its training texts "
                "(texts=..., or --input FILE)."
            )
        return _table(model, summary)
    texts = validate_texts(texts)
    assignments = assign_texts(model, texts, batch_size=batch_size, precision=precision)
    return _table(model, summarize_model(model, texts, assignments, sample_size=sample_size, random_state=random_state))


def summarize_model(
    model,
    texts: Sequence[str],
    assignments: Assignments,
    *,
    sample_size: int | None = 10_000,
    random_state: int | None = 0,
) -> dict:
    """:func:`summarize_clusters` of ``model``'s clusters on ``texts`` (``assignments``: ``assign_texts(model,
    texts)``), with the :func:`cluster_keywords` of a seeded sample of at most ``sample_size`` of ``texts``."""
    rows = sample_rows(len(texts), sample_size, random_state)
    keywords = cluster_keywords(model, [texts[int(i)] for i in rows], np.asarray(assignments.clusters)[rows])
    return summarize_clusters(texts, assignments, model.config.num_clusters, keywords)
