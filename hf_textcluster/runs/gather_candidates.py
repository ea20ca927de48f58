"""The candidates of ``train --method auto``: every read-out of each trained signal, k-means and UMAP k-means on the
pretrained encoder's embeddings, and their consensus."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..choosing.consensus import consensus_partition
from ..choosing.criteria import PRETRAINED
from ..choosing.serving import candidate_partitions, partition_features
from ..modeling.input_checks import CANDIDATES
from ..modeling.modeling_utils import TextClusteringPreTrainedModel
from ..models.building import from_encoder_pretrained
from ..reuse import embed
from ..timing import phase
from .cluster_count import EMBEDDING_CONFIG_KEYS
from .signals import CONSENSUS, PRETRAINED_CANDIDATES

__all__ = ["gather_candidates", "pretrained_embedder"]


def gather_candidates(
    results: Mapping, encoder: str | None, texts: Sequence[str], seed: int, pretrained: tuple | None = None
) -> tuple[dict[str, np.ndarray], dict[str, tuple], dict[str, np.ndarray]]:
    """Every candidate of the trained signals (``results``: name -> training result), the pretrained encoder's two
    and their consensus: (name -> partition of ``texts``, name -> how a signal serves it, source -> its space).
    ``pretrained``: the pretrained encoder's candidates and space when already made (the first saved model's), else
    they are made here."""
    candidates, how, features = {}, {}, {}
    for name, result in results.items():
        encoding = result.trainer.encode_options
        with phase(f"{name}/embed"):
            embeddings = embed(result.model, texts, show_progress_bar=False, **encoding)
        features[name] = partition_features(result.model, embeddings)
        with phase(f"{name}/read-outs"):
            partitions, serving = candidate_partitions(
                result.model, embeddings, candidates=CANDIDATES, random_state=seed
            )
        for base, labels in partitions.items():
            candidates[f"{name}/{base}"] = labels
            how[f"{name}/{base}"] = (name, base, serving[base])
    first = next(iter(results.values()))
    num_clusters = first.model.config.num_clusters
    if pretrained is not None:
        candidates.update(pretrained[0])
        features[PRETRAINED] = pretrained[1]
    else:
        with phase(PRETRAINED):
            candidates.update(_pretrained_candidates(first, encoder, texts, seed, features))
    with phase(CONSENSUS):
        candidates[CONSENSUS] = consensus_partition(dict(candidates), num_clusters, random_state=seed)
    return candidates, how, features


def _pretrained_candidates(first, encoder, texts, seed, features: dict) -> dict[str, np.ndarray]:
    """The pretrained encoder's candidates of ``texts`` (its space added to ``features``)."""
    embedder = pretrained_embedder(first.model, encoder)
    embeddings = embed(embedder, texts, show_progress_bar=False, **first.trainer.encode_options)
    partitions, _ = candidate_partitions(embedder, embeddings, candidates=PRETRAINED_CANDIDATES, random_state=seed)
    features[PRETRAINED] = partition_features(embedder, embeddings)
    return {f"{PRETRAINED}/{name}": labels for name, labels in partitions.items()}


def pretrained_embedder(model, encoder: str | None) -> TextClusteringPreTrainedModel:
    """The pretrained encoder, pooled and cut as the signals' models."""
    return from_encoder_pretrained(
        TextClusteringPreTrainedModel,
        encoder,
        num_clusters=model.config.num_clusters,
        **{k: getattr(model.config, k) for k in EMBEDDING_CONFIG_KEYS if hasattr(model.config, k)},
    ).to(model.device)
