"""The candidates of ``train --method auto``: those of the objectives trained on the pretrained encoder's cached
embeddings, every read-out of each fine-tuned signal, k-means and UMAP k-means on the pretrained encoder's embeddings,
and their consensus; and the model that serves the one chosen."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from ..choosing.cached import fit_adapter, fit_scan
from ..choosing.consensus import consensus_partition
from ..choosing.criteria import PRETRAINED
from ..choosing.linear_heads import distil_partition
from ..choosing.serving import apply_partition, candidate_partitions, partition_features
from ..data.augmenters import RandomWordDeletion
from ..modeling.input_checks import CANDIDATES
from ..modeling.modeling_utils import TextClusteringPreTrainedModel
from ..models.building import from_encoder_pretrained
from ..reuse import embed
from ..timing import phase
from .cluster_count import EMBEDDING_CONFIG_KEYS
from .signals import CACHED, CACHED_SIGNALS, CONSENSUS, PRETRAINED_CANDIDATES

__all__ = ["CachedCandidates", "cached_candidates", "gather_candidates", "pretrained_embedder", "serve_candidate"]

# the adapter's view of each text: each word deleted with this probability (one view, encoded once)
VIEW_DELETION = 0.2


class CachedCandidates(NamedTuple):
    """What the cached objectives made: candidate name -> partition, source -> its space (``adapter``), candidate ->
    the linear head on the pretrained space that serves it exactly (``pretrained/scan``), and each objective's
    seconds."""

    candidates: dict[str, np.ndarray]
    features: dict[str, np.ndarray]
    serving: dict[str, object]
    seconds: dict[str, float]
    num_clusters: int


def cached_candidates(first, texts: Sequence[str], signals: Sequence[str], seed: int, encoding: dict, deadline=None):
    """Train each cached objective of ``signals`` on the first saved model's embeddings of ``texts`` (``first``: a
    :class:`~hf_textcluster.runs.first_save.FirstModel`; its space, ``first.features``) and, for the adapter, on its
    embeddings of one seeded word-deletion view of each text (one encoding pass, ``encoding``: its batch size and
    precision). Past ``deadline`` (``time.monotonic()``; None: never) it raises ``KeyboardInterrupt`` before the next
    objective, as a time budget stops a fine-tuning signal. Returns a :class:`CachedCandidates`."""
    candidates, features, serving, seconds = {}, {}, {}, {}
    k = first.model.config.num_clusters
    for name in signals:
        if deadline is not None and time.monotonic() >= deadline:
            raise KeyboardInterrupt("")
        start = time.perf_counter()
        with phase(name):
            if name == "scan":
                made = fit_scan(first.features, k, random_state=seed)
                candidates[f"{PRETRAINED}/scan"], serving[f"{PRETRAINED}/scan"] = (
                    made.candidates["scan"],
                    made.serving["scan"],
                )
            else:
                with phase("view"):
                    views = RandomWordDeletion(p=VIEW_DELETION)(list(texts), seed=seed)
                    view = partition_features(
                        first.model, embed(first.model, views, show_progress_bar=False, **encoding)
                    )
                made = fit_adapter(first.features, view, k, random_state=seed)
                candidates.update({f"{name}/{base}": labels for base, labels in made.candidates.items()})
                features[name] = made.features
        seconds[name] = round(time.perf_counter() - start, 2)
    return CachedCandidates(candidates, features, serving, seconds, k)


def gather_candidates(
    results: Mapping,
    encoder: str | None,
    texts: Sequence[str],
    seed: int,
    pretrained: tuple | None = None,
    cached: CachedCandidates | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, tuple], dict[str, np.ndarray]]:
    """Every candidate of the cached objectives (``cached``), of the fine-tuned signals (``results``: name -> training
    result), the pretrained encoder's two and their consensus: (name -> partition of ``texts``, name -> how a signal
    serves it, source -> its space). ``pretrained``: the pretrained encoder's candidates and space when already made
    (the first saved model's; with no fine-tuned signal, ``pretrained`` and ``cached`` are given), else they are made
    here."""
    candidates, how, features = {}, {}, {}
    if cached is not None:
        candidates.update(cached.candidates)
        features.update(cached.features)
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
    if pretrained is not None:
        candidates.update(pretrained[0])
        features[PRETRAINED] = pretrained[1]
    else:
        with phase(PRETRAINED):
            candidates.update(_pretrained_candidates(next(iter(results.values())), encoder, texts, seed, features))
    num_clusters = next(iter(results.values())).model.config.num_clusters if results else cached.num_clusters
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


def serve_candidate(results, how, features, candidates, served: str, seed: int, first=None, cached=None):
    """Make one model serve the candidate ``served`` (of ``candidates``, gathered by :func:`gather_candidates` with
    ``how`` and ``features``): (its signal, or ``"cached"`` for the first saved model with a linear head; the texts'
    served clusters; its head's agreement with ``served``)."""
    if served in how:
        signal, base, serving = how[served]
        model = results[signal].model
        apply_partition(model, base, serving)
        model.config.served_partition = served
        return signal, candidates[served], 1.0
    if cached is not None and served in cached.serving:  # SCAN's own head on the pretrained space
        apply_partition(first.model, served, cached.serving[served])
        return CACHED, cached.serving[served].labels, 1.0 - cached.serving[served].changed
    labels = candidates[served]
    models = {signal: result.model for signal, result in results.items()}
    if first is not None and (not models or served.split("/")[0] in CACHED_SIGNALS):  # distilled on the pretrained
        models, features = {CACHED: first.model}, {**features, CACHED: features[PRETRAINED]}
    k = next(iter(models.values())).config.num_clusters
    fits = {signal: distil_partition(features[signal], labels, num_clusters=k, random_state=seed) for signal in models}
    # faithfulness: the share of texts whose cluster the head keeps (1 - what distilling it changed)
    signal = max(fits, key=lambda s: (-fits[s].changed, -list(fits).index(s)))
    apply_partition(models[signal], served, fits[signal])
    return signal, fits[signal].labels, 1.0 - fits[signal].changed
