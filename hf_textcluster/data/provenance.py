"""Where a ``datasets.Dataset`` of texts came from, read from the dataset itself: the benchmark corpus a builder made
it from and the augmentation that made its ``text_aug1`` / ``text_aug2`` views. Training runs record both
(``training_run.json``), so a model card can say what a model was trained on even when it was given a Dataset.

>>> from hf_textcluster.data import add_augmented_views, load_texts
>>> views_augmentation(add_augmented_views(load_texts(["reset my password", "vpn drops"]), "word_deletion"))
'word_deletion'
"""

from __future__ import annotations

import datasets
from datasets.naming import camelcase_to_snakecase

from .benchmark import ShortTextClusteringBenchmark
from .corpora import CORPORA

VIEW_COLUMNS = ("text_aug1", "text_aug2")
_BUILDER_NAME = camelcase_to_snakecase(ShortTextClusteringBenchmark.__name__)


def benchmark_corpus(dataset: datasets.Dataset) -> str | None:
    """The benchmark corpus a Dataset was loaded from (``load_benchmark``, kept through ``shuffle`` / ``select`` /
    ``map``), or ``None`` for any other Dataset.

    Args:
        dataset: a ``datasets.Dataset``.

    Returns:
        The corpus name (``"stackoverflow"``, ...) or ``None``.
    """
    info = dataset.info
    if info.dataset_name == _BUILDER_NAME and info.config_name in CORPORA:
        return info.config_name
    return None


def views_augmentation(dataset: datasets.Dataset) -> str | None:
    """The augmentation that made a Dataset's ``text_aug1`` / ``text_aug2``: what the views' feature ``id`` names
    (the augmenter of :func:`~hf_textcluster.data.add_augmented_views`, or the family of precomputed views given).

    Args:
        dataset: a ``datasets.Dataset``.

    Returns:
        The augmenter or family name; ``"custom"`` for views of unknown origin; ``None`` without views.
    """
    if not set(VIEW_COLUMNS) <= set(dataset.column_names):
        return None
    return getattr(dataset.features[VIEW_COLUMNS[0]], "id", None) or "custom"
