"""Building blocks shared by the clustering methods."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN

from .losses import student_t_assignment


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
        return F.linear(transformed, word_embeddings, self.bias)
