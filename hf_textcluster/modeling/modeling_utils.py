"""TextClusteringPreTrainedModel: an encoder + pooling whose embedding is assigned to clusters by a method's head.

What serving a text needs, and nothing else (it ships as remote code): one batched call (``cluster_batch``) behind
``embed`` / ``predict*``, the calibration and checked loading. What the package adds (building, edits, the
all-or-nothing save ``folder_writer``) reaches it from above.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from transformers import AutoModel, PreTrainedModel

from .calibration import ClusterCalibration, calibrate, predict_with_confidence
from .configuration_utils import TextClusteringConfig, running_as_remote_code
from .encoding_passes import DEFAULT_ENCODE_BATCH_SIZE, ClusteringOutput, encode_sorted
from .layers import pool_token_states
from .loading_checks import check_finite_weights, load_checked
from .precision import autocast_dtype, quantize_int8, resolve_precision
from .validation import check_scalar, clip_text, validate_texts


class TextClusteringPreTrainedModel(PreTrainedModel):
    """Base class of all clusterers: the encoder (built from ``config.encoder``, no download), whose pooled states the
    method's ``cluster_head`` assigns to clusters, and a ``tokenizer`` so that ``embed``/``predict`` take texts."""

    config_class = TextClusteringConfig
    config: TextClusteringConfig
    # submodules' types, for type checkers (nn.Module's attribute lookup would say "Tensor | Module")
    encoder: PreTrainedModel
    calibration: ClusterCalibration
    cluster_head: Any  # the method's head (its own class in each method's modeling file)
    tokenizer: Any
    base_model_prefix = "encoder"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True
    _supports_sdpa = True

    # Never saved. Where whole-list passes run: None, here; or an object whose `run(encode, texts, batch_size,
    # show_progress_bar)` runs `encode` on its share (hf_textcluster.distributed).
    encoding_passes = None
    # How `save_pretrained` writes, `folder_writer(folder, write)`: None, in place; the package's all-or-nothing save.
    folder_writer: Any = None

    def __init__(self, config: TextClusteringConfig):
        super().__init__(config)
        self.encoder = AutoModel.from_config(config.encoder)
        encoder_config: Any = config.encoder  # a PreTrainedConfig once the config's __post_init__ has run
        self.calibration = ClusterCalibration(config.num_clusters, encoder_config.hidden_size)
        if config.refined_head_dim:  # a refined partition, served instead of the method's head (see editing)
            self.refined_head = torch.nn.Linear(config.refined_head_dim, config.num_clusters)
        self.tokenizer = None

    @torch.no_grad()
    def _init_weights(self, module):
        if module is not self.encoder and any(module is m for m in self.encoder.modules()):
            self.encoder._init_weights(module)
            return
        super()._init_weights(module)
        reset = getattr(module, "reset_own_parameters", None)
        if reset is not None:  # a head's own parameters (centroids, biases): placeholders until k-means / training
            reset()

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
        """The serving pass over one tokenized batch behind ``embed``, ``predict*`` and the pipeline: fp32 outputs
        (``distance`` / ``confidence`` once calibrated). Only the encoder runs at ``precision``; the heads run in fp32,
        since bf16 would round the probabilities and flip near-ties."""
        precision = resolve_precision(precision, self.device, inference=True)
        if with_clusters:
            self._check_clusters_initialized()
        return self._cluster_batch(inputs, precision, with_clusters)

    def _cluster_batch(self, inputs: dict[str, torch.Tensor], precision: str, with_clusters: bool) -> ClusteringOutput:
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
        """The encoder quantized to int8, made again only when its weights change (parameters' version counters)."""
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
        """The space k-means (and a refined head) works in: the cluster head's, unless a method says."""
        return self.cluster_features(embeddings)

    def head_probabilities(self, embeddings: torch.Tensor) -> torch.Tensor:
        """Soft assignment (batch x K) of pooled embeddings by the method's own ``cluster_head``."""
        return self.cluster_head(self.cluster_features(embeddings))

    def cluster_probabilities(self, embeddings: torch.Tensor) -> torch.Tensor:
        """What the model serves: the method's head, or once set, ``refined_head`` on normalised ``kmeans_features``."""
        if not self.config.refined_head_dim:
            return self.head_probabilities(embeddings)
        features = torch.nn.functional.normalize(self.kmeans_features(embeddings).float(), dim=-1)
        return torch.softmax(self.refined_head(features).float(), dim=-1)

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

    def _check_clusters_initialized(self):
        if not self.config.centroids_initialized:
            raise RuntimeError(
                f"This {type(self).__name__}'s clusters were never initialised: train it (with the hf_textcluster "
                "package: the trainer fits them first) or call `hf_textcluster.editing.initialize_clusters(model, "
                "texts)` before predicting."
            )

    def _require_tokenizer(self):
        if self.tokenizer is None:
            raise ValueError(
                f"{type(self).__name__} has no tokenizer: the directory it was loaded from has none. Pass "
                "`tokenizer=AutoTokenizer.from_pretrained(<encoder>)` to `from_pretrained`, or set `model.tokenizer`."
            )
        return self.tokenizer

    def tokenize(self, texts: Sequence[str], padding: bool | str = True) -> dict[str, torch.Tensor]:
        return self._require_tokenizer()(
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
        """The whole-list pass behind ``embed``, ``predict*`` and ``calibrate``: ``fields`` as CPU tensors in input
        order, run here or by ``encoding_passes`` (split between processes)."""

        def encode(shard: list[str], show: bool | None) -> Any:
            return encode_sorted(self, shard, batch_size, show, precision, fields)

        if self.encoding_passes is None:
            return encode(texts, show_progress_bar)
        return self.encoding_passes.run(encode, texts, batch_size, show_progress_bar)

    def _serving_arguments(self, texts, batch_size, precision) -> tuple[list[str], str]:
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
        """Pooled embeddings (float32, N x hidden) of non-blank texts, in length-sorted batches of ``batch_size``.
        ``show_progress_bar=None``: a bar for large inputs only. ``precision``: ``"auto"`` (bf16 only where the device
        runs it natively), ``"fp32"``, ``"bf16"``, ``"fp16"`` or ``"int8"`` (CPU only; ~96% of texts in fp32's
        cluster, a few % change cluster with their batch companions)."""
        texts, precision = self._serving_arguments(texts, batch_size, precision)
        outputs = self._encode_texts(texts, batch_size, show_progress_bar, precision, ("embeddings",))
        return outputs.embeddings.numpy()

    def predict_proba(
        self,
        texts: Sequence[str],
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        show_progress_bar: bool | None = None,
        precision: str | torch.dtype | None = "auto",
    ) -> np.ndarray:
        """Soft assignments (N, K): the method's own, often nearly flat (``predict_with_confidence`` is calibrated).
        Arguments as for ``embed``."""
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
        """Cluster ids (N,); outside int8, a text's cluster never depends on the call's other texts. Arguments as for
        ``embed``; an untrained model raises a RuntimeError."""
        return self.predict_proba(texts, batch_size, show_progress_bar, precision).argmax(axis=-1)

    @property
    def is_calibrated(self) -> bool:
        """Whether ``calibrate`` was run (the trainer does it at the end of training)."""
        return bool(self.config.num_calibration_texts)

    @property
    def flags_outliers(self) -> bool:
        """Whether serving flags outliers by default: ``config.flag_outliers`` (``train --outliers``), calibrated."""
        return bool(self.config.flag_outliers and self.is_calibrated)

    def calibrated_confidence(self, embeddings: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
        """The calibrated confidence (N,) in [0, 1] (see :mod:`~hf_textcluster.modeling.calibration`)."""
        self._require_calibration("`calibrated_confidence`")
        return self.calibration.confidence(embeddings, probs)

    def _require_calibration(self, what: str = "`predict_with_confidence`") -> None:
        if not self.is_calibrated:
            raise ValueError(
                f"{what} needs a calibrated model, and this {type(self).__name__} is not calibrated (models trained "
                "before hf_textcluster calibrated them at the end of training). Call `model.calibrate(texts)` with "
                "(a sample of) its training texts and save it, or run `hf-textcluster calibrate --model DIR --input "
                "FILE`."
            )

    def check_can_serve(self, needs_calibration: str | None = None) -> None:
        """Raise the error a prediction would, before any text (``needs_calibration``: the option that needs it)."""
        self._check_clusters_initialized()
        if needs_calibration:
            self._require_calibration(needs_calibration)

    predict_with_confidence = predict_with_confidence  # the read-out of calibration.py, a method of every model

    calibrate = calibrate  # calibration.py's fit, a method of every model

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, tokenizer=None, **kwargs):
        """transformers' load, checked, with the tokenizer beside the weights (or ``tokenizer``): ``load_checked``."""
        return load_checked(
            cls, super().from_pretrained, str(pretrained_model_name_or_path), model_args, tokenizer, kwargs
        )

    def save_pretrained(self, save_directory: str | os.PathLike, *args, **kwargs):
        """Save config, weights and tokenizer (refused with NaN or inf weights); ``push_to_hub=True``: then push. With
        the package, ``folder_writer`` swaps the new folder in at once (an interrupted save leaves the old one)."""
        check_finite_weights(self)
        if kwargs.pop("push_to_hub", False):  # transformers' spelling of "save, then push to repo_id"
            hub_kwargs = {k: kwargs.pop(k) for k in ("token", "private", "commit_message", "create_pr") if k in kwargs}
            repo_id = kwargs.pop("repo_id", None) or os.path.basename(os.path.normpath(os.fspath(save_directory)))
            self.save_pretrained(save_directory, *args, **kwargs)
            return self.push_to_hub(repo_id, **hub_kwargs)  # type: ignore[arg-type]  # transformers wraps it

        def write(staging: str) -> None:
            super(TextClusteringPreTrainedModel, self).save_pretrained(staging, *args, **kwargs)
            if self.tokenizer is not None:
                self.tokenizer.save_pretrained(staging)

        if self.folder_writer is None:
            write(os.fspath(save_directory))
        else:
            self.folder_writer(save_directory, write)

    @classmethod
    def register_for_auto_class(cls, auto_class="AutoModel"):
        """Refused in the package: transformers would copy its files with their package imports."""
        if running_as_remote_code():
            return super().register_for_auto_class(auto_class)
        raise NotImplementedError(
            "hf_textcluster clusterers ship their inference code through the package: use "
            "`hf_textcluster.hub.save_pretrained(model, dir, remote_code=True)` or `hf_textcluster.hub.push_to_hub`."
        )
