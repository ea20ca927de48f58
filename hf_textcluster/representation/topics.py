"""Topics a model learned (DEC-CRL's cluster-level topic model, β_k): keywords without looking at texts."""

from __future__ import annotations

from collections.abc import Sequence

from ._base import BaseRepresentation


class LearnedTopicsRepresentation(BaseRepresentation):
    """Each cluster's ``top_n`` most probable words under an even mix of the topics ``model`` learned for it
    (``model.cluster_top_words``); :meth:`topics` gives the words of each topic (``model.cluster_topics``).

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
        return self.model.cluster_top_words(top_n=self.top_n)

    def topics(self, top_n: int = 4) -> dict[int, list[list[str]]]:
        """``{cluster: [[word, ...] per topic]}``: the ``top_n`` words of each topic of each cluster."""
        return self.model.cluster_topics(top_n=top_n)
