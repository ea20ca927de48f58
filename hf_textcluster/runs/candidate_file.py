"""The candidate partitions a ``train --method auto`` run keeps beside its model
(:data:`~hf_textcluster.runs.saving.CANDIDATES_FILE`, one integer per training text each, safetensors, written by
:func:`~hf_textcluster.runs.saving.save_model_folder`): reading them, and serving one of them later without training.

``evaluate --model`` scores them, ``refine --serve NAME`` switches the model to one, and the benchmark re-scores
them with new criteria; the training texts' digest in the file's metadata makes sure they are the texts the run
partitioned.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from ..choosing.linear_heads import distil_partition
from ..choosing.serving import ServingChoice, apply_partition, partition_features
from ..modeling.input_checks import CANDIDATES
from ..modeling.modeling_utils import TextClusteringPreTrainedModel
from ..reuse import embed
from .record import texts_sha1
from .saving import CANDIDATES_FILE, SERVED_KEY

__all__ = ["check_kept_candidate", "kept_candidates", "read_candidates", "serve_kept_candidate", "texts_match"]


def read_candidates(
    model_dir: str | os.PathLike, served: bool = True
) -> tuple[dict[str, np.ndarray], dict[str, str]] | None:
    """The candidates a run kept (:data:`CANDIDATES_FILE`): (name -> partition of its training texts, metadata with
    ``texts_sha1`` and ``num_train_texts``), or None when the folder has none. ``served=False`` leaves out the
    served clusters (:data:`SERVED_KEY`).

    Example:
        >>> partitions, meta = read_candidates("runs/auto-so")    # doctest: +SKIP
        >>> sorted(partitions)[:2], meta["num_train_texts"]       # doctest: +SKIP
        (['consensus', 'contrastive/head'], '20000')
    """
    from safetensors import safe_open

    path = os.path.join(os.fspath(model_dir), CANDIDATES_FILE)
    if not os.path.isfile(path):
        return None
    with safe_open(path, framework="numpy") as f:
        metadata = dict(f.metadata() or {})
        names = [name for name in f.keys() if served or name != SERVED_KEY]  # noqa: SIM118 - a safetensors file is not iterable
        partitions = {name: f.get_tensor(name).astype(np.int64) for name in names}
    return partitions, metadata


def texts_match(texts: Sequence[str], metadata: Mapping[str, str]) -> bool:
    """Whether ``texts`` are the training texts a kept candidates file describes (same count and digest)."""
    return str(len(texts)) == metadata.get("num_train_texts") and texts_sha1(texts) == metadata.get("texts_sha1")


def serve_kept_candidate(
    model: TextClusteringPreTrainedModel,
    model_dir: str | os.PathLike,
    texts: Sequence[str],
    name: str,
    *,
    embeddings: np.ndarray | None = None,
    random_state: int = 0,
) -> ServingChoice:
    """Make ``model`` serve candidate ``name`` that a ``train --method auto`` run kept in ``model_dir``, without
    training: a linear head on the model's embeddings fitted to that partition of ``texts`` (the run's training
    texts; :func:`~hf_textcluster.choosing.linear_heads.distil_partition`).

    Args:
        model: the run's saved model (changed in place; calibrate it again afterwards).
        model_dir: the run's folder (its :data:`CANDIDATES_FILE`).
        texts: the run's training texts, in the order it trained on them.
        name: a kept candidate (see ``training_run.json``'s ``auto.candidates``).
        embeddings: ``model.embed(texts)`` when already computed.
        random_state: seed of the head's fit.

    Returns:
        A :class:`~hf_textcluster.choosing.serving.ServingChoice` (``criterion`` None: the candidate was asked for).

    Raises:
        ValueError: the folder keeps no candidates, ``name`` is not one of them (:func:`check_kept_candidate`), or
            ``texts`` are not the texts they partition.

    Example:
        >>> choice = serve_kept_candidate(model, "runs/auto", texts, "self_training/kmeans")   # doctest: +SKIP
    """
    partitions, metadata = check_kept_candidate(model_dir, name)
    if not texts_match(texts, metadata):
        raise ValueError(
            f"The kept candidates partition the run's {metadata.get('num_train_texts')} training texts; --input holds "
            f"{len(texts)} other texts. Pass the texts the run trained on, in the same order."
        )
    if embeddings is None:
        embeddings = embed(model, list(texts), show_progress_bar=False)
    features = partition_features(model, embeddings)
    fit = distil_partition(
        features, partitions[name], num_clusters=model.config.num_clusters, random_state=random_state
    )
    apply_partition(model, name, fit)
    return ServingChoice(
        served=name,
        criterion=None,
        scores={},
        labels=fit.labels,
        candidates={name: partitions[name]},
        serving=fit,
    )


def check_kept_candidate(model_dir: str | os.PathLike, name: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """One clear error unless ``model_dir`` keeps candidate ``name`` (:data:`CANDIDATES_FILE`); else the kept
    candidates (without the served clusters) and the file's metadata."""
    kept = read_candidates(model_dir, served=False) if os.path.isdir(os.fspath(model_dir)) else None
    if kept is None:
        raise ValueError(
            f"--serve {name!r} is not one of auto, {', '.join(CANDIDATES)}, and {os.fspath(model_dir)} keeps no "
            f"candidate partitions ({CANDIDATES_FILE}, written by `train --method auto`)."
        )
    partitions, metadata = kept
    if name not in partitions:
        raise ValueError(
            f"--serve {name!r} is not a kept candidate of {os.fspath(model_dir)}; pass one of {', '.join(partitions)}."
        )
    return partitions, metadata


def kept_candidates(
    model_dir: str | os.PathLike, texts: Sequence[str], served_labels: np.ndarray
) -> tuple[dict[str, np.ndarray], dict[str, str]] | None:
    """After the model of ``model_dir`` was made to serve another partition: its kept candidates (None without),
    with the served clusters of the training texts updated (dropped when ``texts`` are other texts, which the
    candidates do not partition), for the save that keeps them beside it."""
    kept = read_candidates(model_dir, served=False)
    if kept is None:
        return None
    partitions, metadata = kept
    if texts_match(texts, metadata):
        partitions[SERVED_KEY] = np.asarray(served_labels)
    return partitions, metadata
