"""TextClusteringPreTrainedModel: an encoder + pooling whose embedding is assigned to clusters by a method's head.

Part of the inference code that every pushed repository carries (see :mod:`hf_textcluster.hub.push`): this module, the
config, layers, pipeline and each method's configuration/modeling files import only torch, numpy, transformers and
each other, so that ``trust_remote_code=True`` works where hf_textcluster is not installed.

The model base holds what serving a text needs: the encoder, pooling, the heads, the clusters' initialisation and the
passes over raw texts (``embed``, ``predict``). As transformers does with its mixins, the rest of a clusterer's API
sits in one mixin per job: loading, saving and pushing (:mod:`~hf_textcluster.modeling.serialization`, with the
checks of :mod:`~hf_textcluster.modeling.loading_checks`), the calibrated confidence
(:mod:`~hf_textcluster.modeling.calibration_mixin`) and curating the clusters
(:mod:`~hf_textcluster.modeling.curation`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from transformers import AutoModel, PreTrainedModel

from .calibration import ClusterCalibration
from .calibration_mixin import CalibrationMixin
from .configuration_utils import TextClusteringConfig
from .curation import CurationMixin
from .encoding_passes import DEFAULT_ENCODE_BATCH_SIZE, LOCAL_PASSES, ClusteringOutput, encode_sorted
from .kmeans import DEFAULT_KMEANS_MAX_SAMPLES, fit_kmeans
from .layers import pool_token_states
from .precision import autocast_dtype, quantize_int8, resolve_precision
from .reuse import reuse
from .serialization import SerializationMixin, package_layer
from .validation import check_num_clusters, check_scalar, clip_text, validate_texts


class TextClusteringPreTrainedModel(CurationMixin, CalibrationMixin, SerializationMixin, PreTrainedModel):
    """Base class of all clusterers: builds the encoder from ``config.encoder`` (never downloads in ``__init__``),
    pools its token states into one embedding per text, and hands the embedding to the method's ``cluster_head``
    (see :mod:`hf_textcluster.modeling.layers` for what a head provides). Holds an optional ``tokenizer`` so that
    ``embed``/``predict`` take raw texts and ``save_pretrained`` writes a self-contained directory. Loading and saving,
    the calibrated confidence and curating the clusters come from its mixins (``SerializationMixin``,
    ``CalibrationMixin``, ``CurationMixin``)."""

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
        coef, intercept = (v.detach().cpu() if isinstance(v, torch.Tensor) else v for v in (coef, intercept))
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
        if isinstance(centers, torch.Tensor):  # numpy reads a tensor on the host only (a TorchKMeans' `centers`)
            centers = centers.detach().cpu()
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
        if isinstance(embeddings, torch.Tensor):  # numpy reads a tensor on the host only
            embeddings = embeddings.detach().cpu()
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
            lambda shard, show: encode_sorted(self, shard, batch_size, show, precision, fields),
            texts,
            batch_size,
            show_progress_bar,
        )

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
        # within a reusing_results block, one pass per (encoder weights, pooling, texts, batch, precision): what auto's
        # signals and its pretrained candidates encode with the same untrained encoder
        return reuse(
            lambda: ("embed", *self._encoding_identity(), "\x00".join(texts), batch_size, precision),
            lambda: self._encode_texts(texts, batch_size, show_progress_bar, precision, ("embeddings",))[
                "embeddings"
            ].numpy(),
        )

    def _encoding_identity(self) -> tuple:
        """What the pooled embeddings of a text depend on besides the text: the encoder's weights, the tokenizer,
        the pooling and the length cut (the key of a reused encoding pass, see :mod:`.reuse`)."""
        tokenizer = self._require_tokenizer()
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is not None:  # without the truncation and padding that a call leaves set on it
            state = json.loads(backend.to_str())
            vocabulary: Any = {k: v for k, v in state.items() if k not in ("truncation", "padding")}
        else:
            vocabulary = (type(tokenizer).__name__, sorted(tokenizer.get_vocab().items()))
        config = self.config
        return (
            self.encoder,
            vocabulary,
            config.pooling,
            config.normalize_embeddings,
            config.max_length,
            str(self.device),
        )

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
        fields = ("cluster_probs",)
        return self._encode_texts(texts, batch_size, show_progress_bar, precision, fields)["cluster_probs"].numpy()

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

    def cluster_info(self, texts: Sequence[str] | None = None, **kwargs):
        """A table of the clusters (BERTopic's ``get_topic_info``): one row per cluster with ``cluster``, ``name``,
        ``size``, ``keywords``, ``representative_texts`` and ``mean_confidence``, as a ``pandas.DataFrame``. Without
        ``texts``, from the summary of the training texts saved with the model; with ``texts``, recomputed from them.
        See :func:`hf_textcluster.representation.summary.cluster_info` (``**kwargs``: its options). Needs the
        hf_textcluster package (not available as a repository's remote code).

        Example:
            >>> model.cluster_info()[["cluster", "name", "size"]]  # doctest: +SKIP
        """
        summary = package_layer("summary")
        if summary is None:
            raise ImportError("`cluster_info` needs the hf_textcluster package: pip install it to use it.")
        return summary.cluster_info(self, texts, **kwargs)
