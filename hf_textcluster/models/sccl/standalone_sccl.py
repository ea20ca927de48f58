# coding=utf-8
"""Self-contained SCCL clusterer (config + model + ``text-clustering`` pipeline) for ``trust_remote_code=True``.

This file is uploaded next to the weights of every SCCL model pushed by ``hf_textcluster``. It imports only
``torch``, ``numpy`` and ``transformers`` (never ``hf_textcluster``), so that

    from transformers import AutoModel, pipeline
    model = AutoModel.from_pretrained("org/name", trust_remote_code=True)
    clusterer = pipeline("text-clustering", model="org/name", trust_remote_code=True)

work where ``hf_textcluster`` is not installed. It is inference only: training needs the ``hf_textcluster`` package
(``pip install hf_textcluster``), which loads the same repository without remote code.

SCCL: Zhang et al., "Supporting Clustering with Contrastive Learning", NAACL 2021. The weights are an encoder,
a contrast head g (Linear-ReLU-Linear) and K centroids; a text's cluster is the argmax of the Student's t soft
assignment of its pooled embedding to the centroids (Eq. 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from transformers import AutoConfig, AutoModel, AutoTokenizer, Pipeline, PreTrainedConfig, PreTrainedModel
from transformers.configuration_utils import SubConfigSpec
from transformers.utils import ModelOutput

POOLING_MODES = ("mean", "cls")


class SCCLConfig(PreTrainedConfig):
    r"""Configuration of an SCCL clusterer (same fields as ``hf_textcluster.SCCLConfig``).

    Args:
        encoder: the encoder's configuration (e.g. a ``BertConfig`` as a dict).
        num_clusters: K.
        pooling: ``"mean"`` or ``"cls"``.
        normalize_embeddings: L2-normalise the pooled embedding.
        max_length: texts are truncated to this many tokens.
        centroids_initialized: whether the centroids were fitted; an unfitted model refuses to predict.
        contrast_dim, alpha, temperature, eta, cluster_loss_weight: SCCL's hyper-parameters (only ``alpha``, the
            Student's t degrees of freedom, matters for prediction).
    """

    model_type = "sccl"
    sub_configs_defaults = {"encoder": SubConfigSpec(config_class=AutoConfig, model_type="bert")}

    encoder: PreTrainedConfig | dict | None = None
    num_clusters: int = 8
    pooling: str = "mean"
    normalize_embeddings: bool = False
    max_length: int = 32
    centroids_initialized: bool = False
    contrast_dim: int = 128
    alpha: float = 1.0
    temperature: float = 0.5
    eta: float = 10.0
    cluster_loss_weight: float = 1.0

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        if isinstance(self.num_clusters, bool) or not isinstance(self.num_clusters, int) or self.num_clusters < 2:
            raise ValueError(f"`num_clusters` must be an integer >= 2, got {self.num_clusters!r}.")
        if self.pooling not in POOLING_MODES:
            raise ValueError(f"`pooling` must be one of {POOLING_MODES}, got {self.pooling!r}.")
        if self.id2label is None or len(self.id2label) != self.num_clusters:
            self.id2label = {i: f"cluster_{i}" for i in range(self.num_clusters)}
            self.label2id = {name: i for i, name in self.id2label.items()}


@dataclass
class ClusteringOutput(ModelOutput):
    """``embeddings`` (batch x hidden), ``cluster_probs`` (batch x K, rows sum to 1), ``logits`` = log q."""

    loss: torch.FloatTensor | None = None
    embeddings: torch.FloatTensor | None = None
    cluster_probs: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None


class ProjectionHead(nn.Module):
    """The contrast head g: Linear - ReLU - Linear (kept so that the checkpoint's weights load unchanged)."""

    def __init__(self, input_dim: int, hidden_dim: int, output_dim: int):
        super().__init__()
        self.dense = nn.Linear(input_dim, hidden_dim)
        self.activation = nn.ReLU()
        self.out_proj = nn.Linear(hidden_dim, output_dim)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.out_proj(self.activation(self.dense(hidden)))


class StudentTAssignment(nn.Module):
    """K centroids and the Student's t soft assignment q_jk ∝ (1 + ||e_j - μ_k||² / α)^(-(α+1)/2)."""

    def __init__(self, num_clusters: int, embedding_dim: int, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha
        self.centroids = nn.Parameter(torch.empty(num_clusters, embedding_dim))

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        squared_distances = torch.cdist(embeddings.float(), self.centroids.float()).pow(2)
        log_kernel = -(self.alpha + 1.0) / 2.0 * torch.log1p(squared_distances / self.alpha)
        return torch.softmax(log_kernel, dim=-1)


class SCCLModel(PreTrainedModel):
    """Encoder + pooling + SCCL heads. ``forward(input_ids, attention_mask)`` returns a ``ClusteringOutput``;
    ``predict(texts)`` / ``predict_proba(texts)`` / ``embed(texts)`` take raw texts (with ``model.tokenizer``)."""

    config_class = SCCLConfig
    base_model_prefix = "encoder"
    main_input_name = "input_ids"
    _supports_sdpa = True

    def __init__(self, config: SCCLConfig):
        super().__init__(config)
        self.encoder = AutoModel.from_config(config.encoder)
        hidden_size = config.encoder.hidden_size
        self.contrast_head = ProjectionHead(hidden_size, hidden_size, config.contrast_dim)
        self.cluster_head = StudentTAssignment(config.num_clusters, hidden_size, alpha=config.alpha)
        self.tokenizer = None
        self.post_init()

    @torch.no_grad()
    def _init_weights(self, module):
        if module is not self.encoder and any(module is m for m in self.encoder.modules()):
            self.encoder._init_weights(module)
            return
        super()._init_weights(module)
        if isinstance(module, StudentTAssignment):
            nn.init.normal_(module.centroids, mean=0.0, std=0.02)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, tokenizer=None, **kwargs):
        model = super().from_pretrained(pretrained_model_name_or_path, *model_args, **kwargs)
        if tokenizer is None:
            hub_kwargs = {k: kwargs[k] for k in ("revision", "token", "cache_dir", "local_files_only") if k in kwargs}
            try:  # this code already runs as remote code: the tokenizer may read the same config without asking again
                tokenizer = AutoTokenizer.from_pretrained(
                    pretrained_model_name_or_path, trust_remote_code=True, **hub_kwargs
                )
            except Exception:  # noqa: BLE001 - reported when texts are used
                tokenizer = None
        model.tokenizer = tokenizer
        return model

    def _check_centroids_initialized(self):
        if not self.config.centroids_initialized:
            raise RuntimeError(
                "This SCCL model's clusters were never initialised (it was pushed before training). Train it with "
                "the hf_textcluster package first."
            )

    def encode(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        token_states = self.encoder(**inputs).last_hidden_state
        if self.config.pooling == "cls":
            pooled = token_states[:, 0]
        else:
            mask = attention_mask.unsqueeze(-1).to(token_states.dtype)
            pooled = (token_states * mask).sum(dim=1) / mask.sum(dim=1).clamp_min(1e-9)
        if self.config.normalize_embeddings:
            pooled = nn.functional.normalize(pooled, dim=-1)
        return pooled

    def cluster_probabilities(self, embeddings: torch.Tensor) -> torch.Tensor:
        return self.cluster_head(embeddings)

    def contrast_features(self, embeddings: torch.Tensor) -> torch.Tensor:
        return self.contrast_head(embeddings)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, return_dict=None):
        if input_ids is None:
            raise ValueError("`input_ids` is required: tokenize the texts first, or call `model.predict(texts)`.")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        embeddings = self.encode(input_ids, attention_mask, token_type_ids)
        probs = self.cluster_probabilities(embeddings)
        output = ClusteringOutput(embeddings=embeddings, cluster_probs=probs, logits=torch.log(probs.clamp_min(1e-12)))
        return output if return_dict is not False else output.to_tuple()

    @torch.inference_mode()
    def _batched(self, texts, batch_size: int, want: str) -> np.ndarray:
        if isinstance(texts, str) or not all(isinstance(t, str) and t.strip() for t in texts) or not len(texts):
            raise ValueError("`texts` must be a non-empty list of non-empty strings.")
        if self.tokenizer is None:
            raise ValueError("This model has no tokenizer: set `model.tokenizer = AutoTokenizer.from_pretrained(...)`.")
        texts = list(texts)
        was_training = self.training
        self.eval()
        chunks = []
        try:
            for start in range(0, len(texts), batch_size):
                inputs = self.tokenizer(
                    texts[start : start + batch_size], padding=True, truncation=True,
                    max_length=self.config.max_length, return_tensors="pt",
                )
                embeddings = self.encode(**{k: v.to(self.device) for k, v in inputs.items()}).float()
                result = embeddings if want == "embedding" else self.cluster_probabilities(embeddings)
                chunks.append(result.float().cpu().numpy())
        finally:
            self.train(was_training)
        return np.concatenate(chunks, axis=0)

    def embed(self, texts, batch_size: int = 64) -> np.ndarray:
        return self._batched(texts, batch_size, "embedding")

    def predict_proba(self, texts, batch_size: int = 64) -> np.ndarray:
        self._check_centroids_initialized()
        return self._batched(texts, batch_size, "probabilities")

    def predict(self, texts, batch_size: int = 64) -> np.ndarray:
        return self.predict_proba(texts, batch_size).argmax(axis=-1)


class TextClusteringPipeline(Pipeline):
    """``pipeline("text-clustering", model=..., trust_remote_code=True)``: texts -> ``{"cluster", "label", "score"}``
    (with ``top_k=k``: the k most likely clusters per text)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("batch_size", 64)
        super().__init__(*args, **kwargs)
        if self.tokenizer is None:
            self.tokenizer = getattr(self.model, "tokenizer", None)
        if self.tokenizer is None:
            raise ValueError("The text-clustering pipeline needs a tokenizer: pass `tokenizer=` to `pipeline(...)`.")
        if not hasattr(self.model, "cluster_probabilities"):
            raise ValueError(f"{type(self.model).__name__} is not a text clusterer.")
        self.model._check_centroids_initialized()

    def _sanitize_parameters(self, top_k=None, max_length=None, **kwargs):
        preprocess_params = {"max_length": max_length} if max_length is not None else {}
        postprocess_params = {}
        if top_k is not None:
            num_clusters = self.model.config.num_clusters
            if not isinstance(top_k, int) or not 1 <= top_k <= num_clusters:
                raise ValueError(f"`top_k` must be an integer between 1 and {num_clusters}, got {top_k!r}.")
            postprocess_params["top_k"] = top_k
        return preprocess_params, {}, postprocess_params

    def __call__(self, inputs, **kwargs):
        if isinstance(inputs, str):
            return super().__call__([inputs], **kwargs)[0]
        return super().__call__(inputs, **kwargs)

    def preprocess(self, text, max_length=None):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"Every input must be a non-empty string, got {text!r}.")
        return self.tokenizer(
            text, truncation=True, max_length=max_length or self.model.config.max_length, return_tensors="pt"
        )

    def _forward(self, model_inputs):
        return {"cluster_probs": self.model(**model_inputs).cluster_probs}

    def postprocess(self, model_outputs, top_k=None):
        probs = model_outputs["cluster_probs"][0].float()
        id2label = self.model.config.id2label
        scores, clusters = torch.topk(probs, top_k or 1)
        results = [
            {"cluster": int(c), "label": id2label.get(int(c), f"cluster_{int(c)}"), "score": float(s)}
            for s, c in zip(scores, clusters)
        ]
        return results if top_k is not None else results[0]
