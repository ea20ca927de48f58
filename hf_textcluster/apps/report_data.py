"""What the cluster report shows, as plain data: checked once, then read by every section of the page.

:class:`ReportData` holds the texts, their clusters, confidences and embeddings, the clusters' names and keywords and
the :func:`cluster_summaries` (one per used cluster: size, keywords, most and least typical members). It is built by
:meth:`ReportData.from_arrays`, which raises one clear error per bad argument before anything is drawn.

    from hf_textcluster.apps.report_data import cluster_summaries
    for summary in cluster_summaries(texts, model.predict_proba(texts)):
        print(summary["cluster"], summary["name"], summary["size"], summary["keywords"])
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..figures.clusters import cluster_centres
from ..modeling.validation import validate_texts
from ..representation.summary import sample_rows
from .plotting import check_rows, is_placeholder_names

DEFAULT_SAMPLE_SIZE = 3000
NUM_KEYWORDS = 8


def _checked_outputs(n: int, probabilities, confidence, distance, is_outlier) -> tuple:
    """``(probabilities, confidence, distance, is_outlier)`` checked against the ``n`` texts: an N x K matrix
    and N values each (the confidence is the top probability when none is given; the others may be None).

    Raises:
        ValueError: ``probabilities`` not N x K, or another array not of one value per text.
    """
    probs = np.asarray(probabilities, dtype=np.float64)
    if probs.ndim != 2 or len(probs) != n:
        raise ValueError(f"`probabilities` must be a {n} x K matrix (one row per text), got shape {probs.shape}.")
    confidence = check_rows("confidence", confidence, n, np.float64)
    confidence = probs.max(axis=1) if confidence is None else confidence
    distance = check_rows("distance", distance, n, np.float64)
    return probs, confidence, distance, check_rows("is_outlier", is_outlier, n, bool)


def _names_by_id(
    cluster_names: Mapping | None, keywords: Mapping[int, Sequence[str]], num_clusters: int
) -> dict[int, str]:
    """A name for every cluster id: the given name (keyed by the id or its string), else its top keywords when the
    given names are missing or only placeholders, else ``cluster_<id>``."""
    if cluster_names is None or is_placeholder_names(cluster_names):
        from ..representation import BaseRepresentation

        cluster_names = BaseRepresentation.labels(keywords)
    return {k: str(cluster_names.get(k, cluster_names.get(str(k), f"cluster_{k}"))) for k in range(num_clusters)}


def cluster_summaries(
    texts: Sequence[str],
    probabilities,
    *,
    confidence=None,
    distance=None,
    is_outlier=None,
    cluster_names: Mapping[int, str] | None = None,
    keywords: Mapping[int, Sequence[str]] | None = None,
    num_members: int = 3,
) -> list[dict[str, Any]]:
    """One summary per used cluster, largest first.

    Args:
        texts: The N texts.
        probabilities: N x K soft assignments; a text's cluster is its argmax.
        confidence: N confidences in [0, 1] (``predict_with_confidence``); default: the top probability.
        distance: N distances to the text's cluster centre (``predict_with_confidence``); when given, typicality is
            the distance (smallest first), else the confidence (highest first).
        is_outlier: N flags (``predict_with_confidence``); default: none flagged.
        cluster_names: cluster id -> name; default: its top three keywords.
        keywords: cluster id -> keywords; default: c-TF-IDF on ``texts``.
        num_members: How many most / least typical members each summary lists.

    Returns:
        A list of dicts with ``cluster``, ``name``, ``keywords``, ``size``, ``share``, ``mean_confidence``,
        ``num_outliers``, ``typical`` and ``atypical`` (lists of text indices, most / least typical first).

    Raises:
        ValueError: ``probabilities`` not N x K, or another array not of one value per text.

    Example:
        >>> summaries = cluster_summaries(texts, model.predict_proba(texts))  # doctest: +SKIP
        >>> largest = summaries[0]  # doctest: +SKIP
        >>> largest["name"], largest["size"]  # doctest: +SKIP
        ('oracle · sql · table', 412)
    """
    texts = list(texts)
    probs, confidence, distance, is_outlier = _checked_outputs(
        len(texts), probabilities, confidence, distance, is_outlier
    )
    clusters, num_clusters = probs.argmax(axis=1), probs.shape[1]
    if keywords is None:
        from ..representation import ClassTfidfRepresentation

        keywords = ClassTfidfRepresentation(top_n=NUM_KEYWORDS).extract(texts, clusters, num_clusters)
    names = _names_by_id(cluster_names, keywords, num_clusters)
    # typicality: near the centre is typical (a calibrated model), else a confident assignment
    atypicality = distance if distance is not None else -confidence
    summaries = []
    sizes = np.bincount(clusters, minlength=num_clusters)
    for k in np.argsort(-sizes, kind="stable")[: np.count_nonzero(sizes)]:  # the used clusters, largest first
        members = np.flatnonzero(clusters == k)
        order = members[np.argsort(atypicality[members], kind="stable")]
        summaries.append(
            {
                "cluster": int(k),
                "name": names[int(k)],
                "keywords": list(keywords.get(int(k), [])),
                "size": len(members),
                "share": len(members) / len(texts),
                "mean_confidence": float(confidence[members].mean()),
                "num_outliers": int(is_outlier[members].sum()) if is_outlier is not None else 0,
                "typical": order[:num_members].tolist(),
                "atypical": order[::-1][:num_members].tolist(),
            }
        )
    return summaries


@dataclass
class ReportData:
    """Everything the report's sections read, checked: N texts, K clusters, the map's sample of rows."""

    texts: list[str]
    embeddings: np.ndarray  # N x d float32
    clusters: np.ndarray  # N cluster ids (the argmax of the soft assignments)
    num_clusters: int
    confidence: np.ndarray  # N values; the top probability when the model gave none
    distance: np.ndarray | None
    is_outlier: np.ndarray | None
    calibrated: bool
    labels: np.ndarray | None
    label_names: Sequence[str] | None
    names: dict[int, str]  # a name for every cluster id
    weights: dict[int, list]  # cluster id -> [(keyword, c-TF-IDF weight), ...]
    summaries: list[dict[str, Any]]  # cluster_summaries, largest cluster first
    rows: np.ndarray  # the texts the map draws (a seeded sample)
    map_method: str  # one of projection.MAP_METHODS
    random_state: int | None

    @property
    def shown(self) -> str:
        """How many texts the map draws, as the page says it: ``"3,000 of 12,000"`` or ``"800"``."""
        n = len(self.texts)
        return f"{len(self.rows):,} of {n:,}" if len(self.rows) < n else f"{n:,}"

    @cached_property
    def centres(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ids, centres, sizes)`` of the clusters holding texts (:func:`cluster_centres`), computed once."""
        return cluster_centres(self.embeddings, self.clusters, self.num_clusters)

    @classmethod
    def from_arrays(
        cls,
        texts: Sequence[str],
        probabilities,
        embeddings,
        *,
        confidence=None,
        distance=None,
        is_outlier=None,
        labels=None,
        label_names: Sequence[str] | None = None,
        cluster_names: Mapping[int, str] | None = None,
        keywords: Mapping[int, Sequence[str]] | None = None,
        keyword_vectorizer: Mapping | None = None,
        calibrated: bool | None = None,
        sample_size: int | None = DEFAULT_SAMPLE_SIZE,
        map_method: str = "pca",
        random_state: int | None = 0,
    ) -> "ReportData":
        """Check the arrays :func:`~hf_textcluster.apps.report.render_report` was given and compute what the page
        shows from them.

        Args:
            texts: The N texts.
            probabilities: N x K soft assignments (``model.predict_proba``); a text's cluster is its argmax.
            embeddings: N x d embeddings the map projects (``model.embed``).
            confidence, distance, is_outlier: N values each, as ``model.predict_with_confidence`` returns them;
                without them the confidence is the top probability and no text is flagged.
            labels: N known classes (optional): the report adds ACC / NMI / ARI and the confusion.
            label_names: Class names when ``labels`` are integer ids.
            cluster_names: cluster id -> name (e.g. ``model.config.id2label``); default: top keywords.
            keywords: cluster id -> keywords; default: c-TF-IDF on ``texts``.
            keyword_vectorizer: the settings c-TF-IDF counts words with (a model's
                ``config.keyword_vectorizer``; default: English stop words).
            calibrated: Whether ``confidence`` is calibrated (the histogram's axis says which); default: whether
                ``distance`` was given.
            sample_size: At most this many texts in the map (a seeded sample); None maps all. Sizes count all texts.
            map_method: ``"umap"``, ``"tsne"`` or ``"pca"`` (``render_report`` resolves its ``"auto"``).
            random_state: Seed of the sample and the projection.

        Raises:
            ValueError: no usable texts, fewer than 4, arrays of another length, a bad ``sample_size``.

        Example:
            >>> data = ReportData.from_arrays(texts, probabilities, embeddings)  # doctest: +SKIP
        """
        texts = validate_texts(texts)
        n = len(texts)
        probs, confidence, distance, is_outlier = _checked_outputs(n, probabilities, confidence, distance, is_outlier)
        embeddings = np.asarray(embeddings, dtype=np.float32)
        if embeddings.ndim != 2 or len(embeddings) != n:
            raise ValueError(f"`embeddings` must be a {n} x d matrix (one row per text), got shape {embeddings.shape}.")
        if n < 4:
            raise ValueError(f"A report needs at least 4 texts (its map does), got {n}.")
        rows = sample_rows(n, sample_size, random_state)
        clusters, num_clusters = probs.argmax(axis=1), probs.shape[1]
        from ..representation import ClassTfidfRepresentation

        representation = ClassTfidfRepresentation(top_n=NUM_KEYWORDS, vectorizer_model=keyword_vectorizer)
        weights = representation.extract_weights(texts, clusters, num_clusters)
        if keywords is None:
            keywords = {k: [word for word, _ in scored] for k, scored in weights.items()}
        names = _names_by_id(cluster_names, keywords, num_clusters)
        outputs = {"confidence": confidence, "distance": distance, "is_outlier": is_outlier}
        return cls(
            texts=texts,
            embeddings=embeddings,
            clusters=clusters,
            num_clusters=num_clusters,
            **outputs,
            calibrated=distance is not None if calibrated is None else bool(calibrated),
            labels=check_rows("labels", labels, n),
            label_names=label_names,
            names=names,
            weights=weights,
            summaries=cluster_summaries(texts, probs, cluster_names=names, keywords=keywords, **outputs),
            rows=rows,
            map_method=map_method,
            random_state=random_state,
        )
