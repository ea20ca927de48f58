"""AECL model: an encoder, the projecting network G_z, the sample-level attention network G_h (Eq. 1-3) and the
clustering network G_p. Training attends over a batch; serving must not let a text's cluster depend on its
companions, so it attends to the text and a stored reference set of training texts (``config.serving_attention``).
A re-clustered model serves k-means centres on its embeddings instead (``config.serving_head="kmeans"``)."""

from __future__ import annotations

import math

import torch
from torch import nn

from ...modeling.layers import StudentTAssignment
from ...modeling.modeling_utils import TextClusteringPreTrainedModel
from .configuration_aecl import AECLConfig


class SampleAttention(nn.Module):
    """G_h: K1 = Z W_K1, K2 = Z W_K2, T = Z W_T (Eq. 1), S = softmax(K1 K2ᵀ / √D2) (Eq. 2), S T (Eq. 3), inside the
    post-norm transformer layer the authors' code uses (output projection, residual, LayerNorm, feed-forward)."""

    def __init__(self, dim: int, ff_dim: int, dropout: float):
        super().__init__()
        self.key1, self.key2, self.value = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.output = nn.Linear(dim, dim)
        self.feed_forward = nn.Sequential(
            nn.Linear(dim, ff_dim), nn.ReLU(), nn.Dropout(dropout), nn.Linear(ff_dim, dim)
        )
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, z: torch.Tensor, reference: torch.Tensor | None = None, mode: str = "batch"):
        """``mode="batch"``: every row attends to every row of ``z`` (training; S is N x N). ``"reference"``: row i
        attends to itself and the rows of ``reference`` only (S is N x (1 + R)). ``"self"``: to itself only (S = 1).
        Returns (h, S)."""
        k1, t_self = self.key1(z), self.value(z)
        if mode == "batch":
            s = torch.softmax(k1 @ self.key2(z).T * self.scale, dim=-1)
            aggregated = self.dropout(s) @ t_self
        elif mode == "reference":
            self_score = (k1 * self.key2(z)).sum(-1, keepdim=True) * self.scale
            s = torch.softmax(torch.cat([self_score, k1 @ self.key2(reference).T * self.scale], dim=-1), dim=-1)
            weights = self.dropout(s)
            aggregated = weights[:, :1] * t_self + weights[:, 1:] @ self.value(reference)
        else:
            s = torch.ones(z.shape[0], 1, dtype=z.dtype, device=z.device)
            aggregated = t_self
        x = self.norm1(z + self.dropout(self.output(aggregated)))
        return self.norm2(x + self.dropout(self.feed_forward(x))), s


class AECLModel(TextClusteringPreTrainedModel):
    config_class = AECLConfig
    config: AECLConfig

    def __init__(self, config: AECLConfig):
        super().__init__(config)
        hidden, dim = config.encoder.hidden_size, config.projection_dim
        self.projector = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, dim))  # G_z
        self.attention = SampleAttention(dim, config.attention_ff_dim, config.attention_dropout)  # G_h
        self.cluster_head = nn.Sequential(  # G_p (logits; softmax in `cluster_logits`' callers)
            nn.Dropout(config.cluster_dropout),
            nn.Linear(dim, hidden),
            nn.ReLU(),
            nn.Dropout(config.cluster_dropout),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, config.num_clusters),
        )
        # The projections z of the reference texts (serving_attention="reference"), stored with the weights.
        self.register_buffer("reference_projections", torch.zeros(config.num_reference_texts, dim))
        # k-means centres on the trained embeddings v, served instead of G_p once the model is re-clustered.
        self.kmeans_head = StudentTAssignment(config.num_clusters, hidden)
        self.post_init()

    def cluster_features(self, embeddings: torch.Tensor) -> torch.Tensor:
        """z = G_z(v): the projection the attention and the contrastive loss work on."""
        return self.projector(embeddings)

    def attend(self, z: torch.Tensor, mode: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(h, S) of the attention network in ``mode`` (default: ``config.serving_attention``)."""
        mode = mode or self.config.serving_attention
        if mode == "reference" and self.reference_projections.shape[0] == 0:
            raise RuntimeError(
                "This AECL model has no reference set (serving_attention='reference'): it is stored at the end of "
                "training (`hf_textcluster.models.aecl.trainer_aecl.set_reference_texts(model, texts)`); or set "
                "`config.serving_attention='self'`."
            )
        return self.attention(z, self.reference_projections.to(z.dtype), mode=mode)

    def kmeans_features(self, embeddings: torch.Tensor) -> torch.Tensor:
        """k-means runs on the embeddings v, not z: on the trained v it is the better partition (the benchmark's)."""
        return embeddings

    def head_probabilities(self, embeddings: torch.Tensor) -> torch.Tensor:
        """p = softmax(G_p(h)), h the attention output of z = G_z(v) in ``config.serving_attention`` mode; a
        re-clustered model: the Student-t assignment of v to its k-means centres."""
        self._check_clusters_initialized()
        if self.config.serving_head == "kmeans":
            return self.kmeans_head(embeddings)
        h, _ = self.attend(self.cluster_features(embeddings))
        return torch.softmax(self.cluster_head(h).float(), dim=-1)
