# coding=utf-8
"""Self-contained text clusterers (configs + models + ``text-clustering`` pipeline) for ``trust_remote_code=True``.

This one file is uploaded next to the weights of every model pushed by ``hf_textcluster`` whose method has remote
code (SCCL, DEC-MLM); ``config.json``'s ``auto_map`` names the method's config and model classes in it. It imports
only ``torch``, ``numpy`` and ``transformers`` (never ``hf_textcluster``), so that

    from transformers import AutoModel, pipeline
    model = AutoModel.from_pretrained("org/name", trust_remote_code=True)
    clusterer = pipeline("text-clustering", model="org/name", trust_remote_code=True)

work where ``hf_textcluster`` is not installed. It is inference only: training needs the ``hf_textcluster`` package
(``pip install hf_textcluster``), which loads the same repository without remote code.

Every method here is an encoder whose pooled output e (mean or [CLS]) is softly assigned to K centroids μ by a
Student's t kernel, q_k ∝ (1 + ||e - μ_k||² / α)^(-(α+1)/2); a text's cluster is argmax q. The methods differ in
the heads they trained with, which the checkpoints keep (with the package's parameter names, so that loading reports
no missing or unexpected weights and ``save_pretrained`` writes the complete checkpoint back):

- SCCL (Zhang et al., "Supporting Clustering with Contrastive Learning", NAACL 2021): a contrast head g
  (Linear-ReLU-Linear).
- DEC-MLM (Huang et al., "Unsupervised Fine-tuning for Text Clustering", COLING 2020): a masked-LM head
  (dense-activation-LayerNorm, decoder tied to the input word embeddings). Prediction never runs it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from transformers import AutoConfig, AutoModel, AutoTokenizer, Pipeline, PreTrainedConfig, PreTrainedModel
from transformers.activations import ACT2FN
from transformers.configuration_utils import SubConfigSpec
from transformers.utils import ModelOutput

POOLING_MODES = ("mean", "cls")


# ----- configurations -----------------------------------------------------------------------------------------------
class TextClusteringConfig(PreTrainedConfig):
    r"""What every clusterer's configuration holds (the same fields as ``hf_textcluster.TextClusteringConfig``).

    Args:
        encoder: the encoder's configuration (e.g. a ``BertConfig`` as a dict).
        num_clusters: K.
        pooling: ``"mean"`` or ``"cls"``.
        normalize_embeddings: L2-normalise the pooled embedding.
        max_length: texts are truncated to this many tokens.
        centroids_initialized: whether the centroids were fitted; an unfitted model refuses to predict.
        alpha: degrees of freedom of the Student's t kernel.
    """

    model_type = "text-clustering"
    sub_configs_defaults = {"encoder": SubConfigSpec(config_class=AutoConfig, model_type="bert")}

    encoder: PreTrainedConfig | dict | None = None
    num_clusters: int = 8
    pooling: str = "mean"
    normalize_embeddings: bool = False
    max_length: int = 32
    centroids_initialized: bool = False
    alpha: float = 1.0

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        if isinstance(self.num_clusters, bool) or not isinstance(self.num_clusters, int) or self.num_clusters < 2:
            raise ValueError(f"`num_clusters` must be an integer >= 2, got {self.num_clusters!r}.")
        if self.pooling not in POOLING_MODES:
            raise ValueError(f"`pooling` must be one of {POOLING_MODES}, got {self.pooling!r}.")
        if not isinstance(self.max_length, int) or self.max_length < 1:
            raise ValueError(f"`max_length` must be a positive integer, got {self.max_length!r}.")
        if not self.alpha > 0:
            raise ValueError(f"`alpha` must be > 0, got {self.alpha!r}.")
        if self.id2label is None or len(self.id2label) != self.num_clusters:
            self.id2label = {i: f"cluster_{i}" for i in range(self.num_clusters)}
            self.label2id = {name: i for i, name in self.id2label.items()}


class SCCLConfig(TextClusteringConfig):
    r"""SCCL's configuration (same fields as ``hf_textcluster.SCCLConfig``). ``contrast_dim`` sizes the contrast
    head; ``temperature``, ``eta`` and ``cluster_loss_weight`` are training hyper-parameters, kept for the record."""

    model_type = "sccl"

    contrast_dim: int = 128
    temperature: float = 0.5
    eta: float = 10.0
    cluster_loss_weight: float = 1.0


class DECMLMConfig(TextClusteringConfig):
    r"""DEC-MLM's configuration (same fields as ``hf_textcluster.DECMLMConfig``). The masked-LM settings
    (``mlm_*``), the loss weights and ``target_refresh_steps`` are training hyper-parameters, kept for the record;
    ``mlm_head_pretrained`` says whether the masked-LM head started from pretrained weights."""

    model_type = "decmlm"

    mlm_probability: float = 0.1
    mlm_mask_fraction: float = 0.8
    mlm_random_fraction: float = 0.1
    mlm_loss_weight: float = 1.0
    cluster_loss_weight: float = 1.0
    target_refresh_steps: int | None = None
    mlm_head_pretrained: bool = False


# ----- layers -------------------------------------------------------------------------------------------------------
# hf_textcluster's own models and losses import these definitions, so the checkpoint layout (parameter names and
# shapes), the pooling and the soft assignment exist once, here.
@dataclass
class ClusteringOutput(ModelOutput):
    """Output of a clusterer's forward.

    Args:
        loss: the training objective, when the forward computed one.
        embeddings: pooled text embeddings (batch x hidden).
        cluster_probs: soft cluster assignment q (batch x K), rows sum to 1.
        logits: log q, so that ``argmax(logits)`` is the cluster and ``Trainer`` metrics work unchanged.
    """

    loss: torch.FloatTensor | None = None
    embeddings: torch.FloatTensor | None = None
    cluster_probs: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None


def pool_token_states(
    token_states: torch.Tensor, attention_mask: torch.Tensor, pooling: str = "mean", normalize: bool = False
) -> torch.Tensor:
    """One embedding per text: the mean of the non-padding token states (``"mean"``) or the first one (``"cls"``),
    L2-normalised when ``normalize``."""
    if pooling == "cls":
        pooled = token_states[:, 0]
    else:
        mask = attention_mask.unsqueeze(-1).to(token_states.dtype)
        pooled = (token_states * mask).sum(dim=1) / mask.sum(dim=1).clamp_min(1e-9)
    if normalize:
        pooled = nn.functional.normalize(pooled, dim=-1)
    return pooled


def student_t_assignment(embeddings: torch.Tensor, centroids: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    """Soft assignment q_jk with a Student's t kernel (SCCL Eq. 3, DEC-MLM Eq. 3).

    q_jk ∝ (1 + ||e_j - μ_k||² / α)^(-(α+1)/2), normalised over k. Computed in log space for stability.
    """
    squared_distances = torch.cdist(embeddings.float(), centroids.float()).pow(2)
    log_kernel = -(alpha + 1.0) / 2.0 * torch.log1p(squared_distances / alpha)
    return torch.softmax(log_kernel, dim=-1)


class StudentTAssignment(nn.Module):
    """Cluster centroids (a K x d weight) and the Student's t soft assignment to them (SCCL Eq. 3)."""

    def __init__(self, num_clusters: int, embedding_dim: int, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha
        self.centroids = nn.Parameter(torch.empty(num_clusters, embedding_dim))

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        return student_t_assignment(embeddings, self.centroids, self.alpha)


class ProjectionHead(nn.Module):
    """Linear - ReLU - Linear, the contrast head g(·) of SCCL (and the projectors of SimCLR-style methods)."""

    def __init__(self, input_dim: int, hidden_dim: int, output_dim: int):
        super().__init__()
        self.dense = nn.Linear(input_dim, hidden_dim)
        self.activation = nn.ReLU()
        self.out_proj = nn.Linear(hidden_dim, output_dim)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.out_proj(self.activation(self.dense(hidden)))


class MaskedLMHead(nn.Module):
    """The masked-LM head of BERT-style encoders: dense - activation - LayerNorm, then scores over the vocabulary.

    The decoder is tied to the encoder's input word embeddings, which are passed in at call time: the tie cannot
    break on loading or resizing, and the matrix is stored once (only the per-token ``bias`` is the head's own).
    ``embedding_dim`` is the width of the word embeddings (the hidden size, except for factorised embeddings).
    """

    def __init__(
        self,
        hidden_size: int,
        vocab_size: int,
        embedding_dim: int | None = None,
        hidden_act: str = "gelu",
        layer_norm_eps: float = 1e-12,
    ):
        super().__init__()
        embedding_dim = embedding_dim or hidden_size
        self.dense = nn.Linear(hidden_size, embedding_dim)
        self.activation = ACT2FN[hidden_act] if isinstance(hidden_act, str) else hidden_act
        self.layer_norm = nn.LayerNorm(embedding_dim, eps=layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, hidden_states: torch.Tensor, word_embeddings: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits (..., vocab_size) of token states (..., hidden_size)."""
        transformed = self.layer_norm(self.activation(self.dense(hidden_states)))
        return nn.functional.linear(transformed, word_embeddings, self.bias)


# ----- models -------------------------------------------------------------------------------------------------------
class TextClusteringModel(PreTrainedModel):
    """Encoder + pooling + the method's ``cluster_head`` (a :class:`StudentTAssignment`). ``forward(input_ids,
    attention_mask)`` returns a ``ClusteringOutput``; ``predict(texts)`` / ``predict_proba(texts)`` / ``embed(texts)``
    take raw texts (with ``model.tokenizer``, loaded by ``from_pretrained`` and written by ``save_pretrained``)."""

    config_class = TextClusteringConfig
    base_model_prefix = "encoder"
    main_input_name = "input_ids"
    _supports_sdpa = True

    def __init__(self, config: TextClusteringConfig):
        super().__init__(config)
        self.encoder = AutoModel.from_config(config.encoder)
        self.tokenizer = None

    @torch.no_grad()
    def _init_weights(self, module):
        if module is not self.encoder and any(module is m for m in self.encoder.modules()):
            self.encoder._init_weights(module)
            return
        super()._init_weights(module)
        if isinstance(module, StudentTAssignment):
            nn.init.normal_(module.centroids, mean=0.0, std=0.02)
        elif isinstance(module, MaskedLMHead):
            nn.init.zeros_(module.bias)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, tokenizer=None, **kwargs):
        loaded = super().from_pretrained(pretrained_model_name_or_path, *model_args, **kwargs)
        model = loaded[0] if isinstance(loaded, tuple) else loaded  # `output_loading_info=True` adds the report
        if tokenizer is None:
            hub_kwargs = {k: kwargs[k] for k in ("revision", "token", "cache_dir", "local_files_only") if k in kwargs}
            try:  # this code already runs as remote code: the tokenizer may read the same config without asking again
                tokenizer = AutoTokenizer.from_pretrained(
                    pretrained_model_name_or_path, trust_remote_code=True, **hub_kwargs
                )
            except Exception:  # noqa: BLE001 - reported when texts are used
                tokenizer = None
        model.tokenizer = tokenizer
        return loaded

    def save_pretrained(self, save_directory, *args, push_to_hub: bool = False, **kwargs):
        """``PreTrainedModel.save_pretrained``, plus the tokenizer (so that the folder loads and predicts as is)."""
        if push_to_hub:  # save locally, then push through `push_to_hub`, which saves (tokenizer included) and uploads
            hub_keys = ("repo_id", "commit_message", "commit_description", "private", "token", "revision", "create_pr")
            hub_kwargs = {k: kwargs.pop(k) for k in hub_keys if k in kwargs}
            self.save_pretrained(save_directory, *args, **kwargs)
            repo_id = hub_kwargs.pop("repo_id", None) or os.path.basename(os.path.normpath(os.fspath(save_directory)))
            return self.push_to_hub(repo_id, **hub_kwargs)
        super().save_pretrained(save_directory, *args, **kwargs)
        if self.tokenizer is not None and kwargs.get("is_main_process", True):
            self.tokenizer.save_pretrained(save_directory)

    def _check_centroids_initialized(self):
        if not self.config.centroids_initialized:
            raise RuntimeError(
                f"This {type(self).__name__}'s clusters were never initialised (it was pushed before training). "
                "Train it with the hf_textcluster package first."
            )

    def pool(self, token_states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return pool_token_states(token_states, attention_mask, self.config.pooling, self.config.normalize_embeddings)

    def encode(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        return self.pool(self.encoder(**inputs).last_hidden_state, attention_mask)

    def cluster_probabilities(self, embeddings: torch.Tensor) -> torch.Tensor:
        return self.cluster_head(embeddings)

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
        """Pooled embeddings (N x hidden) of raw texts."""
        return self._batched(texts, batch_size, "embedding")

    def predict_proba(self, texts, batch_size: int = 64) -> np.ndarray:
        """Soft cluster assignments (N x K) of raw texts."""
        self._check_centroids_initialized()
        return self._batched(texts, batch_size, "probabilities")

    def predict(self, texts, batch_size: int = 64) -> np.ndarray:
        """Cluster ids (N,) of raw texts."""
        return self.predict_proba(texts, batch_size).argmax(axis=-1)


class SCCLModel(TextClusteringModel):
    """SCCL: encoder ψ, contrast head g (``contrast_head``) and clustering head (``cluster_head``)."""

    config_class = SCCLConfig

    def __init__(self, config: SCCLConfig):
        super().__init__(config)
        hidden_size = config.encoder.hidden_size
        self.contrast_head = ProjectionHead(hidden_size, hidden_size, config.contrast_dim)
        self.cluster_head = StudentTAssignment(config.num_clusters, hidden_size, alpha=config.alpha)
        self.post_init()

    def contrast_features(self, embeddings: torch.Tensor) -> torch.Tensor:
        """z = g(ψ(x)), the features SCCL's instance contrastive loss compares."""
        return self.contrast_head(embeddings)


class DECMLMModel(TextClusteringModel):
    """DEC-MLM: a masked-LM encoder (``mlm_head``, never run by prediction) and clustering head (``cluster_head``)."""

    config_class = DECMLMConfig

    def __init__(self, config: DECMLMConfig):
        super().__init__(config)
        encoder_config = config.encoder
        hidden_size = encoder_config.hidden_size
        self.mlm_head = MaskedLMHead(
            hidden_size,
            vocab_size=encoder_config.vocab_size,
            embedding_dim=self.encoder.get_input_embeddings().weight.shape[1],
            hidden_act=getattr(encoder_config, "hidden_act", None) or "gelu",
            layer_norm_eps=getattr(encoder_config, "layer_norm_eps", None) or 1e-12,
        )
        self.cluster_head = StudentTAssignment(config.num_clusters, hidden_size, alpha=config.alpha)
        self.post_init()

    def mlm_logits(self, token_states: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits of encoder token states (the decoder is the input word embedding matrix)."""
        return self.mlm_head(token_states, self.encoder.get_input_embeddings().weight)


# ----- pipeline -----------------------------------------------------------------------------------------------------
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
