"""Class-based TF-IDF keywords: the words frequent in one cluster and rare in the others (BERTopic's c-TF-IDF), in
the texts' language: the words they are counted with (stop words, or a whole scikit-learn ``CountVectorizer``'s
settings) are saved in the model's config (:data:`KEYWORDS_KEY`), so every later command counts them the same way."""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

from ._base import BaseRepresentation, check_clusters

# Words of at least two characters that start with a letter (``c++``, ``c#`` and ``node_js`` kept, numbers not).
TOKEN_PATTERN = r"(?u)\b[^\W\d_][\w+#]*[\w+#]\b"
# The config key of the CountVectorizer settings keywords are counted with (absent: English stop words).
KEYWORDS_KEY = "keyword_vectorizer"
STOP_WORDS_EXTRA = 'pip install stop-words (in "hf_textcluster[default]")'


def stop_word_list(stop_words) -> str | list[str] | None:
    """What ``CountVectorizer`` takes for ``stop_words``: ``"english"`` (scikit-learn's list), another language by
    name or ISO code (``"french"``, ``"de"``: the list of the ``stop-words`` package), a list of words, or None.

    Example:
        >>> "le" in stop_word_list("french")
        True
    """
    if stop_words is None or stop_words == "english":
        return stop_words
    if isinstance(stop_words, str):
        try:
            from stop_words import StopWordError, get_stop_words
        except ImportError as err:
            raise ImportError(f"`stop_words` {stop_words!r} needs the stop-words package: {STOP_WORDS_EXTRA}.") from err
        try:
            return get_stop_words(stop_words)
        except StopWordError:
            raise ValueError(
                f"`stop_words` {stop_words!r} is no language the stop-words package knows (e.g. 'french', 'german', "
                "'spanish'); give a language, a list of words, or None."
            ) from None
    if isinstance(stop_words, (list, tuple)) and all(isinstance(word, str) for word in stop_words):
        return list(stop_words)
    raise ValueError(f"`stop_words` must be a language name, a list of words or None; got {stop_words!r}.")


def keyword_vectorizer(stop_words="english", vectorizer_model=None) -> dict:
    """The settings keywords are counted with, as JSON (what the config saves): ``{"stop_words": ...}``, or the
    settings of ``vectorizer_model`` (a ``CountVectorizer``, or such settings as a dict) that differ from
    scikit-learn's defaults; it wins over ``stop_words``. Refused: another class, a setting JSON cannot hold.

    Example:
        >>> keyword_vectorizer(vectorizer_model=CountVectorizer(stop_words=["le"], ngram_range=(1, 2)))
        {'ngram_range': [1, 2], 'stop_words': ['le']}
    """
    if vectorizer_model is None:
        stop_word_list(stop_words)  # refused now, not when the first keywords are counted
        return {"stop_words": list(stop_words) if isinstance(stop_words, tuple) else stop_words}
    if isinstance(vectorizer_model, Mapping):
        params = dict(vectorizer_model)
    elif type(vectorizer_model) is CountVectorizer:
        defaults = CountVectorizer().get_params()
        params = {k: v for k, v in vectorizer_model.get_params().items() if v is not defaults[k] and v != defaults[k]}
    else:
        raise TypeError(
            f"`vectorizer_model` must be a scikit-learn CountVectorizer, got {type(vectorizer_model).__name__}."
        )
    for key, value in params.items():
        try:
            json.dumps(value)
        except TypeError:
            raise ValueError(
                f"`vectorizer_model`'s {key}={value!r} cannot be saved with the model (its config is JSON): give "
                "plain values (words, numbers, a token_pattern) instead."
            ) from None
    stop_word_list(params.get("stop_words"))
    return json.loads(json.dumps(params, sort_keys=True))  # tuples as lists, as they come back from the config


def keyword_representation(config=None, top_n: int = 8) -> ClassTfidfRepresentation:
    """The c-TF-IDF keywords of a model: counted with the settings saved in its ``config`` (:data:`KEYWORDS_KEY`)."""
    return ClassTfidfRepresentation(top_n=top_n, vectorizer_model=getattr(config, KEYWORDS_KEY, None))


