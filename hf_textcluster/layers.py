"""Building blocks shared by the clustering methods."""

from __future__ import annotations

import torch
from torch import nn

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
