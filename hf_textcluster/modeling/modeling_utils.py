"""TextClusteringPreTrainedModel: an encoder + pooling whose embedding is assigned to clusters by a method's head.

Part of the inference code that every pushed repository carries (see :mod:`hf_textcluster.hub.push`): this module, the
config, layers, pipeline and each method's configuration/modeling files import only torch, numpy, transformers and
each other, so that ``trust_remote_code=True`` works where hf_textcluster is not installed. Model cards, remote code
on save and one-commit pushes come from the package's Hub layer, imported on first use (``_package_layer`` below).
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel
from transformers.utils import ModelOutput, logging

from .calibration import DEFAULT_OUTLIER_QUANTILE, ClusterCalibration, check_outlier_quantile
from .configuration_utils import TextClusteringConfig, running_as_remote_code
from .kmeans import DEFAULT_KMEANS_MAX_SAMPLES, fit_kmeans
from .layers import pool_token_states
from .precision import autocast_dtype, quantize_int8, resolve_precision
from .validation import check_local_path, check_num_clusters, clip_text, validate_texts

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
        logits: ``log(cluster_probs)``, so that ``argmax(logits)`` is the cluster and ``Trainer`` metrics work unchanged.
        distance: cosine distance (batch,) of each embedding to its best cluster's calibrated centre; set by
            ``cluster_batch`` on a calibrated model only.
        confidence: the calibrated confidence (batch,) in [0, 1] (see ``calibrated_confidence``); set by
            ``cluster_batch`` on a calibrated model only.
    """

    loss: torch.FloatTensor | None = None
    embeddings: torch.FloatTensor | None = None
    cluster_probs: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    distance: torch.FloatTensor | None = None
    confidence: torch.FloatTensor | None = None


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
    # Checkpoints from before calibration have no `calibration.*` buffers: they load uncalibrated (zeros), silently.
    _keys_to_ignore_on_load_missing = [r"^calibration\."]

    def __init__(self, config: TextClusteringConfig):
        super().__init__(config)
        self.encoder = AutoModel.from_config(config.encoder)
        self.calibration = ClusterCalibration(config.num_clusters, config.encoder.hidden_size)
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
                embeddings = self.encode(**inputs).float()
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
        "k-means after"; ``hf-textcluster recluster``); call ``calibrate`` again afterwards. ``max_samples``: the centres
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
        features = features if features.is_cuda else features.cpu().numpy()
        kmeans = fit_kmeans(
            features, num_clusters, n_init=n_init, random_state=random_state, max_samples=max_samples, init=kmeans_init
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
    ) -> ClusteringOutput:
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
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"`batch_size` must be a positive integer, got {batch_size!r}.")
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
        so it spreads over [0, 1] whatever partition the model serves; a text is an outlier when it is farther (cosine distance of its pooled embedding) from its
        cluster's centre than ``outlier_quantile`` of that cluster's calibration texts. A cluster with fewer than
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
        if sample_size is not None and (
            isinstance(sample_size, bool) or not isinstance(sample_size, int) or sample_size < 2
        ):
            raise ValueError(f"`sample_size` must be an integer >= 2 or None (all texts), got {sample_size!r}.")
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
                f"{' or '.join(repr(t) for t in sorted(expected)) if expected else 'an hf_textcluster clusterer'}. Load it with "
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
        cls._check_weights_fit_config(path, config)
        try:
            loaded = super().from_pretrained(path, *model_args, config=config, output_loading_info=True, **kwargs)
        except Exception as err:
            if (
                "safetensors" in type(err).__module__
                or "header" in str(err).lower()
                or "deserializ" in str(err).lower()
            ):
                raise OSError(
                    f"The weights file in {path!r} is corrupted or incomplete ({err}). Re-download or re-save the model."
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
                f"{len(missing)} missing (e.g. {missing[:2]}) and {len(unexpected)} unexpected (e.g. {unexpected[:2]}). "
                "Its config.json and model.safetensors do not belong together; re-save the model."
            )
        model.tokenizer = tokenizer
        bad = model._non_finite_tensors()
        if bad:  # refused at load as at save: it would serve every text in one cluster with a NaN score
            raise ValueError(
                f"The weights in {path!r} hold NaN or inf ({bad[0]!r}{f' and {len(bad) - 1} more' if len(bad) > 1 else ''}"
                "): the model was saved from a diverged run or the file was damaged. Not loading it; retrain, or load "
                "the last good checkpoint of its run folder."
            )
        return (model, info) if wants_info else model

    @classmethod
    def _check_weights_fit_config(cls, path: str, config) -> None:
        """A local folder whose config.json and model.safetensors disagree on a tensor's shape (an edited
        ``num_clusters`` or ``model_type``, a cut weights file) is one clear error, before transformers' load report
        suggests ``ignore_mismatched_sizes`` (which would load those tensors random)."""
        weights = os.path.join(path, "model.safetensors")
        if cls.config_class is TextClusteringConfig or not os.path.isfile(weights):
            return
        try:
            from safetensors import safe_open

            with safe_open(weights, "pt") as f:
                saved = {key: tuple(f.get_slice(key).get_shape()) for key in f.keys()}
            with torch.device("meta"):
                expected = {key: tuple(t.shape) for key, t in cls(config).state_dict().items()}
        except Exception:  # noqa: BLE001 - an unreadable file is reported by the load itself
            return
        differ = [key for key in expected if key in saved and saved[key] != expected[key]]
        if differ:
            key = differ[0]
            raise ValueError(
                f"The folder {path!r} is inconsistent: its config.json ({config.model_type!r}, "
                f"num_clusters={config.num_clusters}) does not fit its model.safetensors: {key!r} is "
                f"{list(saved[key])} in the weights but {list(expected[key])} for that config"
                f"{f' ({len(differ) - 1} more tensors differ)' if len(differ) > 1 else ''}. Was config.json edited or the "
                "weights file replaced? Re-save the model from its run folder (loading it with ignore_mismatched_sizes "
                "would give random clusters)."
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
                return super().push_to_hub(repo_id, **hub_kwargs)
            return self.push_to_hub(repo_id, remote_code=remote_code is not False, **hub_kwargs)
        if remote_code is None:
            remote_code = type(self)._ship_remote_code
        wants_card = model_card is not False and model_card is not None
        if (wants_card or remote_code) and running_as_remote_code():
            raise ValueError(
                "`model_card` and `remote_code` need the hf_textcluster package (`pip install hf_textcluster`); this "
                "model runs as a repository's remote code."
            )
        self._check_finite_weights()
        save_directory = os.fspath(save_directory)
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

    def push_to_hub(self, repo_id: str, **kwargs):
        """Upload this trained clusterer to ``repo_id`` in one commit: weights, config, tokenizer, a generated model
        card (with ``metrics=`` / ``training_run=`` and the clusters' keywords from ``texts=``) and the inference code
        for ``trust_remote_code``. Refuses (before uploading anything) a model whose clusters were never initialised.
        Arguments: see :func:`hf_textcluster.hub.push.push_to_hub`. Returns the ``CommitInfo``."""
        if running_as_remote_code():
            return super().push_to_hub(repo_id, **kwargs)
        return _package_layer("hub").push_to_hub(self, repo_id, **kwargs)
