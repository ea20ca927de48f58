"""TextClusteringPreTrainedModel: an encoder + pooling whose embedding is assigned to clusters by a method's head.

Part of the inference code that every pushed repository carries (see :mod:`hf_textcluster.hub.push`): this module, the
config, layers, pipeline and each method's configuration/modeling files import only torch, numpy, transformers and
each other, so that ``trust_remote_code=True`` works where hf_textcluster is not installed. Model cards, remote code
on save and one-commit pushes come from the package's Hub layer, imported on first use (``_package_layer`` below).
"""

from __future__ import annotations

import copy
import importlib
import json
import math
import numbers
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel
from transformers.utils import ModelOutput, logging

from .calibration import (
    DEFAULT_OUTLIER_QUANTILE,
    ClusterCalibration,
    check_outlier_quantile,
    quantile_at,
    quantile_rank,
)
from .cluster_edits import (
    OnlineCentres,
    UpdateResult,
    append_row,
    cohesive_group,
    head_inputs,
    merge_rows,
    split_rows,
)
from .configuration_utils import TextClusteringConfig, running_as_remote_code
from .kmeans import DEFAULT_KMEANS_MAX_SAMPLES, fit_kmeans
from .layers import pool_token_states
from .precision import autocast_dtype, quantize_int8, resolve_precision
from .validation import check_local_path, check_num_clusters, check_scalar, clip_text, validate_texts

logger = logging.get_logger(__name__)

# Encoding passes (k-means initialisation, targets, evaluation, predict) are inference: a batch far larger than a
# training batch keeps the matrix products efficient; texts are sorted by length so each batch pads little.
DEFAULT_ENCODE_BATCH_SIZE = 128
# The package's layers above the models that a model's own methods offer when the package is installed: the Hub layer
# (cards and remote code on save, one-commit pushes) and the encoder resolution (pip-shipped encoders offline, a
# sentence-transformers folder's pooling). Named here and imported on first use, never at import time and never as
# remote code (running_as_remote_code(): saving and pushing are then transformers' own, encoders hub ids or paths).
_PACKAGE_LAYERS = {"hub": "hf_textcluster.hub", "encoders": "hf_textcluster.encoders"}


def _package_layer(name: str):
    """The package's module ``_PACKAGE_LAYERS[name]``, imported on first use; ``None`` as remote code."""
    return None if running_as_remote_code() else importlib.import_module(_PACKAGE_LAYERS[name])


@dataclass
class ClusteringOutput(ModelOutput):
    """Output of a clusterer's forward pass.

    Args:
        loss: the training loss, when computed.
        embeddings: pooled sentence embeddings (batch x hidden).
        cluster_probs: soft cluster assignment q (batch x K); rows sum to 1.
        logits: ``log(cluster_probs)``, so that ``argmax(logits)`` is the cluster and ``Trainer`` metrics work
            unchanged.
        distance: cosine distance (batch,) of each embedding to its best cluster's calibrated centre; set by
            ``cluster_batch`` on a calibrated model only.
        confidence: the calibrated confidence (batch,) in [0, 1] (see ``calibrated_confidence``); set by
            ``cluster_batch`` on a calibrated model only.
    """

    loss: torch.Tensor | None = None
    embeddings: torch.Tensor | None = None
    cluster_probs: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    distance: torch.Tensor | None = None
    confidence: torch.Tensor | None = None


class EncodingPasses:
    """Where a model's whole-list encoding passes (``embed``, ``predict*``, ``calibrate``) run: here, in this process,
    batch after batch. A model's ``encoding_passes`` attribute holds one (None: this one);
    :func:`hf_textcluster.distributed.sharded_passes` sets one that splits each pass between processes."""

    def run(self, encode, texts: list[str], batch_size: int, show_progress_bar: bool | None) -> ClusteringOutput:
        """``encode(texts, show_progress_bar)``: the model's pass over ``texts`` (validated), cut into length-sorted
        batches of ``batch_size``, returning a ``ClusteringOutput`` of CPU tensors in the order of ``texts``."""
        return encode(texts, show_progress_bar)


LOCAL_PASSES = EncodingPasses()


