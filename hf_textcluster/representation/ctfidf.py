"""Class-based TF-IDF keywords: the words frequent in one cluster and rare in the others (BERTopic's c-TF-IDF)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

from ._base import BaseRepresentation, check_clusters

# Words of at least two characters that start with a letter (``c++``, ``c#`` and ``node_js`` kept, numbers not).
TOKEN_PATTERN = r"(?u)\b[^\W\d_][\w+#]*[\w+#]\b"


class ClassTfidfRepresentation(BaseRepresentation):
    """The ``top_n`` most distinctive words of each cluster (class-based TF-IDF).

    The texts of a cluster are treated as one document; a word scores ``tf(word, cluster) * log(1 + A / f(word))``
    where ``tf`` is its share of the cluster's words, ``f`` its count over all clusters and ``A`` the average number of
    words per cluster, so words frequent in one cluster but rare elsewhere rank first. Empty clusters get ``[]``.

    Args:
        top_n: keywords per cluster.
        stop_words: passed to scikit-learn's ``CountVectorizer`` (``"english"``, a list, or None).

    Example:
        >>> ClassTfidfRepresentation(top_n=2).extract(["sql join", "sql table", "git push"], [0, 0, 1], 2)
        {0: ['sql', 'join'], 1: ['git', 'push']}
    """

    def __init__(self, top_n: int = 8, stop_words: str | list[str] | None = "english"):
        self.top_n = top_n
        self.stop_words = stop_words

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
        vectorizer = CountVectorizer(stop_words=self.stop_words, token_pattern=TOKEN_PATTERN, lowercase=True)
        try:
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
