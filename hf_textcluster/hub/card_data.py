"""What a model card says, gathered before anything is rendered: the measured metrics, each cluster's keywords, the
base encoder, the training arguments of the run (``training_run.json``) and the texts the keywords come from.

:class:`CardData` holds what one card needs; :mod:`hf_textcluster.hub.card_sections` renders it and
:func:`~hf_textcluster.hub.model_card.generate_model_card` fills the template with it.
"""

import dataclasses
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from transformers import PreTrainedConfig

from ..encoders import _PIP_SHIPPED_ENCODERS, shipped_encoder_id
from ..representation.ctfidf import keyword_representation
from ..representation.summary import sample_rows
from ..runs.recipes import load_recipe
from ..runs.record import RunRecord
from ..runs.training_texts import find_training_texts

# Metrics of the model-index, in display order: key in the metrics dict -> (model-index type, display name).
CARD_METRICS = {"acc": ("accuracy", "ACC"), "nmi": ("nmi", "NMI"), "ari": ("ari", "ARI")}
REQUIRED_METRICS = ("acc", "nmi")


class MetricsNotMeasuredWarning(UserWarning):
    """A card was written without some of the clustering metrics (ACC / NMI)."""


def normalize_metrics(metrics: Mapping[str, Any] | None) -> dict[str, float]:
    """``{"eval_acc": .., "eval_kmeans_nmi": ..}`` or ``{"acc": ..}`` -> ``{"acc": .., "kmeans_nmi": ..}`` (floats
    only; ``None`` / NaN values are dropped, i.e. count as not measured)."""
    return {
        key.removeprefix("eval_"): float(value)
        for key, value in (metrics or {}).items()
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
    }


def encoder_hub_id(name_or_path: str | None) -> str | None:
    """A hub id for ``base_model``: a pip-shipped encoder's folder maps back to its hub id; other local folders
    have none."""
    if not name_or_path:
        return None
    name_or_path = str(name_or_path)
    if name_or_path in _PIP_SHIPPED_ENCODERS:
        return name_or_path
    local = os.path.exists(name_or_path) or os.path.isabs(name_or_path) or name_or_path.count("/") != 1
    return shipped_encoder_id(name_or_path) or (None if local else name_or_path)


def method_fields(config) -> dict[str, Any]:
    """The config fields a clusterer adds to ``PreTrainedConfig`` (K, pooling, the method's hyper-parameters)."""
    skip = {f.name for f in dataclasses.fields(PreTrainedConfig)} | {"encoder", "centroids_initialized"}
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name not in skip}


def training_arguments(run: RunRecord) -> dict[str, Any]:
    if not run.method:
        return {}
    try:
        values = dict(load_recipe(run.method, run.recipe or "cpu", run.dataset)["training"])
    except ValueError:
        values = {}
    values.update(run.training_overrides or {})
    if run.schedule and run.schedule.max_steps:  # the steps its schedule gave it (sized to its corpus), not the cap
        values["max_steps"] = run.schedule.max_steps
    values["seed"] = run.seed or 0
    return values


def served_partition(config) -> str:
    """The partition a model serves (``config.served_partition``; ``"head"``: the method's own cluster head)."""
    return getattr(config, "served_partition", None) or "head"


def measured_metrics(
    run: RunRecord, metrics: Mapping[str, Any] | None, stacklevel: int = 2
) -> tuple[dict[str, float], list[str]]:
    """The metrics to report (``metrics`` over the run's) and the display names of the required ones missing (a
    :class:`MetricsNotMeasuredWarning` at ``stacklevel`` says so)."""
    measured = normalize_metrics(run.metrics)
    measured.update(normalize_metrics(metrics))
    missing = [CARD_METRICS[key][1] for key in REQUIRED_METRICS if key not in measured]
    if missing:
        warnings.warn(
            f"The model card has no {' / '.join(missing)}: they were not measured (no `metrics=` and no evaluation in "
            "training_run.json). The card says 'not measured'; evaluate with `hf_textcluster.evaluate_clusterer` "
            "and pass `metrics=` to report them.",
            MetricsNotMeasuredWarning,
            stacklevel=stacklevel,
        )
    return measured, missing


def keywords_and_sizes(model, texts, clusters, top_n: int):
    """Each cluster's top keywords and size over ``texts`` (predicted with the model unless ``clusters`` given)."""
    if texts is None:
        return None, None
    if clusters is None:
        if model.tokenizer is None:
            raise ValueError("Computing cluster keywords needs the model's tokenizer; set `model.tokenizer`.")
        clusters = model.predict(texts)
    clusters = np.asarray(clusters, dtype=int)
    num_clusters = model.config.num_clusters
    keywords = keyword_representation(model.config, top_n).extract(texts, clusters, num_clusters)
    return keywords, {k: int((clusters == k).sum()) for k in range(num_clusters)}


def card_texts(
    run: RunRecord | None,
    texts: Sequence[str] | None,
    data_dir: str | os.PathLike | None,
    max_texts: int | None,
    card_kwargs: dict,
) -> tuple[list[str] | None, str | None]:
    """The texts a card's keywords come from: ``texts``, else the run's training texts (see
    :meth:`~hf_textcluster.runs.folder.RunFolder.training_texts`), sampled down to ``max_texts``.

    Args:
        run: the run record (``training_run.json``), or ``None``.
        texts: texts the caller passed, or ``None``.
        data_dir: the benchmark files' folder.
        max_texts: the sample size (``None``: all).
        card_kwargs: the card's arguments; ``why_no_keywords`` is set there when the run's texts cannot be found.

    Returns:
        ``(texts or None, why they are missing or None)``; a warning says why when they are missing.

    Example:
        >>> card_texts(None, ["a", "b", "c"], None, 2, {})[0]  # doctest: +SKIP
        ['a', 'c']
    """
    why = None
    if texts is None:
        texts, why = find_training_texts(run, data_dir)
        if why:
            warnings.warn(f"Cluster keywords are not computed: {why}.", stacklevel=3)
            card_kwargs.setdefault("why_no_keywords", why)
    if texts is not None:
        rows = list(texts)
        texts = [rows[i] for i in sample_rows(len(rows), max_texts)]
    return texts, why


@dataclasses.dataclass
class CardData:
    """What the card of one model says, gathered by :func:`~hf_textcluster.hub.model_card.generate_model_card` from
    the model, its run record and the card's arguments."""

    model: Any
    run: RunRecord
    method_name: str
    dataset_name: str | None
    measured: dict[str, float]
    missing: list[str]
    code_name: str | None
    texts: list[str] | None
    keywords: Mapping[int, Sequence[str]] | None
    sizes: Mapping[int, int] | None
    base_model: str | None
    model_name: str
    repo_id: str | None
    why_no_keywords: str | None = None

    @property
    def config(self):
        return self.model.config
