"""Loaders: a benchmark corpus or a user's list of texts, each as a ``datasets.Dataset`` (a user's file:
:mod:`~hf_textcluster.data.text_files`)."""

from __future__ import annotations

import logging
import os

import datasets

from ..modeling.input_checks import MISSING_LABEL, missing_labels, validate_labels
from ..modeling.validation import validate_texts
from .benchmark import DATA_DIR_ENV, ShortTextClusteringBenchmark
from .corpora import resolve_benchmark_name

__all__ = ["load_benchmark", "load_texts", "check_column", "default_data_dir"]


def default_data_dir() -> str | None:
    """The folder named by the ``HF_TEXTCLUSTER_DATA_DIR`` environment variable, or ``None``."""
    return os.environ.get(DATA_DIR_ENV) or None


def load_benchmark(
    name: str,
    data_dir: str | os.PathLike | None = None,
    augmentation: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    *,
    augmented_dir: str | os.PathLike | None = None,
) -> datasets.Dataset:
    """Load one benchmark corpus (split ``train``) as a ``datasets.Dataset``.

    Args:
        name: one of :data:`~hf_textcluster.data.BENCHMARKS`.
        data_dir: folder holding ``<name>.csv``. Defaults to ``$HF_TEXTCLUSTER_DATA_DIR``; when neither is set,
            the raw public sources are downloaded (needs internet once; the result is cached).
        augmentation: ``None``, ``"sccl_contextual"``, ``"mist_contextual"`` or ``"aecl_eda"``: join the
            precomputed views as ``text_aug1``/``text_aug2`` (see :mod:`hf_textcluster.data.precomputed`).
        cache_dir: the ``datasets`` cache folder (default: the ``datasets`` default).
        augmented_dir: folder holding ``<family>/<name>.csv``; default ``<data_dir>/augmented``.

    Returns:
        A dataset with columns ``text`` (str), ``label`` (``ClassLabel``) and, with augmentation,
        ``text_aug1``/``text_aug2``.
    """
    builder = ShortTextClusteringBenchmark(
        config_name=resolve_benchmark_name(name),
        data_dir=default_data_dir() if data_dir is None else data_dir,
        augmentation=augmentation,
        augmented_dir=augmented_dir,
        cache_dir=os.fspath(cache_dir) if cache_dir is not None else None,
    )
    builder.download_and_prepare()
    return builder.as_dataset(split="train")


def _numeric_aware_key(value: str):
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def load_texts(texts, labels=None, *, label_source: str = "`labels`") -> datasets.Dataset:
    """A ``datasets.Dataset`` with a ``text`` column (and a ``label`` column when ``labels`` is given).

    Args:
        texts: a list (or any iterable) of non-blank strings; checked with
            :func:`~hf_textcluster.data.validate_texts`.
        labels: optional, one label per text (str or int). They become a ``ClassLabel`` whose names are the
            distinct labels as strings, in numeric order when they are numbers (so integer labels ``0..K-1`` keep
            their values). Missing ones (None, NaN, blank) get the class id -1: they are clustered but left out of
            scoring, with one warning that says how many (see
            :func:`~hf_textcluster.modeling.input_checks.missing_labels`);
            labels that are all missing are an error.
        label_source: how the warning and errors name the labels (e.g. "column 'label' of data.csv").
    """
    texts = validate_texts(texts, "texts")
    columns: dict = {"text": texts}
    features: dict = {"text": datasets.Value("string")}
    if labels is not None:
        labels = validate_labels(labels, len(texts), label_source)
        missing = missing_labels(labels, encoded=False)
        if missing.any():
            logging.getLogger(__name__).warning(
                f"{int(missing.sum())} of {len(labels)} texts have no label in {label_source}: they are clustered "
                "but left out of the scores (never a class of their own)."
            )
        labels = [None if gone else str(label) for label, gone in zip(labels, missing)]
        names = sorted({label for label in labels if label is not None}, key=_numeric_aware_key)
        index = {name: i for i, name in enumerate(names)}
        columns["label"] = [MISSING_LABEL if label is None else index[label] for label in labels]
        features["label"] = datasets.ClassLabel(names=names)
    return datasets.Dataset.from_dict(columns, features=datasets.Features(features))


def check_column(source, column: str, available: list, argument: str = "text_column") -> None:
    """A clear error when ``source`` (a file, a dataset) has no ``column``: what it has, and which argument to set."""
    if column not in available:
        raise ValueError(
            f"{source} has no column {column!r}. Available columns: {list(available)}. Pass {argument}= one of them."
        )
