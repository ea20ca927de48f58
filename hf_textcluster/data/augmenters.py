"""The augmenter base class, its seeding, and the pure-Python augmenters (no model, no extra dependency).

Every augmenter maps a text to one augmented text and is deterministic given a seed: the view ``k`` (1 or 2) of
the row ``i`` is drawn with a seed derived from ``(seed, i, k)`` (:func:`derive_seed`), so a row's views do not
depend on the other rows. The augmenters backed by nlpaug are in :mod:`~hf_textcluster.data.nlpaug_augmenters`;
:mod:`~hf_textcluster.data.augmentation` names them all and adds the views to a dataset.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from ..modeling.validation import check_scalar, validate_texts


def derive_seed(seed: int, index: int, view: int) -> int:
    """A 32-bit seed for view ``view`` of row ``index`` (stable across processes and Python versions)."""
    digest = hashlib.blake2b(f"{seed}:{index}:{view}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "little")


class TextAugmenter:
    """Base class: subclasses implement :meth:`augment_one` (or :meth:`augment_batch` for batched models).

    Subclasses also list in ``_config_keys`` the attributes that define their output; they form
    :meth:`config`, used for ``repr`` and for the cache fingerprint of
    :func:`~hf_textcluster.data.augmentation.add_augmented_views`.
    """

    name = "augmenter"
    _config_keys: tuple[str, ...] = ()
    #: Number of texts handed to :meth:`augment_batch` at once by
    #: :func:`~hf_textcluster.data.augmentation.add_augmented_views`.
    batch_size = 1000
    #: True when a view depends on how the rows are batched (one random stream per batch), not only on its row.
    batch_seeded = False

    def config(self) -> dict:
        return {"name": self.name, **{key: getattr(self, key) for key in self._config_keys}}

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={getattr(self, key)!r}" for key in self._config_keys)
        return f"{type(self).__name__}({args})"

    def augment_one(self, text: str, seed: int) -> str:
        raise NotImplementedError

    def augment_batch(self, texts: Sequence[str], seeds: Sequence[int]) -> list[str]:
        """One augmented text per input text; ``seeds[i]`` drives the randomness of ``texts[i]``."""
        return [self.augment_one(text, seed) for text, seed in zip(texts, seeds)]

    def __call__(self, texts, seed: int = 0, view: int = 1) -> list[str]:
        """Augment a list of texts (one augmented text each), deterministically given ``seed`` and ``view``."""
        texts = validate_texts(texts, "texts")
        return self.augment_batch(texts, [derive_seed(seed, i, view) for i in range(len(texts))])

    def views(self, texts, seed: int = 0) -> tuple[list[str], list[str]]:
        """Two views per text: ``(view1, view2)``. Unless ``batch_seeded``, the same views as
        :func:`~hf_textcluster.data.augmentation.add_augmented_views` gives with this ``seed``."""
        return self(texts, seed=seed, view=1), self(texts, seed=seed, view=2)


class VirtualAugmenter(TextAugmenter):
    """SCCL's "virtual" augmentation: both views are the original text (dropout makes the encodings differ)."""

    name = "virtual"

    def augment_one(self, text: str, seed: int) -> str:
        return text

    def augment_batch(self, texts, seeds) -> list[str]:
        return list(texts)


def check_probability(value, argument: str) -> float:
    """``value`` as a float in [0, 1]; the error names ``argument``."""
    return float(check_scalar(value, argument, (int, float), min_val=0, max_val=1))


class _WordAugmenter(TextAugmenter):
    """Changes the whitespace-separated words of a text (:meth:`augment_words`), joined again with single spaces; a
    text of one word is kept."""

    def augment_one(self, text: str, seed: int) -> str:
        words = text.split()
        return text if len(words) <= 1 else " ".join(self.augment_words(words, random.Random(seed)))

    def augment_words(self, words: list[str], rng: random.Random) -> list[str]:
        raise NotImplementedError


class RandomWordDeletion(_WordAugmenter):
    """Delete each whitespace-separated word with probability ``p`` (at least one word is always kept).

    The result joins the kept words with single spaces.
    """

    name = "word_deletion"
    _config_keys = ("p",)

    def __init__(self, p: float = 0.1):
        self.p = check_probability(p, "p")

    def augment_words(self, words: list[str], rng: random.Random) -> list[str]:
        kept = [word for word in words if rng.random() >= self.p]
        return kept or [rng.choice(words)]


class RandomWordSwap(_WordAugmenter):
    """Swap two randomly chosen word positions, ``n`` times (EDA's random swap). Texts of one word are kept."""

    name = "word_swap"
    _config_keys = ("n",)

    def __init__(self, n: int = 1):
        self.n = check_scalar(n, "n", int, min_val=1, hint="the number of swaps")

    def augment_words(self, words: list[str], rng: random.Random) -> list[str]:
        for _ in range(self.n):
            i, j = rng.sample(range(len(words)), 2)
            words[i], words[j] = words[j], words[i]
        return words