def set_keyword_vectorizer(config, params: Mapping) -> None:
    """Save the keywords' settings (:func:`keyword_vectorizer`) in ``config``; English stop words, the default, are
    not written."""
    if dict(params) == {"stop_words": "english"}:
        if hasattr(config, KEYWORDS_KEY):
            delattr(config, KEYWORDS_KEY)
    else:
        setattr(config, KEYWORDS_KEY, dict(params))


class ClassTfidfRepresentation(BaseRepresentation):
    """The ``top_n`` most distinctive words of each cluster (class-based TF-IDF).

    The texts of a cluster are treated as one document; a word scores ``tf(word, cluster) * log(1 + A / f(word))``
    where ``tf`` is its share of the cluster's words, ``f`` its count over all clusters and ``A`` the average number of
    words per cluster, so words frequent in one cluster but rare elsewhere rank first. Empty clusters get ``[]``.

    Args:
        top_n: keywords per cluster.
        stop_words: ``"english"``, another language (``"french"``, ``"german"``, ...: :func:`stop_word_list`), a
            list of words, or None.
        vectorizer_model: a scikit-learn ``CountVectorizer`` (or its settings as a dict) the words are counted with
            instead (BERTopic's ``vectorizer_model``); words are at least two characters starting with a letter
            unless it sets a ``token_pattern``.

    Example:
        >>> ClassTfidfRepresentation(top_n=2).extract(["sql join", "sql table", "git push"], [0, 0, 1], 2)
        {0: ['sql', 'join'], 1: ['git', 'push']}
    """

    def __init__(self, top_n: int = 8, stop_words: str | list[str] | None = "english", vectorizer_model=None):
        self.top_n = top_n
        self.stop_words = stop_words
        self.vectorizer_model = vectorizer_model

    def extract(self, texts: Sequence[str], clusters: Sequence[int], num_clusters: int) -> dict[int, list[str]]:
        return {
            k: [word for word, _ in scored] for k, scored in self.extract_weights(texts, clusters, num_clusters).items()
        }

    def extract_weights(
        self, texts: Sequence[str], clusters: Sequence[int], num_clusters: int
    ) -> dict[int, list[tuple[str, float]]]:
        """The keywords of :meth:`extract` with their c-TF-IDF weights (what a keyword bar chart shows).

        Args:
            texts: the texts that were clustered.
            clusters: one cluster id per text.
            num_clusters: how many clusters the partition has (empty ones included).

        Returns:
            ``{cluster: [(keyword, weight), ...]}``, highest weight first; ``[]`` for a cluster with none.

        Raises:
            ValueError: ``texts`` and ``clusters`` of different lengths.

        Example:
            >>> scored = ClassTfidfRepresentation(top_n=1).extract_weights(["sql join", "git push"], [0, 1], 2)
            >>> ((word, weight),) = scored[0]
            >>> word
            'join'
        """
        texts, clusters = check_clusters(texts, clusters)
        documents = [" ".join(texts[i] for i in np.flatnonzero(clusters == k)) for k in range(num_clusters)]
        params = keyword_vectorizer(self.stop_words, self.vectorizer_model)
        params = {"token_pattern": TOKEN_PATTERN, **params, "stop_words": stop_word_list(params.get("stop_words"))}
        if "ngram_range" in params:
            params["ngram_range"] = tuple(params["ngram_range"])
        vectorizer = CountVectorizer(**params)
        try:
            with warnings.catch_warnings():  # a list's "aujourd'hui" splits into two words: still left out
                warnings.filterwarnings("ignore", message="Your stop_words may be inconsistent", category=UserWarning)
                counts = vectorizer.fit_transform(documents).toarray().astype(np.float64)
        except ValueError:  # an empty vocabulary: nothing but stop words / digits
            return {k: [] for k in range(num_clusters)}
        vocabulary = vectorizer.get_feature_names_out()
        # c-TF-IDF of the clusters x words counts
        words_per_cluster = counts.sum(axis=1, keepdims=True)
        tf = np.divide(counts, words_per_cluster, out=np.zeros_like(counts), where=words_per_cluster > 0)
        average_words = max(words_per_cluster.mean(), 1.0)
        scores = tf * np.log1p(average_words / np.maximum(counts.sum(axis=0), 1.0))
        keywords = {}
        for k in range(num_clusters):
            order = np.argsort(-scores[k], kind="stable")[: self.top_n]
            keywords[k] = [(str(vocabulary[i]), float(scores[k, i])) for i in order if scores[k, i] > 0]
        return keywords
