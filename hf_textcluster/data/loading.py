"""Loaders: a benchmark corpus, the sample shipped in the package or a user's list of texts, each as a
``datasets.Dataset`` (a user's file: :mod:`~hf_textcluster.data.text_files`)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import datasets

from ..modeling.input_checks import MISSING_LABEL, missing_labels, validate_labels
from ..modeling.validation import validate_texts
from .benchmark import DATA_DIR_ENV, ShortTextClusteringBenchmark
from .corpora import CORPORA, resolve_benchmark_name
from .readers import read_text_label_csv

# The labelled sample shipped in the package (its source, sampling and licence: SOURCE.md beside it).
SAMPLE_FILE = Path(__file__).parent / "sample" / "stackoverflow_titles.csv.gz"


def default_data_dir() -> str | None:
    """The folder named by the ``HF_TEXTCLUSTER_DATA_DIR`` environment variable, or ``None``."""
    return os.environ.get(DATA_DIR_ENV) or None


def load_benchmark(
    name: str,
    data_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> datasets.Dataset:
    """Load one benchmark corpus (split ``train``) as a ``datasets.Dataset``.

    Args:
        name: one of :data:`~hf_textcluster.data.BENCHMARKS`.
        data_dir: folder holding ``<name>.csv``. Defaults to ``$HF_TEXTCLUSTER_DATA_DIR``; when neither is set,
            the raw public sources are downloaded (needs internet once; the result is cached).
        cache_dir: the ``datasets`` cache folder (default: the ``datasets`` default).

    Returns:
        A dataset with columns ``text`` (str) and ``label`` (``ClassLabel``); for the views some methods train on,
        see :func:`~hf_textcluster.data.add_augmented_views`.
    """
    builder = ShortTextClusteringBenchmark(
        config_name=resolve_benchmark_name(name),
        data_dir=default_data_dir() if data_dir is None else data_dir,
        cache_dir=os.fspath(cache_dir) if cache_dir is not None else None,
    )
    builder.download_and_prepare()
    return builder.as_dataset(split="train")


def load_sample() -> datasets.Dataset:
    """2,000 StackOverflow question titles with their tags, shipped in the package: offline, no download, no folder.

    A seeded stratified sample of the ``stackoverflow`` benchmark corpus (100 titles of each of its 20 tags; Xu et al.
    2017's release of Stack Overflow titles, CC BY-SA 3.0, see ``hf_textcluster/data/sample/SOURCE.md``). The demo
    clusters it; it is small enough to try a method in minutes on a CPU.

    Returns:
        A dataset with columns ``text`` (str) and ``label`` (``ClassLabel`` named by the 20 tags, as the
        ``stackoverflow`` benchmark's), in the corpus' order.

    Example:
        >>> from hf_textcluster.data import load_sample
        >>> sample = load_sample()
        >>> len(sample), sample.features["label"].names[:3]
        (2000, ['wordpress', 'oracle', 'svn'])
    """
    names = list(CORPORA["stackoverflow"].label_names)
    rows = read_text_label_csv(SAMPLE_FILE)
    features = datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=names)})
    info = datasets.DatasetInfo(
        description="2,000 StackOverflow question titles, 100 per tag (a sample of Xu et al. 2017's corpus).",
        license="CC BY-SA 3.0 (Stack Exchange content)",
        homepage="https://github.com/jacoxu/STC2",
        features=features,
    )
    columns = {"text": [text for text, _ in rows], "label": [names.index(label) for _, label in rows]}
    return datasets.Dataset.from_dict(columns, info=info)


def _numeric_aware_key(value: str):
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def load_texts(texts, labels=None, *, label_source: str = "`labels`") -> datasets.Dataset:
    """A ``datasets.Dataset`` with a ``text`` column (and a ``label`` column when ``labels`` is given).

    Args:
        texts: a list (or any iterable) of non-blank strings; checked with
            :func:`~hf_textcluster.modeling.validation.validate_texts`.
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
