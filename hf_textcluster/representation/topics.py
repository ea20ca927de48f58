"""Topics a model learned (DEC-CRL's cluster-level topic model, β_k): keywords without looking at texts."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._base import BaseRepresentation


def _topic_word_distributions(model) -> torch.Tensor:
    """β (K x T x V, Eq. 11) of a model with a topic model (DEC-CRL), checked: trained, with topics and a vocabulary."""
    model.check_can_serve()
    if not model.config.has_topic_model:
        raise RuntimeError("This DEC-CRL model was trained with `reconstruction_module='lsr'`: it has no topics.")
    if not model.config.vocabulary:
        raise RuntimeError("This DEC-CRL model has no vocabulary yet: it is fitted on the training texts.")
    return model.topic_word_distributions().detach().float().cpu()


def cluster_topics(model, top_n: int = 4) -> dict[int, list[list[str]]]:
    """Each cluster's topics as its ``top_n`` most probable words (β_k, Eq. 11): ``{k: [[w, ...] per topic]}``."""
    beta = _topic_word_distributions(model)
    top = beta.topk(min(top_n, beta.shape[-1]), dim=-1).indices.numpy()
    words = model.config.vocabulary
    return {k: [[words[i] for i in topic] for topic in top[k]] for k in range(top.shape[0])}


def cluster_top_words(model, top_n: int = 8) -> dict[int, list[str]]:
    """Each cluster's ``top_n`` most probable words under an even mix of its topics (the mean over t of β_k^t)."""
    beta = _topic_word_distributions(model).mean(dim=1)  # K x V
    top = beta.topk(min(top_n, beta.shape[-1]), dim=-1).indices.numpy()
    return {k: [model.config.vocabulary[i] for i in top[k]] for k in range(top.shape[0])}


class LearnedTopicsRepresentation(BaseRepresentation):
    """Each cluster's ``top_n`` most probable words under an even mix of the topics ``model`` learned for it
    (:func:`cluster_top_words`); :meth:`topics` gives the words of each topic (:func:`cluster_topics`).

    Args:
        model: a clusterer with a topic model (``model.config.has_topic_model``, e.g. DEC-CRL).
        top_n: keywords per cluster.
    """

    def __init__(self, model, top_n: int = 8):
        if not getattr(model.config, "has_topic_model", False):
            raise ValueError(
                f"{type(model).__name__} learns no topics: describe its clusters with "
                "ClassTfidfRepresentation on their texts instead."
            )
        self.model = model
        self.top_n = top_n

    def extract(
        self, texts: Sequence[str] | None = None, clusters: Sequence[int] | None = None, num_clusters: int | None = None
    ) -> dict[int, list[str]]:
        """The learned keywords of every cluster (``texts`` / ``clusters`` are not needed: the model holds them)."""
        return cluster_top_words(self.model, top_n=self.top_n)

    def topics(self, top_n: int = 4) -> dict[int, list[list[str]]]:
        """``{cluster: [[word, ...] per topic]}``: the ``top_n`` words of each topic of each cluster."""
        return cluster_topics(self.model, top_n=top_n)
