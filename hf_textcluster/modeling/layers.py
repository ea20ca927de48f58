"""Pooling, cluster heads and projection heads. A **cluster head** maps pooled embeddings (batch x d) to a soft
assignment q (batch x K); ``reset_own_parameters()`` gives a new model's placeholders (``_init_weights`` calls it).
"""

from __future__ import annotations

import torch
from torch import nn


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
    """Soft assignment q_jk ∝ (1 + ||e_j - μ_k||² / α)^(-(α+1)/2), a Student's t kernel (SCCL Eq. 3), in log space."""
    squared_distances = torch.cdist(embeddings.float(), centroids.float()).pow(2)
    log_kernel = -(alpha + 1.0) / 2.0 * torch.log1p(squared_distances / alpha)
    return torch.softmax(log_kernel, dim=-1)


class StudentTAssignment(nn.Module):
    """A cluster head: K centroids (a K x d weight) and the Student's t soft assignment to them (SCCL Eq. 3)."""

    def __init__(self, num_clusters: int, embedding_dim: int, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha
        self.centroids = nn.Parameter(torch.empty(num_clusters, embedding_dim))

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        return student_t_assignment(embeddings, self.centroids, self.alpha)

    def reset_own_parameters(self) -> None:
        nn.init.normal_(self.centroids, mean=0.0, std=0.02)


class ProjectionHead(nn.Module):
    """Linear - ReLU - Linear, the contrast head g(·) of SCCL (and the projectors of SimCLR-style methods)."""

    def __init__(self, input_dim: int, hidden_dim: int, output_dim: int):
        super().__init__()
        self.dense = nn.Linear(input_dim, hidden_dim)
        self.activation = nn.ReLU()
        self.out_proj = nn.Linear(hidden_dim, output_dim)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.out_proj(self.activation(self.dense(hidden)))


__all__ = ["ProjectionHead", "StudentTAssignment", "pool_token_states", "student_t_assignment"]
