"""Reference baselines, the floor of every results table: BoW / TF-IDF + k-means, encoder embeddings + k-means, and
the BERTopic way (UMAP -> k-means on encoder embeddings, the package's own: ``fit_kmeans(init="umap")``, as ``train``
makes its ``pretrained/umap_kmeans`` partition).

Each baseline is a small estimator with scikit-learn's shape: ``fit_predict(texts) -> cluster ids`` and a
``random_state``. The SCCL paper's BoW/TF-IDF baselines use 1,500 features; so do these.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from ..choosing.auto_k import ClusterCountRequest
from ..editing.kmeans import DEFAULT_KMEANS_MAX_SAMPLES, fit_kmeans
from ..encoders import resolve_encoder
from ..modeling.input_checks import check_num_clusters
from ..modeling.validation import Options, validate_parameters, validate_texts

BASELINES = ("bow-kmeans", "tfidf-kmeans", "embeddings-kmeans", "umap-kmeans")
# the baselines on encoder embeddings, and how each starts k-means
EMBEDDING_BASELINES = {"embeddings-kmeans": "k-means++", "umap-kmeans": "umap"}


def _kmeans_labels(baseline, features, num_clusters: int) -> np.ndarray:
    """k-means of ``features`` with the baseline's restarts, seed and sample size."""
    kmeans = fit_kmeans(
        features,
        num_clusters,
        n_init=baseline.n_init,
        random_state=baseline.random_state,
        max_samples=baseline.kmeans_max_samples,
        init=getattr(baseline, "init", "k-means++"),
    )
    return kmeans.labels_


@dataclass
class VectorizerKMeans:
    """BoW (``kind="bow"``) or TF-IDF (``kind="tfidf"``) features + k-means."""

    num_clusters: int
    kind: str = "tfidf"
    max_features: int = 1500
    n_init: int = 10
    kmeans_max_samples: int | None = DEFAULT_KMEANS_MAX_SAMPLES  # centres fitted on a seeded sample above this
    random_state: int | None = 0
    labels_: np.ndarray | None = field(default=None, init=False)

    def fit_predict(self, texts: Sequence[str]) -> np.ndarray:
        texts = validate_texts(texts)
        check_num_clusters(self.num_clusters, len(texts))
        validate_parameters(self, {"kind": Options("bow", "tfidf")})
        vectorizer_cls = CountVectorizer if self.kind == "bow" else TfidfVectorizer
        try:
            features = vectorizer_cls(max_features=self.max_features, stop_words="english").fit_transform(texts)
        except ValueError as err:
            if "empty vocabulary" not in str(err):
                raise
            raise ValueError(
                f"`texts`: none of the {len(texts)} texts holds a word {self.kind}-kmeans can count (words of two or "
                "more characters that are not English stop words); use embeddings-kmeans, or pass texts with words."
            ) from None
        self.labels_ = _kmeans_labels(self, features, self.num_clusters)
        return self.labels_


@dataclass
class EmbeddingKMeans:
    """Sentence embeddings of a pretrained encoder (pooled and normalised as its sentence-transformers config says)
    + k-means. ``encoder`` is a hub id or local path; None means the pip-shipped default (all-MiniLM-L6-v2).
    ``init="umap"``: k-means on a UMAP reduction of the embeddings, the BERTopic way (see
    :func:`~hf_textcluster.editing.kmeans.fit_kmeans`).

    ``num_clusters="auto"`` chooses K from the embeddings without labels (:mod:`hf_textcluster.choosing.auto_k`), within
    ``k_range=(k_min, k_max)`` (None: the defaults) by ``k_criterion`` (None: the default criterion), or pass a
    :class:`~hf_textcluster.choosing.auto_k.ClusterCountRequest`; the choice is in ``auto_k_`` after ``fit_predict``."""

    num_clusters: int | str | ClusterCountRequest
    encoder: str | None = None
    batch_size: int = 128
    max_length: int | None = None
    n_init: int = 10
    kmeans_max_samples: int | None = DEFAULT_KMEANS_MAX_SAMPLES  # centres fitted on a seeded sample above this
    random_state: int | None = 0
    show_progress_bar: bool = True
    device: str | None = None
    init: str = "k-means++"
    k_range: tuple[int | None, int | None] | None = None
    k_criterion: str | None = None
    labels_: np.ndarray | None = field(default=None, init=False)
    embeddings_: np.ndarray | None = field(default=None, init=False)
    auto_k_: object | None = field(default=None, init=False)  # an AutoKResult with num_clusters="auto"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from sentence_transformers import SentenceTransformer  # here: a slow import, for this baseline only

        spec = resolve_encoder(self.encoder)
        model = SentenceTransformer(spec.name_or_path, device=self.device or "cpu")
        if self.max_length is not None:
            model.max_seq_length = self.max_length
        return model.encode(
            list(texts), batch_size=self.batch_size, show_progress_bar=self.show_progress_bar, convert_to_numpy=True
        )

    def fit_predict(self, texts: Sequence[str]) -> np.ndarray:
        texts = validate_texts(texts)
        request = ClusterCountRequest.parse(self.num_clusters, self.k_range, self.k_criterion)
        request.check(len(texts))  # K or the "auto" range, before the encoding pass
        self.embeddings_ = self.embed(texts)
        if request.is_auto:
            self.auto_k_ = request.choose(self.embeddings_, random_state=self.random_state)
        num_clusters = self.auto_k_.num_clusters if request.is_auto else request.num_clusters
        self.labels_ = _kmeans_labels(self, self.embeddings_, num_clusters)
        return self.labels_


def make_baseline(method: str, num_clusters: int | str | ClusterCountRequest, random_state: int | None = 0, **kwargs):
    """A baseline by its CLI name: ``bow-kmeans``, ``tfidf-kmeans``, ``embeddings-kmeans`` or ``umap-kmeans`` (the
    BERTopic way).

    ``num_clusters`` is K, or (the baselines on embeddings only) ``"auto"`` / a :class:`ClusterCountRequest`."""
    if isinstance(num_clusters, ClusterCountRequest) and method not in EMBEDDING_BASELINES:
        if num_clusters.is_auto:
            raise ValueError(
                "num_clusters='auto' chooses K from encoder embeddings: it works with embeddings-kmeans or "
                f"umap-kmeans, not {method}."
            )
        num_clusters = num_clusters.num_clusters
    if method in ("bow-kmeans", "tfidf-kmeans"):
        return VectorizerKMeans(num_clusters, kind=method.removesuffix("-kmeans"), random_state=random_state, **kwargs)
    if method in EMBEDDING_BASELINES:
        return EmbeddingKMeans(num_clusters, random_state=random_state, init=EMBEDDING_BASELINES[method], **kwargs)
    raise ValueError(f"Unknown baseline {method!r}; choose one of {', '.join(BASELINES)}.")
