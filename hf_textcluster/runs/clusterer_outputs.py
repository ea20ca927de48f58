"""What a fitted :class:`~hf_textcluster.runs.clusterer.Clusterer` shows of its texts, by BERTopic's names: each
text's cluster and confidence (``labels_``, ``probabilities_``) and the plotly figures of its clusters
(``visualize_documents``, ``visualize_barchart``, ``visualize_hierarchy``, ``visualize_clusters``). Figures render in
Jupyter without a server (plotly's JavaScript goes into the notebook) and ``fig.write_html(path)`` saves one.

The base class of ``Clusterer``, apart because it only reads: it needs ``model``, the training texts
(``_texts_for``) and the embeddings ``fit`` kept (``_embedded``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..figures.clusters import (
    MAX_BAR_CLUSTERS,
    cluster_centres,
    cluster_map_figure,
    documents_figure,
    hierarchy_figure,
    keyword_bars_figure,
)
from ..figures.projection import resolve_projection
from ..modeling.validation import validate_texts
from ..representation.ctfidf import keyword_representation
from ..representation.summary import OUTLIER_NAME, assign_embeddings, assign_texts, cluster_info, sample_rows
from .record import RunRecord
from .training_texts import find_training_texts


class ClustererOutputs:
    """Each training text's cluster and confidence, and the figures of the clusters (``texts``: default the
    training texts)."""

    _model = None
    run: RunRecord
    _texts: list[str] | None = None  # the training texts, once known
    _embedded: tuple[list[str], np.ndarray] | None = None  # the training texts and their embeddings, once computed

    @property
    def model(self):
        """The served model; a clear error before :meth:`fit` or :meth:`load` made one."""
        if self._model is None:
            raise ValueError("This Clusterer has no model yet: call fit(texts) first, or use Clusterer.load(path).")
        return self._model

    @model.setter
    def model(self, model) -> None:
        self._model = model

    @property
    def texts(self) -> list[str] | None:
        """The training texts: those :meth:`fit` trained on, or those its run records (found when the file or
        benchmark is still there); None when unknown."""
        if self._texts is None:
            self._texts = find_training_texts(self.run)[0]
        return self._texts

    def _texts_for(self, op: str, texts: Sequence[str] | None, required: bool = True) -> list[str] | None:
        """``texts`` checked, else the training texts; one error naming how to pass them when required."""
        if texts is not None:
            self._given_texts = validate_texts(texts)  # the card written with the next save reads their keywords
            return self._given_texts
        if self.texts is None and required:
            why = find_training_texts(self.run)[1]
            raise ValueError(
                f"{op} needs texts: pass the training texts (texts=..., --input FILE)"
                + (f"; {why}." if why else "; the run records none that can be found.")
            )
        return self.texts

    def cluster_info(self, texts: Sequence[str] | None = None, **kwargs):
        """A ``pandas.DataFrame`` of the clusters (BERTopic's ``get_topic_info``), from the summary of the training
        texts saved with the model, or computed on ``texts``: see
        :func:`~hf_textcluster.representation.summary.cluster_info`."""
        return cluster_info(self.model, texts, **kwargs)

    def predict(self, texts: Sequence[str], **kwargs) -> np.ndarray:
        """Each text's cluster id: ``model.predict`` (BERTopic's ``transform``); -1 for a text far from every cluster
        when the model flags outliers (``config.flag_outliers``: ``train --outliers``)."""
        model = self.model
        if not model.flags_outliers:
            return model.predict(texts, **kwargs)
        out = model.predict_with_confidence(texts, **kwargs)
        return np.where(out["is_outlier"], -1, out["cluster"])

    def _with_outliers(self, texts: Sequence[str], clusters, batch_size: int) -> np.ndarray:
        """``clusters`` of ``texts`` with -1 where the model flags an outlier (as :meth:`predict` says)."""
        if not self.model.flags_outliers:
            return np.asarray(clusters)
        return np.where(assign_texts(self.model, texts, batch_size).clusters == -1, -1, clusters)  # marked there

    @property
    def labels_(self) -> np.ndarray:
        """Each training text's cluster id, as :meth:`predict` gives it (after edits too; -1: an outlier)."""
        return self._outputs(None)[2]

    @property
    def probabilities_(self) -> np.ndarray:
        """Each training text's confidence in its cluster (calibrated when the model is: predict_with_confidence)."""
        return self._outputs(None)[3]

    def _outputs(self, texts: Sequence[str] | None, op: str = "labels_"):
        """``(texts, embeddings, clusters, confidence)`` of ``texts`` (default: the training texts, whose embeddings
        are kept)."""
        if texts is None and self._embedded is not None:
            texts, embeddings = self._embedded
        else:
            texts = self._texts_for(op, texts)
            embeddings = self.model.embed(texts, show_progress_bar=True)
            if texts is self._texts:
                self._embedded = (texts, embeddings)
        assigned = assign_embeddings(self.model, embeddings)
        return texts, embeddings, assigned.clusters, assigned.confidence

    # ----- figures: plotly Figures (BERTopic's visualize_*); texts default to the training texts --------------------
    def visualize_documents(self, texts=None, sample_size: int | None = 3000, map_method="auto", random_state=0):
        """The texts (a seeded sample of ``sample_size``) on a 2-D map of their embeddings (``map_method``:
        ``"auto"``, ``"umap"``, ``"tsne"``, ``"pca"``), coloured by cluster, the text on hover (BERTopic's
        ``visualize_documents``)."""
        method = resolve_projection(map_method, "map_method")
        texts, embeddings, clusters, confidence = self._outputs(texts, "visualize_documents")
        rows = sample_rows(len(texts), sample_size, random_state)
        return documents_figure(texts, embeddings, clusters, rows, self._names(), confidence, method, random_state)

    def visualize_barchart(self, texts=None, top_n_clusters: int = MAX_BAR_CLUSTERS, n_words: int = 5):
        """The top ``n_words`` keywords of the ``top_n_clusters`` largest clusters as bars of their c-TF-IDF weights
        (BERTopic's ``visualize_barchart``)."""
        texts, _, clusters, _ = self._outputs(texts, "visualize_barchart")
        k = self.model.config.num_clusters
        weights = keyword_representation(self.model.config, n_words).extract_weights(texts, clusters, k)
        sizes = np.bincount(clusters[clusters >= 0], minlength=k)
        order = [c for c in np.argsort(-sizes, kind="stable") if sizes[c]]
        return keyword_bars_figure(weights, order, self._names(), max_clusters=top_n_clusters, words=n_words)

    def visualize_hierarchy(self, texts=None):
        """The dendrogram of the clusters' centres: what a merge would join first (BERTopic's
        ``visualize_hierarchy``)."""
        ids, centres, _ = self._centres(texts, "visualize_hierarchy")
        return hierarchy_figure(ids, centres, self._names())

    def visualize_clusters(self, texts=None):
        """The clusters as discs at the 2-D projection of their centres, sized by their number of texts (BERTopic's
        ``visualize_topics``)."""
        return cluster_map_figure(*self._centres(texts, "visualize_clusters"), self._names())

    def _centres(self, texts, op: str):
        _, embeddings, clusters, _ = self._outputs(texts, op)
        return cluster_centres(embeddings, clusters, self.model.config.num_clusters)

    def _names(self) -> dict[int, str]:
        names = self.model.config.id2label or {}
        return {
            -1: OUTLIER_NAME,
            **{k: str(names.get(k, f"cluster_{k}")) for k in range(self.model.config.num_clusters)},
        }
