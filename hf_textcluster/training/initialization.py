"""The k-means start of a training run: the clusters a method's head begins from, fitted once on the main process
from the training texts' embeddings, with their labels kept as the health checks' reference."""

from __future__ import annotations

import time

import numpy as np
import torch
from transformers.utils import logging

from ..editing.clusters import initialize_clusters, uses_kmeans_init
from ..editing.kmeans import DEFAULT_KMEANS_MAX_SAMPLES, fit_kmeans
from ..modeling.input_checks import check_num_clusters

logger = logging.get_logger(__name__)


class ClusterInitMixin:
    """The part of :class:`~hf_textcluster.training.trainer.ClusteringTrainer` that fits the clusters before step 1
    (``initialize_clusters``) and runs the run's k-means (``kmeans``) for methods that re-cluster during training."""

    def kmeans(self, features: np.ndarray):
        """k-means (seeded, the run's restarts and sample size) on one row per training text: a fitted ``KMeans`` (on a
        GPU, the torch k-means there: :func:`~hf_textcluster.editing.kmeans.torch_kmeans`)."""
        if self.args.device.type == "cuda" and isinstance(features, np.ndarray):
            features = torch.from_numpy(features).to(self.args.device)
        kmeans = self.share_from_main(
            lambda: fit_kmeans(features, self.model.config.num_clusters, init=self._kmeans_init, **self._kmeans_options)
        )
        self._log_kmeans_start(getattr(kmeans, "start_", None))
        return kmeans

    @property
    def _kmeans_options(self) -> dict:
        return {
            "n_init": getattr(self.args, "kmeans_n_init", 10),
            "random_state": self.args.seed,
            "max_samples": getattr(self.args, "kmeans_max_samples", DEFAULT_KMEANS_MAX_SAMPLES),
        }

    @property
    def _kmeans_init(self) -> str:
        return getattr(self.args, "kmeans_init", "best")

    def _log_kmeans_start(self, start: str | None) -> None:
        """Say once per run which start the k-means came from (``kmeans_init="best"`` chooses it by inertia)."""
        if start is not None and not getattr(self, "_kmeans_start_logged", False):
            self._kmeans_start_logged = True
            logger.info(f"k-means (kmeans_init={self._kmeans_init!r}) started from {start}.")

    def initialize_clusters(self, embeddings: np.ndarray | None = None) -> None:
        """k-means on the embeddings of the training texts; the model's cluster head starts from its centres (for
        methods whose head is a set of centroids; others fit their head in their own trainer).

        ``embeddings`` (N x d, one row per training text) skips the encoding pass when a subclass already has them."""
        if not uses_kmeans_init(self.model):
            return
        if self.train_dataset is None:
            raise ValueError("Pass a `train_dataset`: its texts initialise the clusters.")
        check_num_clusters(self.model.config.num_clusters, len(self.train_dataset))  # before the encoding pass
        start = time.perf_counter()
        embeddings = self.embed_train_texts() if embeddings is None else embeddings

        def fit():
            options = self._kmeans_options
            labels = initialize_clusters(self.model, embeddings=embeddings, kmeans_init=self._kmeans_init, **options)
            return labels, self.model.cluster_head.state_dict()

        # Kept so that callers can score plain k-means on the same encoder, measured in the same run.
        self.initial_kmeans_labels, head_state = self.share_from_main(fit)
        self._log_kmeans_start(getattr(self.model, "kmeans_start_", None))  # on the main process, where it ran
        if not self.accelerator.is_main_process:
            self.model.cluster_head.load_state_dict(head_state)
            self.model.config.centroids_initialized = True
        logger.info(
            f"Initialised {self.model.config.num_clusters} clusters by k-means in {time.perf_counter() - start:.1f}s."
        )
