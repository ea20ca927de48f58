"""What a training run starts from: the k-means start (the clusters a method's head begins from, fitted once on the
main process from the training texts' embeddings, with their labels kept as the health checks' reference) and the
encoder's frozen lower layers."""

from __future__ import annotations

import time

import numpy as np
import torch
from transformers.utils import logging

from ..editing.clusters import initialize_clusters, uses_kmeans_init
from ..editing.kmeans import DEFAULT_KMEANS_MAX_SAMPLES, fit_kmeans
from ..modeling.input_checks import check_num_clusters
from .distributed import share_from_main

logger = logging.get_logger(__name__)


def _kmeans_options(trainer) -> dict:
    args = trainer.args
    return {
        "n_init": getattr(args, "kmeans_n_init", 10),
        "random_state": args.seed,
        "max_samples": getattr(args, "kmeans_max_samples", DEFAULT_KMEANS_MAX_SAMPLES),
    }


def _log_kmeans_start(trainer, start: str | None) -> None:
    """Say once per run which start the k-means came from (``kmeans_init="best"`` chooses it by inertia)."""
    if start is not None and not getattr(trainer, "_kmeans_start_logged", False):
        trainer._kmeans_start_logged = True
        logger.info(f"k-means (kmeans_init={getattr(trainer.args, 'kmeans_init', 'best')!r}) started from {start}.")


def run_kmeans(trainer, features: np.ndarray):
    """k-means (seeded, the run's restarts and sample size) on one row per training text, computed on the main
    process: a fitted ``KMeans`` (on a GPU, the torch k-means: :func:`~hf_textcluster.editing.kmeans.torch_kmeans`)."""
    if trainer.args.device.type == "cuda" and isinstance(features, np.ndarray):
        features = torch.from_numpy(features).to(trainer.args.device)
    init, k = getattr(trainer.args, "kmeans_init", "best"), trainer.model.config.num_clusters
    kmeans = share_from_main(trainer, lambda: fit_kmeans(features, k, init=init, **_kmeans_options(trainer)))
    _log_kmeans_start(trainer, getattr(kmeans, "start_", None))
    return kmeans


def kmeans_start(trainer, embeddings: np.ndarray | None = None) -> None:
    """k-means on the embeddings of the training texts (``embeddings``, N x d, when the caller has them); the model's
    cluster head starts from its centres (for methods whose head is a set of centroids; others fit their head in
    their own trainer). Its labels are kept as ``trainer.initial_kmeans_labels``."""
    model = trainer.model
    if not uses_kmeans_init(model):
        return
    if trainer.train_dataset is None:
        raise ValueError("Pass a `train_dataset`: its texts initialise the clusters.")
    check_num_clusters(model.config.num_clusters, len(trainer.train_dataset))  # before the encoding pass
    start = time.perf_counter()
    embeddings = trainer.embed_train_texts() if embeddings is None else embeddings
    init = getattr(trainer.args, "kmeans_init", "best")

    def fit():
        labels = initialize_clusters(model, embeddings=embeddings, kmeans_init=init, **_kmeans_options(trainer))
        return labels, model.cluster_head.state_dict()

    # Kept so that callers can score plain k-means on the same encoder, measured in the same run.
    trainer.initial_kmeans_labels, head_state = share_from_main(trainer, fit)
    _log_kmeans_start(trainer, getattr(model, "kmeans_start_", None))  # on the main process, where it ran
    if not trainer.accelerator.is_main_process:
        model.cluster_head.load_state_dict(head_state)
        model.config.centroids_initialized = True
    logger.info(f"Initialised {model.config.num_clusters} clusters by k-means in {time.perf_counter() - start:.1f}s.")


def freeze_lower_layers(encoder: torch.nn.Module, num_layers: int) -> None:
    """Stop training the encoder's embeddings and its lowest ``num_layers`` transformer layers (their parameters no
    longer require gradients, so the optimizer skips them and backward stops above them)."""
    if not num_layers:
        return
    total = getattr(encoder.config, "num_hidden_layers", None)
    layers = next(
        (m for m in encoder.modules() if isinstance(m, torch.nn.ModuleList) and total and len(m) == total), None
    )
    if layers is None or num_layers > total:
        raise ValueError(
            f"`frozen_layers`={num_layers}: the encoder has {total or 'no list of'} transformer layers; pass at most "
            f"{total or 0}."
        )
    embeddings = getattr(encoder, "embeddings", None) or encoder.get_input_embeddings()
    for module in (embeddings, *layers[:num_layers]):
        module.requires_grad_(False)
