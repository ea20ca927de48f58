"""The collator that tokenizes a batch's text views, and the check that a trainer's datasets hold them; how long the
texts are (the warning about texts cut at ``max_length``, and the length the default reads them to)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from transformers.utils import logging

from ..modeling.validation import MAX_CHARS_PER_TOKEN, clip_text

logger = logging.get_logger(__name__)


# The lengths the default reads texts to: a short text is read to 32 tokens (what the short-text papers use), a longer
# one to the first of these that covers COVERED of the texts, within the encoder's own limit.
READING_LENGTHS = (32, 64, 128, 256, 512)
COVERED = 0.95


def token_counts(
    texts: Sequence[str], tokenizer, max_length: int, sample_size: int = 5000, seed: int = 0
) -> np.ndarray:
    """Token counts (special tokens included) of a seeded sample of at most ``sample_size`` of ``texts``, each cut to
    what ``max_length`` tokens can hold first (tokenizing a million texts, or one huge one, would take minutes)."""
    n = len(texts)
    rows = range(n) if n <= sample_size else np.random.default_rng(seed).choice(n, size=sample_size, replace=False)
    # every count whole (clipping bounds them), and no "longer than the model's maximum" warning from the tokenizer
    bound = MAX_CHARS_PER_TOKEN * max_length + 2
    encoded = tokenizer([clip_text(texts[int(i)], max_length) for i in rows], truncation=True, max_length=bound)
    return np.asarray([len(ids) for ids in encoded["input_ids"]], dtype=int)


def reading_length(texts: Sequence[str], tokenizer, limit: int, seed: int = 0) -> int:
    """The number of tokens the default reads each text to: the first of :data:`READING_LENGTHS` that holds
    :data:`COVERED` of ``texts`` whole (measured on a seeded sample), at most ``limit`` (the encoder's)."""
    counts = token_counts(texts, tokenizer, min(limit, READING_LENGTHS[-1]) + 1, seed=seed)
    needed = float(np.quantile(counts, COVERED)) if len(counts) else 0.0
    return min(limit, next((n for n in READING_LENGTHS if n >= needed), READING_LENGTHS[-1]))


def check_text_columns(trainer_name: str, views: Mapping[str, str], train_dataset, eval_dataset) -> None:
    """Refuse datasets without the columns the trainer ``trainer_name`` reads: its ``views`` in ``train_dataset``,
    ``text`` in ``eval_dataset`` (a dataset without ``column_names``, or None, is not checked)."""
    for name, dataset, needed in (
        ("train_dataset", train_dataset, list(views.values())),
        ("eval_dataset", eval_dataset, ["text"]),
    ):
        missing = [c for c in needed if c not in getattr(dataset, "column_names", needed)]
        if missing:
            augmented = "augmented views (`data.add_augmented_views`, or a benchmark loaded with `augmentation=`)"
            fix = "a 'text' column" if missing == ["text"] else augmented
            raise ValueError(f"`{name}` lacks the columns {missing} that {trainer_name} reads: give it {fix}.")


def warn_if_truncated(
    texts: Sequence[str], tokenizer, max_length: int, sample_size: int = 5000, seed: int = 0
) -> float:
    """Warn when training texts are longer than ``max_length`` tokens (they are cut); returns the share cut, measured
    on a seeded sample of at most ``sample_size`` texts."""
    n = len(texts)
    lengths = token_counts(texts, tokenizer, max_length, sample_size, seed)
    share = float((lengths > max_length).mean()) if len(lengths) else 0.0
    if share > 0:
        # a warning from 1% of the texts on (short-text corpora have a few long outliers), a note below that
        (logger.warning if share >= 0.01 else logger.info)(
            f"{100 * share:.1f}% of the training "
            f"texts{' (in a sample of %d)' % len(lengths) if n > sample_size else ''} "
            f"are longer than max_length={max_length} tokens and are truncated to it (the longest has {lengths.max()} "
            f"tokens, the median {int(np.median(lengths))}). If their ends matter, raise it (--config max_length=N, "
            "at most the encoder's position limit; longer is slower) or split long documents into passages."
        )
    return share


@dataclass(eq=False)
class TextViewsCollator:
    """Tokenizes one or more text columns of a batch of rows into ``{prefix}input_ids`` / ``{prefix}attention_mask``.

    All views are tokenized in one call and padded to one common length, so a trainer can run them through the
    encoder as one concatenated batch. ``index`` (row positions in the dataset) is passed through when present. With
    ``word_ids``, ``{prefix}word_ids`` gives each token's word number in its text (-1 for special and padding tokens),
    for noise that deletes whole words.
    """

    tokenizer: Any
    max_length: int
    views: dict[str, str] = field(default_factory=lambda: {"": "text"})  # output prefix -> dataset column
    pad_to_max_length: bool = False
    word_ids: bool = False

    def __post_init__(self):
        if self.word_ids and not getattr(self.tokenizer, "is_fast", False):
            raise ValueError(
                "Word-level noise needs a fast tokenizer (`tokenizer.is_fast`): load the encoder's "
                "tokenizer with `AutoTokenizer.from_pretrained(..., use_fast=True)`."
            )

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        texts = [clip_text(row[column], self.max_length) for column in self.views.values() for row in rows]
        encoded = self.tokenizer(
            texts,
            padding="max_length" if self.pad_to_max_length else True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        batch: dict[str, torch.Tensor] = {}
        n = len(rows)
        for view_index, prefix in enumerate(self.views):
            for key, value in encoded.items():
                batch[f"{prefix}{key}"] = value[view_index * n : (view_index + 1) * n]
            if self.word_ids:
                batch[f"{prefix}word_ids"] = torch.tensor(
                    [[-1 if w is None else w for w in encoded.word_ids(view_index * n + i)] for i in range(n)],
                    dtype=torch.long,
                )
        if "index" in rows[0]:
            batch["index"] = torch.tensor([row["index"] for row in rows], dtype=torch.long)
        return batch
