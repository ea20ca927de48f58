"""Package-only code that sets and changes a clusterer's clusters: k-means (:mod:`.kmeans`) and the k-means start of
a model's head, a refined head (:mod:`.clusters`), merge, split, online update and the least typical texts
(:mod:`.curation`, with the weight arithmetic of :mod:`.rows`), and what an edit reads on texts (:mod:`.describing`:
names for the edited clusters, the closest clusters to merge, warnings about texts unlike the model's). Plain
functions that take the model: the served model (``hf_textcluster.modeling``, what remote code ships) holds none of
this, and an edited model serves, saves and ships like any other.
"""

from .clusters import initialize_clusters, serve_method_head, set_refined_head, uses_kmeans_init
from .curation import UPDATE_FAR_QUANTILE, least_typical, merge_clusters, split_cluster, start_online, update

__all__ = [
    "UPDATE_FAR_QUANTILE",
    "initialize_clusters",
    "least_typical",
    "merge_clusters",
    "serve_method_head",
    "set_refined_head",
    "split_cluster",
    "start_online",
    "uses_kmeans_init",
    "update",
]
