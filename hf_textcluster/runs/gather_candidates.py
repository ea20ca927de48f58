"""The candidates of ``train --method auto``: every read-out of each trained signal, k-means and UMAP k-means on the
pretrained encoder's embeddings, and their consensus; and the criteria of a kept run's candidates computed again."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from ..choosing.candidate_choice import candidate_criteria
from ..choosing.consensus import consensus_partition
from ..choosing.criteria import AUTO_CRITERIA, CRITERIA, PRETRAINED, lexical_space
from ..choosing.serving import candidate_partitions, partition_features
from ..modeling.input_checks import CANDIDATES
from ..modeling.modeling_utils import TextClusteringPreTrainedModel
from ..models import get_method
from ..reuse import embed
from ..timing import phase
from .candidate_file import CANDIDATES_FILE, read_candidates, texts_match
from .cluster_count import EMBEDDING_CONFIG_KEYS
from .folder import read_training_run
from .signals import CONSENSUS, PRETRAINED_CANDIDATES, SIGNALS, SIGNALS_DIR

__all__ = ["gather_candidates", "rescore_kept_candidates"]


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
    embedder = _pretrained_embedder(first.model, encoder)
    embeddings = embed(embedder, texts, show_progress_bar=False, **first.trainer.encode_options)
    partitions, _ = candidate_partitions(embedder, embeddings, candidates=PRETRAINED_CANDIDATES, random_state=seed)
    features[PRETRAINED] = partition_features(embedder, embeddings)
    return {f"{PRETRAINED}/{name}": labels for name, labels in partitions.items()}


def _pretrained_embedder(model, encoder: str | None) -> TextClusteringPreTrainedModel:
    """The pretrained encoder, pooled and cut as the signals' models."""
    return TextClusteringPreTrainedModel.from_encoder_pretrained(
        encoder,
        num_clusters=model.config.num_clusters,
        **{k: getattr(model.config, k) for k in EMBEDDING_CONFIG_KEYS if hasattr(model.config, k)},
    ).to(model.device)


def rescore_kept_candidates(
    model_dir: str | os.PathLike,
    texts: Sequence[str],
    *,
    encoder: str | None = None,
    criteria: Sequence[str] = AUTO_CRITERIA,
    random_state: int = 0,
    precision: str = "auto",
) -> dict[str, dict[str, float]]:
    """The label-free criteria of the candidates a ``train --method auto`` run kept, computed again (e.g. with
    criteria added since): each kept signal's model and the pretrained encoder embed ``texts`` again.

    Args:
        model_dir: the run's folder (its :data:`CANDIDATES_FILE` and ``signals/``).
        texts: the run's training texts, in the order it trained on them.
        encoder: the run's pretrained encoder (default: the one its ``training_run.json`` records, else the
            default encoder).
        criteria: which of :data:`~hf_textcluster.choosing.criteria.AUTO_CRITERIA` to compute.
        random_state: seed of the criteria (the run's seed reproduces its own values).
        precision: of the encoding passes (``"auto"``, ``"fp32"``, ``"bf16"``; the run's own reproduces its values).

    Returns:
        ``{criterion: {candidate: value}}``.

    Raises:
        ValueError: the folder keeps no candidates or no signal models, or ``texts`` are not the texts they partition.

    Example:
        >>> values = rescore_kept_candidates("runs/auto-so", texts, criteria=["knn_holdout_shared"])  # doctest: +SKIP
    """
    kept = read_candidates(model_dir, served=False)
    if kept is None:
        raise ValueError(f"{os.fspath(model_dir)} keeps no candidate partitions ({CANDIDATES_FILE}).")
    partitions, metadata = kept
    if not texts_match(texts, metadata):
        raise ValueError("`texts` are not the training texts the kept candidates partition (count or digest differ).")
    # nothing to embed, unless a lexical criterion lacks its space (texts sharing too few words): then it falls back
    # on the embeddings, as in training
    spaces_read = {CRITERIA[c].space for c in criteria if c in CRITERIA}
    if spaces_read <= {None, "lexical"} and (
        "lexical" not in spaces_read or lexical_space(texts, random_state=random_state) is not None
    ):
        return candidate_criteria(partitions, {}, texts=texts, criteria=criteria, random_state=random_state)
    spaces, model = {}, None
    for name, signal in SIGNALS.items():
        folder = os.path.join(os.fspath(model_dir), SIGNALS_DIR, name)
        if os.path.isfile(os.path.join(folder, "config.json")):
            model = get_method(signal.method).model_class.from_pretrained(folder)
            embeddings = embed(model, list(texts), show_progress_bar=False, precision=precision)
            spaces[name] = partition_features(model, embeddings)
    if model is None:
        raise ValueError(
            f"{os.fspath(model_dir)} keeps no trained signal under {SIGNALS_DIR}/: train it with --keep-signals "
            "(keep_signals=True) to re-score its candidates in the signals' spaces."
        )
    embedder = _pretrained_embedder(model, encoder or (read_training_run(model_dir) or {}).get("encoder"))
    embeddings = embed(embedder, list(texts), show_progress_bar=False, precision=precision)
    spaces[PRETRAINED] = partition_features(embedder, embeddings)
    return candidate_criteria(partitions, spaces, texts=texts, criteria=criteria, random_state=random_state)