class TextClusteringPreTrainedModel(PreTrainedModel):
    """Base class of all clusterers: builds the encoder from ``config.encoder`` (never downloads in ``__init__``),
    pools its token states into one embedding per text, and hands the embedding to the method's ``cluster_head``
    (see :mod:`hf_textcluster.modeling.layers` for what a head provides). Holds an optional ``tokenizer`` so that
    ``embed``/``predict`` take raw texts and ``save_pretrained`` writes a self-contained directory."""

    config_class = TextClusteringConfig
    config: TextClusteringConfig
    # submodules' types, for type checkers (nn.Module's attribute lookup would say "Tensor | Module")
    encoder: PreTrainedModel
    calibration: ClusterCalibration
    cluster_head: Any  # the method's head (its own class in each method's modeling file)
    cluster_mapping_: np.ndarray  # set on an edited copy: old cluster id -> new id
    tokenizer: Any
    base_model_prefix = "encoder"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True
    _supports_sdpa = True

    # How whole-list passes run (an EncodingPasses; None: in this process). A plain attribute, never saved.
    encoding_passes = None
    # A callable that resolves `encoder` (name_or_path, pooling); None: the package's resolve_encoder (see
    # _PACKAGE_LAYERS), or as remote code a hub id or path as given. Set it to resolve encoders your own way.
    encoder_resolver = None
    _ship_remote_code = False
    # The heads that hold one row per cluster (see cluster_edits): what merging, splitting and updating rewrite.
    _cluster_row_modules = ("cluster_head", "refined_head")
    # Checkpoints from before calibration have no `calibration.*` buffers: they load uncalibrated (zeros), silently.
    _keys_to_ignore_on_load_missing = [r"^calibration\."]

    def __init__(self, config: TextClusteringConfig):
        super().__init__(config)
        self.encoder = AutoModel.from_config(config.encoder)
        encoder_config: Any = config.encoder  # a PreTrainedConfig once the config's __post_init__ has run
        self.calibration = ClusterCalibration(config.num_clusters, encoder_config.hidden_size)
        if config.refined_head_dim:  # a refined partition, served instead of the method's head (see set_refined_head)
            self.refined_head = torch.nn.Linear(config.refined_head_dim, config.num_clusters)
        self.tokenizer = None

    # ----- weights -------------------------------------------------------------------------------------------
    @torch.no_grad()
    def _init_weights(self, module):
        if module is not self.encoder and any(module is m for m in self.encoder.modules()):
            self.encoder._init_weights(module)
            return
        super()._init_weights(module)
        reset = getattr(module, "reset_own_parameters", None)
        if reset is not None:  # a head's own parameters (centroids, biases): placeholders until k-means / training
            reset()

    # ----- forward -------------------------------------------------------------------------------------------
    def pool(self, token_states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return pool_token_states(token_states, attention_mask, self.config.pooling, self.config.normalize_embeddings)

    def encode(
        self, input_ids, attention_mask, token_type_ids=None, encoder: torch.nn.Module | None = None
    ) -> torch.Tensor:
        """Pooled embeddings of already tokenized texts (gradients flow; used by the trainers). ``encoder``: run this
        copy of the encoder instead (serving at int8 passes its quantized one)."""
        encoder_inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            encoder_inputs["token_type_ids"] = token_type_ids
        token_states = (encoder or self.encoder)(**encoder_inputs).last_hidden_state
        return self.pool(token_states, attention_mask)

    @torch.inference_mode()
    def cluster_batch(
        self, inputs: dict[str, torch.Tensor], precision: str | torch.dtype | None = "auto", with_clusters: bool = True
    ) -> ClusteringOutput:
        """The serving pass over one tokenized batch: what ``embed``, ``predict``, ``calibrate`` and the
        ``text-clustering`` pipeline run. Only the encoder runs at ``precision`` (see ``predict``: autocast, or its int8
        copy); the heads run in fp32 on its fp32 result, since bf16 would round the probabilities and flip near-ties.

        Args:
            inputs: the tokenizer's tensors (``input_ids``, ``attention_mask``, optionally ``token_type_ids``), on the
                model's device.
            precision: as for ``embed``.
            with_clusters: False for the embeddings only (the cluster fields are then None; no head needed).

        Returns:
            A ``ClusteringOutput`` of fp32 tensors: ``embeddings``; with clusters, ``cluster_probs`` and ``logits``, and
            ``distance`` once the model is calibrated (else None).

        Raises:
            ValueError: a bad ``precision``.
            RuntimeError: clusters are asked for and were never initialised.
        """
        precision = resolve_precision(precision, self.device, inference=True)
        if with_clusters:
            self._check_clusters_initialized()
        return self._cluster_batch(inputs, precision, with_clusters)

    def _cluster_batch(self, inputs: dict[str, torch.Tensor], precision: str, with_clusters: bool) -> ClusteringOutput:
        """``cluster_batch`` without its checks: ``precision`` is already resolved (``resolve_precision``)."""
        if precision == "int8":
            embeddings = self.encode(**inputs, encoder=self._int8_encoder()).float()
        else:
            dtype = autocast_dtype(precision, self.device)
            with torch.autocast(self.device.type, dtype=dtype, enabled=dtype is not None):
                embeddings = self.encode(**inputs).float()  # type: ignore[arg-type]  # the tokenizer's tensors
        if not with_clusters:
            return ClusteringOutput(embeddings=embeddings)
        probs = self.cluster_probabilities(embeddings).float()
        distance = confidence = None
        if self.is_calibrated:
            distance = self.calibration.distance(embeddings, probs.argmax(dim=-1))
            confidence = self.calibrated_confidence(embeddings, probs)
        return ClusteringOutput(
            embeddings=embeddings,
            cluster_probs=probs,
            logits=torch.log(probs.clamp_min(1e-12)),
            distance=distance,
            confidence=confidence,
        )

    def _int8_encoder(self) -> torch.nn.Module:
        """The encoder quantized to int8, made once and again only when its weights change (training steps and
        ``load_state_dict`` bump each parameter's version counter)."""
        state = (id(self.encoder), tuple((p.data_ptr(), p._version) for p in self.encoder.parameters()))
        cached = self.__dict__.get("_int8_cache")  # a plain attribute: not a submodule, so never saved
        if cached is None or cached[0] != state:
            cached = (state, quantize_int8(self.encoder))
            self.__dict__["_int8_cache"] = cached
        return cached[1]

    def cluster_features(self, embeddings: torch.Tensor) -> torch.Tensor:
        """The space the cluster head works in: the pooled embedding itself, unless a method maps it first."""
        return embeddings

    def kmeans_features(self, embeddings: torch.Tensor) -> torch.Tensor:
        """The space ``initialize_clusters`` runs k-means in and ``init_clusters_from_kmeans`` takes centres of: the
        cluster head's (``cluster_features``), unless a method re-clusters elsewhere (AECL: the embeddings)."""
        return self.cluster_features(embeddings)

    def head_probabilities(self, embeddings: torch.Tensor) -> torch.Tensor:
        """Soft assignment (batch x K) of pooled embeddings by the method's own ``cluster_head``."""
        return self.cluster_head(self.cluster_features(embeddings))

    def cluster_probabilities(self, embeddings: torch.Tensor) -> torch.Tensor:
        """Soft assignment (batch x K) of pooled embeddings by what the model serves: the method's head
        (``head_probabilities``), or the linear ``refined_head`` on the L2-normalised ``kmeans_features`` once a
        refined partition was set (``set_refined_head``)."""
        if not self.config.refined_head_dim:
            return self.head_probabilities(embeddings)
        features = torch.nn.functional.normalize(self.kmeans_features(embeddings).float(), dim=-1)
        return torch.softmax(self.refined_head(features).float(), dim=-1)

    @torch.no_grad()
    def set_refined_head(self, coef, intercept, served_partition: str = "refined") -> None:
        """Serve a refined partition: a linear layer (K x d weights ``coef``, K biases ``intercept``) on the
        L2-normalised ``kmeans_features`` replaces the method's head for prediction (the head's weights are kept).
        The calibration no longer describes the clusters: calibrate again.

        Example:
            >>> result = refine_partition(features, labels)            # doctest: +SKIP
            >>> model.set_refined_head(result.coef, result.intercept)   # doctest: +SKIP
        """
        coef = torch.as_tensor(np.asarray(coef), dtype=torch.float32)
        intercept = torch.as_tensor(np.asarray(intercept), dtype=torch.float32)
        num_clusters = self.config.num_clusters
        if coef.ndim != 2 or coef.shape[0] != num_clusters or tuple(intercept.shape) != (num_clusters,):
            raise ValueError(
                f"`coef` must be {num_clusters} x d and `intercept` of length {num_clusters} "
                f"(num_clusters), got {tuple(coef.shape)} and {tuple(intercept.shape)}."
            )
        if not (torch.isfinite(coef).all() and torch.isfinite(intercept).all()):
            raise ValueError("`coef` and `intercept` must be finite.")
        self._clusters_set()
        head = torch.nn.Linear(coef.shape[1], num_clusters).to(self.device)
        head.weight.copy_(coef)
        head.bias.copy_(intercept)
        self.refined_head = head
        self.config.refined_head_dim = int(coef.shape[1])
        self.config.served_partition = served_partition

    def serve_method_head(self) -> None:
        """Serve the method's own head again (its weights were kept under a refined head): what training continues
        from, since the method's losses train that head. The calibration no longer describes the clusters."""
        if self.config.refined_head_dim:
            self._clusters_set()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        return_dict: bool | None = None,
    ) -> ClusteringOutput | tuple:
        if input_ids is None:
            raise ValueError("`input_ids` is required: tokenize the texts first, or call `model.predict(texts)`.")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        self._check_clusters_initialized()  # random centroids would give meaningless clusters
        embeddings = self.encode(input_ids, attention_mask, token_type_ids)
        probs = self.cluster_probabilities(embeddings)
        output = ClusteringOutput(embeddings=embeddings, cluster_probs=probs, logits=torch.log(probs.clamp_min(1e-12)))
        return output if return_dict is not False else output.to_tuple()

    # ----- clusters ------------------------------------------------------------------------------------------
    def _check_clusters_initialized(self):
        if not self.config.centroids_initialized:
            raise RuntimeError(
                f"This {type(self).__name__}'s clusters were never initialised: train it (with the hf_textcluster "
                "package: the trainer fits them first) or call `model.initialize_clusters(texts)` before predicting."
            )

    @property
    def uses_kmeans_init(self) -> bool:
        """Whether training starts from k-means on the corpus (the head defines ``init_from_kmeans``)."""
        return callable(getattr(getattr(self, "cluster_head", None), "init_from_kmeans", None))

    def init_clusters_from_kmeans(self, centers: np.ndarray | torch.Tensor) -> None:
        """Set the cluster head from k-means centres (K x the ``kmeans_features`` size) so that it predicts each
        text's nearest centre, and mark the clusters initialised. The old calibration no longer describes them."""
        if not self.uses_kmeans_init:
            raise NotImplementedError(
                f"{type(self).__name__}'s cluster head is a classifier its trainer fits, not centres: it cannot be set "
                "from k-means. For k-means on its trained embeddings use "
                "`KMeans(model.config.num_clusters).fit(model.embed(texts))`."
            )
        self.cluster_head.init_from_kmeans(np.asarray(centers, dtype=np.float32))
        self._clusters_set()

    def _clusters_set(self) -> None:
        self.config.centroids_initialized = True
        self.config.num_calibration_texts = 0  # calibrated on other clusters: calibrate again
        # New centres replace whatever was served before (a refined head included).
        self.config.refined_head_dim = 0
        self.config.served_partition = "head"
        self.__dict__["_modules"].pop("refined_head", None)

    def initialize_clusters(
        self,
        texts: Sequence[str] | None = None,
        embeddings: np.ndarray | None = None,
        random_state: int | None = 0,
        n_init: int = 10,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        show_progress_bar: bool | None = None,
        precision: str | torch.dtype | None = "auto",
        max_samples: int | None = DEFAULT_KMEANS_MAX_SAMPLES,
        kmeans_init: str = "best",
    ) -> np.ndarray:
        """Fit k-means (K = ``config.num_clusters``) on the embeddings of ``texts`` (or on ``embeddings``) and start
        the cluster head from its centres. Returns the k-means labels of every text. On a trained model this
        re-clusters: ``predict`` then gives the nearest k-means centre on the trained embeddings (the benchmark's
        "k-means after"; ``hf-textcluster recluster``); call ``calibrate`` again afterwards. ``max_samples``: the
        centres
        are fitted on a seeded sample of at most this many texts (None: all); ``kmeans_init``: ``"best"`` (default: the
        lower inertia of k-means++ and of a run started from the UMAP clusters), ``"k-means++"`` or ``"umap"`` (see
        :func:`~hf_textcluster.modeling.kmeans.fit_kmeans`); ``kmeans_start_`` then says which start won."""
        num_clusters = self.config.num_clusters
        if embeddings is None:
            texts = validate_texts(texts)
            # before the encoding pass, not after; K clusters of copies of fewer texts would be meaningless
            check_num_clusters(num_clusters, len(texts), texts=texts)
            embeddings = self.embed(
                texts, batch_size=batch_size, show_progress_bar=show_progress_bar, precision=precision
            )
        embeddings = np.asarray(embeddings, dtype=np.float32)
        check_num_clusters(num_clusters, embeddings.shape[0])
        distinct = len({row.tobytes() for row in np.ascontiguousarray(embeddings)})
        if distinct < num_clusters:
            raise ValueError(
                f"`num_clusters` ({num_clusters}) is larger than the number of distinct embeddings "
                f"({distinct} of {embeddings.shape[0]}): k-means cannot find that many clusters. Pass more "
                "varied texts or `num_clusters` <= that number."
            )
        with torch.no_grad():  # k-means runs where the head does (on a GPU: torch's k-means, no copy to the host)
            features = self.kmeans_features(torch.from_numpy(embeddings).to(self.device)).float()
        points = features if features.is_cuda else features.cpu().numpy()
        kmeans = fit_kmeans(
            points, num_clusters, n_init=n_init, random_state=random_state, max_samples=max_samples, init=kmeans_init
        )
        self.kmeans_start_ = getattr(kmeans, "start_", kmeans_init)
        self.init_clusters_from_kmeans(kmeans.cluster_centers_)
        return kmeans.labels_

    # ----- raw-text conveniences -----------------------------------------------------------------------------
    def _require_tokenizer(self):
        if self.tokenizer is None:
            raise ValueError(
                f"{type(self).__name__} has no tokenizer: the directory it was loaded from has none. Pass "
                "`tokenizer=AutoTokenizer.from_pretrained(<encoder>)` to `from_pretrained`, or set `model.tokenizer`."
            )
        return self.tokenizer

    def tokenize(self, texts: Sequence[str], padding: bool | str = True) -> dict[str, torch.Tensor]:
        tokenizer = self._require_tokenizer()
        return tokenizer(
            [clip_text(t, self.config.max_length) for t in texts],
            padding=padding,
            truncation=True,
            max_length=self.config.max_length,
            return_tensors="pt",
        )

    @torch.no_grad()
    def _encode_texts(
        self, texts: list[str], batch_size: int, show_progress_bar: bool | None, precision: str, fields: tuple[str, ...]
    ) -> Any:
        """The whole-list pass behind ``embed``, ``predict*`` and ``calibrate``: ``cluster_batch`` over length-sorted
        batches, the ``ClusteringOutput`` ``fields`` asked for (only those: a corpus' embeddings are large) as CPU
        tensors in input order. ``texts`` are already validated and ``precision`` resolved (by the public method
        calling it). ``encoding_passes`` decides where the batches run (here, or split between processes:
        :func:`hf_textcluster.distributed.sharded_passes`)."""
        passes = self.encoding_passes or LOCAL_PASSES
        return passes.run(
            lambda shard, show: self._encode_sorted(shard, batch_size, show, precision, fields),
            texts,
            batch_size,
            show_progress_bar,
        )

    def _encode_sorted(self, texts, batch_size, show_progress_bar, precision, fields) -> ClusteringOutput:
        with_clusters = fields != ("embeddings",)
        was_training = self.training
        self.eval()
        # Sort by length so that each batch pads to similar lengths (as sentence-transformers does).
        order = np.argsort([-len(t) for t in texts], kind="stable")
        if show_progress_bar is None:
            show_progress_bar = len(texts) > 10 * batch_size and logger.getEffectiveLevel() <= logging.INFO
        batches = []
        try:
            for start in tqdm(range(0, len(texts), batch_size), desc="Encoding", disable=not show_progress_bar):
                batch = [texts[i] for i in order[start : start + batch_size]]
                inputs = {k: v.to(self.device) for k, v in self.tokenize(batch).items()}
                with torch.inference_mode():
                    output = self._cluster_batch(inputs, precision, with_clusters)
                # on the CPU batch by batch: a corpus' outputs never pile up on an accelerator
                batches.append({k: output[k].float().cpu() for k in fields if output[k] is not None})
        finally:
            self.train(was_training)
        # outside inference mode: cat and the reordering give ordinary tensors (callers may fit buffers on them)
        where = torch.from_numpy(np.argsort(order, kind="stable"))
        return ClusteringOutput(**{k: torch.cat([batch[k] for batch in batches])[where] for k in batches[0]})

    def _serving_arguments(self, texts, batch_size, precision) -> tuple[list[str], str]:
        """The public encoding methods' checks, made once: the texts, ``batch_size`` and the resolved precision."""
        texts = validate_texts(texts)
        check_scalar(batch_size, "batch_size", int, min_val=1)
        return texts, resolve_precision(precision, self.device, inference=True)  # before any work

    def embed(
        self,
        texts: Sequence[str],
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        show_progress_bar: bool | None = None,
        precision: str | torch.dtype | None = "auto",
    ) -> np.ndarray:
        """Pooled embeddings of raw texts, batched (sorted by length), the space the clusters are formed in.

        Args:
            texts: the texts (non-blank strings).
            batch_size: texts per encoder call.
            show_progress_bar: a tqdm bar; ``None`` shows one for large inputs only.
            precision: ``"auto"`` (bf16 autocast only where the device runs bf16 natively, see
                :mod:`hf_textcluster.modeling.precision`), ``"fp32"``, ``"bf16"``, ``"fp16"`` or ``"int8"`` (CPU: the
                encoder's Linear layers dynamically quantized, 1.7x-2.5x fp32 on every CPU kind measured, ~96% of
                texts in the same cluster as fp32; its activations are scaled per batch, so a few % of texts change
                cluster with their batch companions; every method here takes the same ``precision``).

        Returns:
            A float32 array of shape (N, hidden).

        Example:
            >>> model.embed(["how do i join two tables in oracle"]).shape  # doctest: +SKIP
            (1, 384)
        """
        texts, precision = self._serving_arguments(texts, batch_size, precision)
        return self._encode_texts(texts, batch_size, show_progress_bar, precision, ("embeddings",)).embeddings.numpy()

    def predict_proba(
        self,
        texts: Sequence[str],
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        show_progress_bar: bool | None = None,
        precision: str | torch.dtype | None = "auto",
    ) -> np.ndarray:
        """Soft cluster assignments of raw texts: the method's own probabilities (often nearly flat; see
        ``predict_with_confidence`` for a calibrated confidence).

        Args:
            texts: the texts (non-blank strings).
            batch_size: texts per encoder call.
            show_progress_bar: a tqdm bar; ``None`` shows one for large inputs only.
            precision: as for ``embed``.

        Returns:
            A float array of shape (N, K); rows sum to 1.

        Raises:
            ValueError: the model's clusters were never initialised (an untrained model).
        """
        self._check_clusters_initialized()
        texts, precision = self._serving_arguments(texts, batch_size, precision)
        outputs = self._encode_texts(texts, batch_size, show_progress_bar, precision, ("cluster_probs",))
        return outputs.cluster_probs.numpy()

    def predict(
        self,
        texts: Sequence[str],
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        show_progress_bar: bool | None = None,
        precision: str | torch.dtype | None = "auto",
    ) -> np.ndarray:
        """Cluster ids of raw texts; outside int8, a text's cluster never depends on the other texts of the call.

        Args:
            texts: the texts (non-blank strings).
            batch_size: texts per encoder call.
            show_progress_bar: a tqdm bar; ``None`` shows one for large inputs only.
            precision: as for ``embed``.

        Returns:
            An int array of shape (N,), values in ``0 .. K-1``.

        Raises:
            ValueError: the model's clusters were never initialised (an untrained model).

        Example:
            >>> model = AutoModel.from_pretrained("runs/tickets")  # doctest: +SKIP
            >>> model.predict(["how do i join two tables in oracle", "my cat sleeps all day"])  # doctest: +SKIP
            array([3, 7])
        """
        return self.predict_proba(texts, batch_size, show_progress_bar, precision).argmax(axis=-1)

    # ----- calibration: a confidence and outliers (see hf_textcluster.modeling.calibration) ---------------------------
    @property
    def is_calibrated(self) -> bool:
        """Whether ``calibrate`` was run (the trainer does it at the end of training)."""
        return bool(getattr(self.config, "num_calibration_texts", 0))

    def calibrated_confidence(self, embeddings: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
        """The calibrated confidence (N,) in [0, 1] of texts with pooled ``embeddings`` (N x d) and served soft
        assignment ``probs`` (N x K): the share of calibration texts whose centre margin (how much nearer their own
        cluster's centre than the next one, see :mod:`~hf_textcluster.modeling.calibration`) is <= theirs. A model
        calibrated by an older version ranks its soft assignment's margin instead (``config.confidence_measure``).

        Raises:
            ValueError: the model is not calibrated (see ``calibrate``).
        """
        self._require_calibration("`calibrated_confidence`")
        measure = getattr(self.config, "confidence_measure", "assignment_margin")
        return self.calibration.confidence(embeddings, probs, measure=measure)

    def _require_calibration(self, what: str = "`predict_with_confidence`") -> None:
        if not self.is_calibrated:
            raise ValueError(
                f"{what} needs a calibrated model, and this {type(self).__name__} is not calibrated (models trained "
                "before hf_textcluster calibrated them at the end of training). Call `model.calibrate(texts)` with "
                "(a sample of) its training texts and save it, or run `hf-textcluster calibrate --model DIR --input "
                "FILE`."
            )

    def check_can_serve(self, needs_calibration: str | None = None) -> None:
        """Raise the error a prediction would, before any text: the clusters were never initialised (RuntimeError),
        or, when ``needs_calibration`` names the option that needs it (e.g. ``"`flag_outliers`"``), the model is not
        calibrated (ValueError). The pipeline checks this at construction and per call."""
        self._check_clusters_initialized()
        if needs_calibration:
            self._require_calibration(needs_calibration)

    def calibrate(
        self,
        texts: Sequence[str],
        sample_size: int | None = 10_000,
        random_state: int | None = 0,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        show_progress_bar: bool | None = None,
        precision: str | torch.dtype | None = "auto",
    ) -> TextClusteringPreTrainedModel:
        """Calibrate the confidence and the outlier distances on a seeded sample of ``texts`` (use the training texts).

        One encoding pass. Stores the result in the model's ``calibration`` buffers (saved with the weights) and
        ``config.num_calibration_texts``.

        Afterwards ``predict_with_confidence`` and the pipeline's ``confidence`` / ``flag_outliers`` work: a text's
        confidence is the share of these calibration texts whose centre margin is <= its own (how much nearer its
        cluster's centre than the nearest other centre, relative to both distances; see ``calibrated_confidence``),
        so it spreads over [0, 1] whatever partition the model serves; a text is an outlier when it is farther (cosine
        distance of its pooled embedding) from its cluster's centre than ``outlier_quantile`` of that cluster's
        calibration texts. A cluster with fewer than
        ``calibration.MIN_CLUSTER_SIZE`` (20) calibration texts uses the distances of all calibration texts instead.

        Args:
            texts: the texts to calibrate on (non-blank strings).
            sample_size: at most this many of them, a seeded sample (``None``: all).
            random_state: the sample's seed.
            batch_size: texts per encoder call.
            show_progress_bar: a tqdm bar; ``None`` shows one for large inputs only.
            precision: as for ``embed``.

        Returns:
            The model itself (save it with ``save_pretrained`` to keep the calibration).

        Example:
            >>> model.calibrate(training_texts).save_pretrained("runs/old-model")  # doctest: +SKIP
        """
        self._check_clusters_initialized()
        texts, precision = self._serving_arguments(texts, batch_size, precision)
        check_scalar(sample_size, "sample_size", int, min_val=2, allow_none=True, hint="None: all texts")
        if len(texts) < 2:
            raise ValueError(f"Calibration needs at least 2 texts, got {len(texts)}.")
        if sample_size is not None and len(texts) > sample_size:
            rows = np.sort(np.random.default_rng(random_state).choice(len(texts), size=sample_size, replace=False))
            texts = [texts[int(i)] for i in rows]
        outputs = self._encode_texts(texts, batch_size, show_progress_bar, precision, ("embeddings", "cluster_probs"))
        self.calibration.fit(outputs.embeddings, outputs.cluster_probs)
        self.config.num_calibration_texts = len(texts)
        self.config.confidence_measure = "centre_margin"
        return self

    def predict_with_confidence(
        self,
        texts: Sequence[str],
        outlier_quantile: float = DEFAULT_OUTLIER_QUANTILE,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        show_progress_bar: bool | None = None,
        precision: str | torch.dtype | None = "auto",
    ) -> dict[str, np.ndarray]:
        """Each text's assignment with its calibrated confidence and outlier flag (a calibrated model only; see
        ``calibrate``), as arrays of length N (``pandas.DataFrame(result)`` makes a table):

        - ``cluster``: the most likely cluster (never -1 here: ``is_outlier`` says whether it is far);
        - ``probability``: its soft-assignment probability (the method's own q; the pipeline's ``score``);
        - ``confidence``: the share of calibration texts whose centre margin (nearer its cluster's centre than the
          nearest other one, relative to both distances) is <= this text's, in [0, 1];
        - ``distance``: the cosine distance of the text's pooled embedding to its cluster's calibrated centre;
        - ``is_outlier``: ``distance`` beyond the ``outlier_quantile`` of the cluster's calibration texts' distances.

        Args:
            texts: the texts (non-blank strings).
            outlier_quantile: the quantile of a cluster's calibration distances beyond which a text is an outlier.
            batch_size: texts per encoder call.
            show_progress_bar: a tqdm bar; ``None`` shows one for large inputs only.
            precision: as for ``embed``.

        Returns:
            A dict of the five arrays above, each of length N.

        Raises:
            ValueError: the model is not calibrated (see ``calibrate``).

        Example:
            >>> import pandas as pd
            >>> pd.DataFrame(model.predict_with_confidence(["how do i join two tables"]))  # doctest: +SKIP
        """
        self._require_calibration()
        outlier_quantile = check_outlier_quantile(outlier_quantile)
        self._check_clusters_initialized()
        texts, precision = self._serving_arguments(texts, batch_size, precision)
        outputs = self._encode_texts(
            texts, batch_size, show_progress_bar, precision, ("cluster_probs", "distance", "confidence")
        )
        probs, distances = outputs.cluster_probs, outputs.distance
        probability, clusters = probs.max(dim=-1)
        return {
            "cluster": clusters.numpy(),
            "probability": probability.numpy(),
            "confidence": outputs.confidence.numpy(),
            "distance": distances.numpy(),
            "is_outlier": (distances > self.calibration.thresholds(outlier_quantile).cpu()[clusters]).numpy(),
        }

    # ----- editing the clusters: merge, split, new texts (weight arithmetic, see cluster_edits) -----------------
    def _edited_copy(self) -> TextClusteringPreTrainedModel:
        int8 = self.__dict__.pop("_int8_cache", None)  # a cache, not worth copying
        try:
            edited = copy.deepcopy(self)
        finally:
            if int8 is not None:
                self.__dict__["_int8_cache"] = int8
        edited.__dict__.pop("online_state_", None)  # the running means describe the old clusters
        return edited

    def _check_cluster_id(self, value, argument_name: str) -> int:
        num_clusters = self.config.num_clusters
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < num_clusters:
            raise ValueError(f"`{argument_name}` must be a cluster id in 0..{num_clusters - 1}, got {value!r}.")
        return int(value)

    def _rename_clusters(self, plan: list[list[int]], suffixes: dict[int, str] | None = None) -> None:
        """``id2label`` for clusters made of the old ``plan[i]``: default names (``cluster_<i>``) follow the new ids,
        given names are joined (``a + b``) or suffixed (a split's parts)."""
        old = {int(k): str(v) for k, v in (self.config.id2label or {}).items()}
        default = all(name == f"cluster_{k}" for k, name in old.items())
        names = {}
        for new_id, members in enumerate(plan):
            if default or not members:
                names[new_id] = f"cluster_{new_id}"
            else:
                names[new_id] = " + ".join(old[k] for k in members) + (suffixes or {}).get(new_id, "")
        self.config.num_clusters = len(plan)
        self.config.id2label = names
        self.config.label2id = {name: i for i, name in names.items()}

    def _embeddings_tensor(self, texts, batch_size, precision) -> tuple[list[str], torch.Tensor]:
        texts, precision = self._serving_arguments(texts, batch_size, precision)
        embeddings = self._encode_texts(texts, batch_size, None, precision, ("embeddings",)).embeddings
        return texts, embeddings.to(self.device)

    def merge_clusters(
        self,
        groups: Sequence[Sequence[int]],
        texts: Sequence[str] | None = None,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        precision: str | torch.dtype | None = "auto",
    ) -> TextClusteringPreTrainedModel:
        """A copy of this model whose clusters ``groups`` are merged, each into one cluster.

        Weight arithmetic: a merged cluster's row in every head is the size-weighted mean of its members' rows (see
        :mod:`hf_textcluster.modeling.cluster_edits`), so the copy serves the merged partition itself (``predict``,
        the pipeline, ``save_pretrained`` and the Hub). Ids: a merged cluster takes the smallest id of its group, and
        the clusters are numbered again from 0 in the order of their smallest old id; ``cluster_mapping_`` on the copy
        gives each old id's new id. Names (``id2label``) are joined (``"a + b"``). With ``texts`` (the training texts,
        or a sample), the rows are weighted by the clusters' shares of them, a linear head's merged row keeps the
        ground its clusters held on them, and the calibration is refitted on them; without, the rows are weighted by
        the calibration's cluster sizes, its centres averaged and its outlier distances the widest of the members'.

        Args:
            groups: lists of at least two cluster ids each, no id in two groups, e.g. ``[[3, 7], [1, 4, 9]]``.
            texts: the training texts (or a sample); optional, recommended.
            batch_size: texts per encoder call.
            precision: as for ``embed``.

        Returns:
            The merged copy (this model is unchanged).

        Raises:
            ValueError: a bad group (an unknown id, a group of one, an id in two groups, fewer than 2 clusters left).

        Example:
            >>> merged = model.merge_clusters([[3, 7], [1, 4, 9]], texts=training_texts)   # doctest: +SKIP
            >>> merged.config.num_clusters, merged.cluster_mapping_[7]                     # doctest: +SKIP
            (17, 3)
        """
        self._check_clusters_initialized()
        if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence) or not groups:
            raise ValueError(
                f"`groups` must be a list of lists of cluster ids, e.g. [[3, 7], [1, 4, 9]]; got {groups!r}."
            )
        seen: set[int] = set()
        representative = list(range(self.config.num_clusters))
        for group in groups:
            if isinstance(group, (str, bytes)) or not isinstance(group, Sequence) or len(set(group)) < 2:
                raise ValueError(f"Each of `groups` must list at least two different cluster ids; got {group!r}.")
            ids = sorted({self._check_cluster_id(k, "groups") for k in group})
            if seen & set(ids):
                raise ValueError(f"Cluster {min(seen & set(ids))} is in two of `groups`: merge it once.")
            seen |= set(ids)
            for k in ids:
                representative[k] = ids[0]
        kept = sorted(set(representative))
        if len(kept) < 2:
            raise ValueError("Merging these `groups` leaves one cluster: a clusterer needs at least 2.")
        plan = [[k for k in range(self.config.num_clusters) if representative[k] == rep] for rep in kept]
        inputs = labels = None
        if texts is not None:
            texts, embeddings = self._embeddings_tensor(texts, batch_size, precision)
            probs, inputs = head_inputs(self, embeddings)
            inputs, labels = {k: v.cpu() for k, v in inputs.items()}, probs.argmax(dim=-1).cpu()
        edited = self._edited_copy()
        merge_rows(edited, plan, inputs, labels)
        edited._rename_clusters(plan)
        edited.cluster_mapping_ = np.array([kept.index(rep) for rep in representative], dtype=np.int64)
        if texts is not None:
            edited.calibrate(texts, batch_size=batch_size, precision=precision)
        return edited

    def split_cluster(
        self,
        cluster: int,
        n: int = 2,
        texts: Sequence[str] | None = None,
        random_state: int | None = 0,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        precision: str | torch.dtype | None = "auto",
    ) -> TextClusteringPreTrainedModel:
        """A copy of this model whose cluster ``cluster`` is split into ``n`` clusters.

        The cluster's members among ``texts`` are split by k-means in the head's input space; each head gets one row
        per part from the parts' means (see :mod:`hf_textcluster.modeling.cluster_edits`), so the copy serves the
        split partition itself. The first part keeps the id ``cluster``, the others get ids ``K .. K+n-2``;
        ``cluster_mapping_`` (old id -> new id) is the identity. Names get `` (1)``, `` (2)``... The calibration is
        refitted on ``texts``.

        Args:
            cluster: the id of the cluster to split.
            n: into how many clusters (>= 2).
            texts: the training texts (or a sample with enough of the cluster's members: at least ``2 * n``).
            random_state: seed of the k-means split.
            batch_size: texts per encoder call.
            precision: as for ``embed``.

        Returns:
            The split copy (this model is unchanged).

        Raises:
            ValueError: a bad ``cluster`` or ``n``, no ``texts``, or too few (distinct) members of the cluster in them.

        Example:
            >>> split = model.split_cluster(5, n=2, texts=training_texts)   # doctest: +SKIP
            >>> split.config.num_clusters                                   # doctest: +SKIP
            21
        """
        self._check_clusters_initialized()
        cluster = self._check_cluster_id(cluster, "cluster")
        check_scalar(n, "n", numbers.Integral, min_val=2, hint="the clusters to split into")
        if texts is None:
            raise ValueError(
                "`texts` is required: the cluster's members among them are split (pass the training texts)."
            )
        texts, embeddings = self._embeddings_tensor(texts, batch_size, precision)
        probs, _ = head_inputs(self, embeddings, method_head=False)
        members = torch.nonzero(probs.argmax(dim=-1).cpu() == cluster).flatten()
        distinct = len({row.numpy().tobytes() for row in embeddings[members].cpu()})
        if distinct < 2 * n:
            raise ValueError(
                f"Cluster {cluster} has {members.numel()} texts ({distinct} distinct) among `texts`: splitting it into "
                f"{n} needs at least {2 * n}. Pass more of its texts (the training texts), or a smaller `n`."
            )
        _, inputs = head_inputs(self, embeddings)
        with torch.no_grad():
            features = self.kmeans_features(embeddings[members]).float().cpu().numpy()
        parts = torch.as_tensor(fit_kmeans(features, int(n), random_state=random_state).labels_, dtype=torch.long)
        is_member = torch.zeros(len(texts), dtype=torch.bool)
        is_member[members] = True
        edited = self._edited_copy()
        split_rows(edited, cluster, {k: v.cpu() for k, v in inputs.items()}, is_member, parts)
        plan = [[k] for k in range(self.config.num_clusters)] + [[cluster]] * (int(n) - 1)
        suffixes = {cluster: " (1)", **{self.config.num_clusters + j: f" ({j + 2})" for j in range(int(n) - 1)}}
        edited._rename_clusters(plan, suffixes)
        edited.cluster_mapping_ = np.arange(self.config.num_clusters)
        edited.calibrate(texts, batch_size=batch_size, precision=precision)
        return edited

    def start_online(
        self,
        texts: Sequence[str],
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        precision: str | torch.dtype | None = "auto",
    ) -> TextClusteringPreTrainedModel:
        """Start what ``update`` keeps (``online_state_``, an
        :class:`~hf_textcluster.modeling.cluster_edits.OnlineCentres`)
        from ``texts``, the texts the model already describes (its training texts, or a sample): each cluster's mean
        of its texts in every head's input space (a centroid head: its centroids) and their counts. Returns the model.

        Example:
            >>> model.start_online(training_texts).update(new_texts)   # doctest: +SKIP
        """
        self._check_clusters_initialized()
        _, embeddings = self._embeddings_tensor(texts, batch_size, precision)
        probs, inputs = head_inputs(self, embeddings)
        self.online_state_ = OnlineCentres.start(self, {k: v.cpu() for k, v in inputs.items()}, probs.argmax(-1).cpu())
        return self

    def update(
        self,
        texts: Sequence[str],
        accept_new: bool = False,
        outlier_quantile: float = DEFAULT_OUTLIER_QUANTILE,
        min_new_size: int | None = None,
        new_name: str | None = None,
        random_state: int | None = 0,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        precision: str | torch.dtype | None = "auto",
    ):
        """Take in new texts without retraining the encoder (in place): assign them, move the clusters, and propose
        an emerging group as a new cluster.

        The online rule is mini-batch k-means' per-centre update on the served features: each cluster's mean of its
        texts in every head's input space moves by ``m / (count + m) * (batch mean - mean)`` (``m`` of the new texts
        are assigned to it; counts grow), and the head's row follows (a centroid is the mean; a linear row gets the
        nearest-mean term ``s(|x - mean|² - |x - new mean|²)``, see :mod:`hf_textcluster.modeling.cluster_edits`). The
        state starts with ``start_online`` (call it with the training texts first; else this batch starts it and
        moves nothing). Texts farther from every cluster's calibrated centre than that cluster's
        ``outlier_quantile`` of its texts are *far*: they move no centre, and the largest cohesive group among them
        (median distance to its own centre no larger than a typical cluster's, at least ``min_new_size`` texts) is
        proposed as a new cluster; ``accept_new=True`` adds it (every head grows by one row, the calibration too).

        Args:
            texts: the new texts.
            accept_new: add the proposed group as a cluster.
            outlier_quantile: beyond this quantile of a cluster's calibrated distances a text is far from it.
            min_new_size: the smallest group proposed; default a quarter of the texts per cluster in this batch
                (at least 5).
            new_name: the new cluster's name (default ``cluster_<id>``).
            random_state: seed of the grouping of the far texts.
            batch_size: texts per encoder call.
            precision: as for ``embed``.

        Returns:
            An :class:`~hf_textcluster.modeling.cluster_edits.UpdateResult`.

        Raises:
            ValueError: the model is not calibrated, or a bad argument.

        Example:
            >>> model.start_online(training_texts)                       # doctest: +SKIP
            >>> result = model.update(new_texts, accept_new=True)       # doctest: +SKIP
            >>> result.proposed is not None, model.config.num_clusters   # doctest: +SKIP
            (True, 21)
        """
        self._check_clusters_initialized()
        self._require_calibration("`update`")
        outlier_quantile = check_outlier_quantile(outlier_quantile)
        check_scalar(min_new_size, "min_new_size", int, min_val=2, allow_none=True)
        texts, embeddings = self._embeddings_tensor(texts, batch_size, precision)
        num_clusters = self.config.num_clusters
        probs, inputs = head_inputs(self, embeddings)
        inputs = {k: v.cpu() for k, v in inputs.items()}
        labels = probs.argmax(dim=-1).cpu()
        cal = self.calibration
        unit = torch.nn.functional.normalize(embeddings.float().cpu(), dim=-1)
        to_centres = 1 - unit @ cal.centres.float().cpu().T
        far = (to_centres > cal.thresholds(outlier_quantile).float().cpu()[None, :]).all(dim=-1)
        near = torch.nonzero(~far).flatten()
        if near.numel() == 0:  # every text is far: nothing moves, but a first batch still starts the state
            near = torch.arange(len(texts)) if getattr(self, "online_state_", None) is None else near
        if getattr(self, "online_state_", None) is None:
            self.online_state_ = OnlineCentres.start(self, {k: v[near] for k, v in inputs.items()}, labels[near])
            moved = torch.zeros(num_clusters)
        else:
            moved = self.online_state_.update(self, {k: v[near] for k, v in inputs.items()}, labels[near])
            self._move_calibration_centres(unit[near], labels[near])
        size = min_new_size or max(5, math.ceil(len(texts) / num_clusters / 4))
        typical = float(quantile_at(cal.distance_quantiles.float(), 0.5).median())
        proposed = None
        far_rows = torch.nonzero(far).flatten().numpy()
        if far_rows.size >= size:
            group = cohesive_group(unit[far_rows].numpy(), size, typical, random_state=random_state)
            proposed = None if group is None else far_rows[group]
        new_cluster = None
        if accept_new and proposed is not None:
            rows = torch.as_tensor(proposed)
            new_inputs = {k: v[rows] for k, v in inputs.items()}
            in_group = torch.zeros(len(texts), dtype=torch.bool)
            in_group[rows] = True
            append_row(self, inputs, in_group, self.online_state_.scales, unit[rows])
            self.online_state_.grow(new_inputs)
            new_cluster = num_clusters
            self._rename_clusters([[k] for k in range(num_clusters)] + [[]])
            if new_name:
                id2label: Any = self.config.id2label  # {int: str} once the config is built
                id2label[new_cluster] = str(new_name)
                self.config.label2id = {name: i for i, name in id2label.items()}
        with torch.no_grad():
            probs = self.cluster_probabilities(embeddings).float()
        clusters = probs.argmax(dim=-1)
        distance = cal.distance(embeddings.float(), clusters).cpu()
        return UpdateResult(
            clusters=clusters.cpu().numpy(),
            distance=distance.numpy(),
            far=far.numpy(),
            proposed=proposed,
            accepted=new_cluster is not None,
            new_cluster=new_cluster,
            moved=moved.numpy(),
        )

    @torch.no_grad()
    def _move_calibration_centres(self, unit: torch.Tensor, labels: torch.Tensor) -> None:
        """The calibrated centres follow the clusters by the same running mean (of unit embeddings; sizes grow)."""
        cal = self.calibration
        counts = cal.cluster_sizes.double().cpu()
        batch = torch.bincount(labels, minlength=counts.shape[0]).double()
        sums = torch.zeros_like(cal.centres, dtype=torch.float64, device="cpu").index_add_(0, labels, unit.double())
        centres = torch.nn.functional.normalize(cal.centres.double().cpu() * counts[:, None] + sums, dim=-1)
        keep = batch == 0
        centres[keep] = cal.centres.double().cpu()[keep]
        cal.centres.copy_(centres.to(cal.centres.device, cal.centres.dtype))
        cal.cluster_sizes.copy_((counts + batch).to(cal.cluster_sizes.device, cal.cluster_sizes.dtype))

    def least_typical(
        self,
        texts: Sequence[str],
        fraction: float = 0.05,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        precision: str | torch.dtype | None = "auto",
    ) -> dict[str, np.ndarray]:
        """Every text with its cluster, and the ``fraction`` least typical texts of each cluster flagged (no text is
        left without a cluster): those farthest from their cluster's calibrated centre.

        Returns arrays of length N: ``cluster``; ``distance`` (cosine distance to the cluster's calibrated centre);
        ``typicality`` (the share of the cluster's calibration texts at least as far, in [0, 1]: 1 at the centre);
        ``least_typical`` (the ``ceil(fraction * n)`` farthest of each cluster's ``n`` texts here).

        Args:
            texts: the texts.
            fraction: the share of each cluster's texts to flag, in (0, 1).
            batch_size: texts per encoder call.
            precision: as for ``embed``.

        Raises:
            ValueError: the model is not calibrated, or ``fraction`` is not in (0, 1).

        Example:
            >>> flagged = model.least_typical(texts, fraction=0.05)["least_typical"]        # doctest: +SKIP
            >>> merged.predict([t for t, f in zip(texts, flagged) if f])                     # doctest: +SKIP
        """
        self._require_calibration("`least_typical`")
        hint = "a share, e.g. 0.05 for the 5% least typical"
        check_scalar(fraction, "fraction", (int, float), min_val=0, max_val=1, include_boundaries="neither", hint=hint)
        self._check_clusters_initialized()
        texts, precision = self._serving_arguments(texts, batch_size, precision)
        outputs = self._encode_texts(texts, batch_size, None, precision, ("cluster_probs", "distance"))
        clusters, distance = outputs.cluster_probs.argmax(dim=-1), outputs.distance.float()
        quantiles = self.calibration.distance_quantiles.float().cpu()
        typicality = torch.zeros(len(texts))
        for k in clusters.unique():
            rows = clusters == k
            typicality[rows] = 1 - quantile_rank(distance[rows], quantiles[int(k)])
        flagged = np.zeros(len(texts), dtype=bool)
        clusters_np, distance_np = clusters.numpy(), distance.numpy()
        for k in np.unique(clusters_np):
            rows = np.flatnonzero(clusters_np == k)
            take = math.ceil(fraction * rows.size)
            flagged[rows[np.argsort(-distance_np[rows], kind="stable")[:take]]] = True
        return {
            "cluster": clusters_np,
            "distance": distance_np,
            "typicality": typicality.numpy(),
            "least_typical": flagged,
        }

    # ----- construction, loading and saving ------------------------------------------------------------------
    @classmethod
    def from_encoder_pretrained(
        cls, encoder: str | os.PathLike | None = None, num_clusters: int = 8, **config_kwargs
    ) -> TextClusteringPreTrainedModel:
        """A new, untrained clusterer around a pretrained encoder.

        Pooling follows a sentence-transformers folder's metadata unless given. The cluster head is not fitted
        yet: the trainer (or ``initialize_clusters``) does that.

        Args:
            encoder: a hub id or local path; ``None`` is the pip-shipped all-MiniLM-L6-v2.
            num_clusters: K.
            **config_kwargs: fields of the method's config (``max_length``, ``pooling``, its loss weights, ...).

        Returns:
            The model, in eval mode, with the encoder's tokenizer attached.

        Example:
            >>> from hf_textcluster import SCCLModel
            >>> model = SCCLModel.from_encoder_pretrained(None, num_clusters=20, max_length=32)  # doctest: +SKIP
        """
        resolver = cls.encoder_resolver
        if resolver is None and (encoders := _package_layer("encoders")) is not None:
            resolver = encoders.resolve_encoder
        if resolver is not None:  # the package's: pip-shipped encoders, sentence-transformers pooling
            spec = resolver(encoder)
            name_or_path, pooling = spec.name_or_path, spec.pooling
        elif encoder is None:
            raise ValueError("`encoder` is required here (the pip-shipped default needs the hf_textcluster package).")
        else:
            name_or_path, pooling = str(encoder), "mean"
        config_kwargs.setdefault("pooling", pooling)
        encoder_model = AutoModel.from_pretrained(name_or_path)
        tokenizer = AutoTokenizer.from_pretrained(name_or_path)
        config = cls.config_class(encoder=encoder_model.config.to_dict(), num_clusters=num_clusters, **config_kwargs)
        model = cls(config)
        model.encoder.load_state_dict(encoder_model.state_dict())
        model.tokenizer = tokenizer
        model.config.name_or_path = name_or_path
        return model.eval()  # like from_pretrained: dropout off until a trainer calls train()

    @classmethod
    def _expected_model_types(cls) -> set[str] | None:
        if cls.config_class is TextClusteringConfig:
            return None  # the base class loads any clusterer
        return {cls.config_class.model_type}

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, tokenizer=None, **kwargs):
        path = str(pretrained_model_name_or_path)
        check_local_path(path, "pretrained_model_name_or_path")
        config = kwargs.pop("config", None)
        num_clusters = kwargs.pop("num_clusters", None)
        hub_kwargs = {k: kwargs[k] for k in ("revision", "token", "cache_dir", "local_files_only") if k in kwargs}
        if config is None:
            try:
                # As remote code, the class's own config class (AutoConfig would pick the package's where it is
                # also installed); in the package, AutoConfig, so that another method's checkpoint is recognised.
                config_class = cls.config_class if running_as_remote_code() else AutoConfig
                config = config_class.from_pretrained(path, **hub_kwargs)
            except OSError as err:
                from huggingface_hub.errors import RepositoryNotFoundError

                if os.path.isdir(path) or not isinstance(err.__cause__, RepositoryNotFoundError):
                    raise
                from huggingface_hub import constants

                raise OSError(
                    f"No model {path!r}: it is not a local folder, and the Hub at {constants.ENDPOINT} has no "
                    "repository with that id. Check the spelling (e.g. 'org/sccl-stackoverflow'); for a private "
                    "repository pass `token=` or log in with `hf auth login`."
                ) from err
        expected = cls._expected_model_types()
        # by class name, not identity: a folder's remote code loaded next to the package (or twice, from
        # transformers' module cache) has its own copy of TextClusteringConfig
        is_clusterer = any(c.__name__ == TextClusteringConfig.__name__ for c in type(config).__mro__)
        if not is_clusterer or (expected and config.model_type not in expected):
            raise ValueError(
                f"The checkpoint at {path!r} is a {config.model_type!r} model, not "
                f"{' or '.join(repr(t) for t in sorted(expected)) if expected else 'an hf_textcluster clusterer'}. "
                f"Load it with "
                "`AutoModel.from_pretrained` (after `import hf_textcluster`) or with its own model class."
            )
        if num_clusters is not None and num_clusters != config.num_clusters:
            raise ValueError(
                f"`num_clusters={num_clusters}` disagrees with the checkpoint at {path!r}, whose centroids are for "
                f"{config.num_clusters} clusters. Omit `num_clusters`, or train a new model with "
                "`from_encoder_pretrained(..., num_clusters=...)`."
            )
        kwargs.setdefault("use_safetensors", True)  # loading never unpickles
        wants_info = kwargs.pop("output_loading_info", False)
        cls._check_weights_fit_config(path, config, hub_kwargs)
        try:
            loaded: Any = super().from_pretrained(path, *model_args, config=config, output_loading_info=True, **kwargs)
        except Exception as err:
            if (
                "safetensors" in type(err).__module__
                or "header" in str(err).lower()
                or "deserializ" in str(err).lower()
            ):
                raise OSError(
                    f"The weights file in {path!r} is corrupted or incomplete ({err}). Re-download or re-save the "
                    f"model."
                ) from err
            raise
        if tokenizer is None:
            try:
                tokenizer = AutoTokenizer.from_pretrained(
                    path, trust_remote_code=running_as_remote_code(), **hub_kwargs
                )
            except Exception as err:  # noqa: BLE001 - a missing tokenizer is reported when texts are used
                logger.warning(
                    f"No tokenizer could be loaded from {path!r} ({type(err).__name__}). `predict`/`embed` and the "
                    "pipeline need one: pass `tokenizer=` or set `model.tokenizer`."
                )
        model, info = loaded
        # Weights that do not fit the class (a config.json of another method over these weights) are an error, not
        # a load report: the missing ones would be random.
        missing, unexpected = list(info.get("missing_keys") or []), list(info.get("unexpected_keys") or [])
        if missing or unexpected:
            raise ValueError(
                f"The weights in {path!r} do not fit a {cls.__name__} ({config.model_type!r} in its config.json): "
                f"{len(missing)} missing (e.g. {missing[:2]}) and {len(unexpected)} unexpected (e.g. "
                f"{unexpected[:2]}). "
                "Its config.json and model.safetensors do not belong together; re-save the model."
            )
        model.tokenizer = tokenizer
        bad = model._non_finite_tensors()
        if bad:  # refused at load as at save: it would serve every text in one cluster with a NaN score
            raise ValueError(
                f"The weights in {path!r} hold NaN or inf "
                f"({bad[0]!r}{f' and {len(bad) - 1} more' if len(bad) > 1 else ''}"
                "): the model was saved from a diverged run or the file was damaged. Not loading it; retrain, or load "
                "the last good checkpoint of its run folder."
            )
        return (model, info) if wants_info else model

    @classmethod
    def _check_weights_fit_config(cls, path: str, config, hub_kwargs: dict | None = None) -> None:
        """Before anything is allocated: the config must describe the weights, tensor by tensor. A config.json is data
        from anyone, and every size it sets (``num_clusters``, an encoder's layers and widths, a head's dimensions)
        would otherwise be allocated as asked; checked against the shapes in the safetensors header (read without
        loading a tensor), loading costs what the weights cost. An edited ``num_clusters`` or ``model_type`` or a cut
        weights file is one clear error, before transformers' load report suggests ``ignore_mismatched_sizes``
        (which would load those tensors random)."""
        if cls.config_class is TextClusteringConfig:
            return
        saved = _saved_shapes(path, hub_kwargs or {})
        if saved is None:  # no safetensors file found: the load itself reports that
            return
        # An encoder's layer count cannot exceed the tensors stored (each layer has some): checked before the model
        # is built, since building even on the meta device costs time and memory per layer.
        encoder = config.encoder.to_dict() if hasattr(config.encoder, "to_dict") else dict(config.encoder or {})
        for key, value in encoder.items():
            if key.endswith("layers") and isinstance(value, int) and not isinstance(value, bool) and value > len(saved):
                raise ValueError(
                    f"The folder {path!r} is inconsistent: its config.json asks for {value} encoder layers "
                    f"(`encoder.{key}`) but its weights hold {len(saved)} tensors in all. Was config.json edited? "
                    "Re-save the model from its run folder."
                )
        try:
            with torch.device("meta"):
                model = cls(config)
        except Exception as err:  # noqa: BLE001 - whatever the config breaks, it is one line naming the file
            raise ValueError(
                f"The config.json in {path!r} does not describe a model that can be built "
                f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else 'no message'}). Was it edited? "
                "Re-save the model from its run folder."
            ) from None
        expected = {key: tuple(t.shape) for key, t in model.state_dict().items()}
        differ = [key for key in expected if key in saved and saved[key] != expected[key]]
        if differ:
            key = differ[0]
            raise ValueError(
                f"The folder {path!r} is inconsistent: its config.json ({config.model_type!r}, "
                f"num_clusters={config.num_clusters}) does not fit its model.safetensors: {key!r} is "
                f"{list(saved[key])} in the weights but {list(expected[key])} for that config"
                f"{f' ({len(differ) - 1} more tensors differ)' if len(differ) > 1 else ''}. Was config.json edited or "
                f"the "
                "weights file replaced? Re-save the model from its run folder (loading it with ignore_mismatched_sizes "
                "would give random clusters)."
            )
        # Tensors the config asks for that the weights lack would be allocated and left random; tied tensors (one
        # Parameter under several names) are stored once, and checkpoints may lack what the class ignores.
        names_of: dict[int, list[str]] = {}
        for key, tensor in model.state_dict(keep_vars=True).items():
            names_of.setdefault(id(tensor), []).append(key)
        ignored = [re.compile(p) for p in (cls._keys_to_ignore_on_load_missing or [])]
        missing = [
            names[0]
            for names in names_of.values()
            if not any(n in saved for n in names) and not any(p.search(n) for p in ignored for n in names)
        ]
        if missing:
            raise ValueError(
                f"The folder {path!r} is inconsistent: its config.json ({config.model_type!r}) asks for "
                f"{len(missing)} tensors its model.safetensors does not hold (e.g. {missing[0]!r}). Was config.json "
                "edited or the weights file replaced? Re-save the model from its run folder."
            )

    def _non_finite_tensors(self) -> list[str]:
        return [
            name
            for name, tensor in self.state_dict().items()
            if tensor.is_floating_point() and not torch.isfinite(tensor).all()
        ]

    def _check_finite_weights(self) -> None:
        """A model with NaN / inf weights (a diverged run) is never saved, carded or pushed (nor loaded)."""
        bad = self._non_finite_tensors()
        if bad:
            raise ValueError(
                f"{len(bad)} of this model's tensors hold NaN or inf (e.g. {bad[0]!r}): training diverged. Not saving "
                "it; retrain with a lower learning rate (the last good checkpoint in the run folder is kept)."
            )

    def save_pretrained(
        self,
        save_directory: str | os.PathLike,
        *args,
        model_card: bool | str | dict = False,
        remote_code: bool | None = None,
        **kwargs,
    ):
        """Save config, ``model.safetensors`` and the tokenizer. Files are written to a temporary folder first and
        moved into place, so an interrupted save never leaves a half-written checkpoint behind.

        With the hf_textcluster package, and only when asked: ``model_card=True`` (or a dict of
        :func:`~hf_textcluster.hub.model_card.generate_model_card` arguments, or the card's text) also writes
        ``README.md``; ``remote_code=True`` (default: whether the class was ``register_for_auto_class``-ed) adds the
        inference code and the ``auto_map`` / ``custom_pipelines`` entries that ``trust_remote_code=True`` needs.
        """
        if kwargs.pop("push_to_hub", False):  # transformers' spelling of "save, then push to repo_id"
            hub_keys = ("token", "private", "commit_message", "create_pr", "revision")
            hub_kwargs = {k: kwargs.pop(k) for k in hub_keys if k in kwargs}
            repo_id = kwargs.pop("repo_id", None) or os.path.basename(os.path.normpath(os.fspath(save_directory)))
            self.save_pretrained(save_directory, *args, model_card=model_card, remote_code=remote_code, **kwargs)
            if running_as_remote_code():
                return super().push_to_hub(repo_id, **hub_kwargs)  # type: ignore[arg-type]
            return self.push_to_hub(repo_id, remote_code=remote_code is not False, **hub_kwargs)
        if remote_code is None:
            remote_code = type(self)._ship_remote_code
        wants_card = model_card is not False and model_card is not None
        if (wants_card or remote_code) and running_as_remote_code():
            raise ValueError(
                "`model_card` and `remote_code` need the hf_textcluster package (`pip install -e .` in its "
                "checkout); this model runs as a repository's remote code."
            )
        self._check_finite_weights()
        save_directory = os.fspath(save_directory)
        if os.path.exists(save_directory) and not os.path.isdir(save_directory):
            raise NotADirectoryError(
                f"`save_directory` {save_directory} is a file, not a folder: pass a folder (it is created if missing)."
            )
        os.makedirs(save_directory, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".saving-", dir=save_directory)
        try:
            super().save_pretrained(staging, *args, **kwargs)
            if self.tokenizer is not None:
                self.tokenizer.save_pretrained(staging)
            if (hub := _package_layer("hub")) is not None:
                hub.add_to_saved_model(
                    self,
                    staging,
                    save_directory=save_directory,
                    model_card=model_card if wants_card else None,
                    remote_code=bool(remote_code),
                )
            for name in os.listdir(staging):
                target = os.path.join(save_directory, name)
                if os.path.isdir(target) and not os.path.islink(target):
                    shutil.rmtree(target)
                os.replace(os.path.join(staging, name), target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    # ----- the Hub ---------------------------------------------------------------------------------------------------
    @classmethod
    def register_for_auto_class(cls, auto_class="AutoModel"):
        """Make ``save_pretrained`` ship remote code for this class (``push_to_hub`` always does): the inference code
        and ``config.json``'s ``auto_map`` (``AutoConfig``/``AutoModel``) and ``custom_pipelines``
        (``text-clustering``), so that ``trust_remote_code=True`` loads it without hf_textcluster."""
        if running_as_remote_code():  # transformers copies this file and its imports itself
            return super().register_for_auto_class(auto_class)
        if not isinstance(auto_class, str):
            auto_class = auto_class.__name__
        if auto_class != "AutoModel":
            raise ValueError(f"hf_textcluster clusterers register for 'AutoModel' only, got {auto_class!r}.")
        cls._ship_remote_code = True

    def push_to_hub(self, repo_id: str, **kwargs):  # type: ignore[override]  # the Hub layer's options, by name
        """Upload this trained clusterer to ``repo_id`` in one commit: weights, config, tokenizer, a generated model
        card (with ``metrics=`` / ``training_run=`` and the clusters' keywords from ``texts=``) and the inference code
        for ``trust_remote_code``. Refuses (before uploading anything) a model whose clusters were never initialised.
        Arguments: see :func:`hf_textcluster.hub.push.push_to_hub`. Returns the ``CommitInfo``."""
        if running_as_remote_code():
            return super().push_to_hub(repo_id, **kwargs)  # type: ignore[arg-type]
        return _package_layer("hub").push_to_hub(self, repo_id, **kwargs)


def _saved_shapes(path: str, hub_kwargs: dict) -> dict[str, tuple[int, ...]] | None:
    """Every tensor's shape in the safetensors weights of a local folder or a Hub repository (a single file or the
    shards an index names), read from the files' JSON headers: no tensor is read. None when there is no such file."""
    from transformers.utils import cached_file

    def resolve(name: str) -> str | None:
        local = os.path.join(path, name)
        if os.path.isdir(path):
            return local if os.path.isfile(local) else None
        try:  # the Hub: the file is downloaded (its size is what loading costs anyway)
            return cached_file(path, name, _raise_exceptions_for_missing_entries=False, **hub_kwargs)
        except Exception:  # noqa: BLE001 - an unreachable Hub or a missing repository is reported by the load
            return None

    index = resolve("model.safetensors.index.json")
    if index is not None:
        try:
            with open(index, encoding="utf-8") as f:
                shards = sorted(set(json.load(f)["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        files = [resolve(name) for name in shards]
    else:
        files = [resolve("model.safetensors")]
    if not files or any(f is None for f in files):
        return None
    shapes: dict[str, tuple[int, ...]] = {}
    for file in files:
        try:
            assert file is not None  # checked above
            with open(file, "rb") as weights:
                (length,) = struct.unpack("<Q", weights.read(8))
                if length > 100_000_000:  # safetensors' own limit on a header
                    return None
                header = json.loads(weights.read(length))
            shapes.update({key: tuple(entry["shape"]) for key, entry in header.items() if key != "__metadata__"})
        except (OSError, ValueError, KeyError, TypeError, AttributeError, struct.error):
            return None  # unreadable: the load reports a corrupted file
    return shapes
