"""ClusterBERT model: an encoder (CLS pooling in the paper) and a linear clustering head with softmax (Eq. 2). The
TSDAE decoder that reconstructs texts from z during training lives in the trainer, not here: the served model is
the encoder and the head."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ...modeling.modeling_utils import TextClusteringPreTrainedModel
from .configuration_clusterbert import ClusterBERTConfig


class ClusterBERTModel(TextClusteringPreTrainedModel):
    config_class = ClusterBERTConfig
    config: ClusterBERTConfig

    def __init__(self, config: ClusterBERTConfig):
        super().__init__(config)
        self.cluster_head = nn.Linear(config.encoder.hidden_size, config.num_clusters)  # h of Eq. 2 (logits)
        self.post_init()

    def head_probabilities(self, embeddings: torch.Tensor) -> torch.Tensor:
        """p_ij = softmax(h(z_i))_j (Eq. 2)."""
        return torch.softmax(self.cluster_head(embeddings).float(), dim=-1)

    @torch.no_grad()
    def init_head_from_centroids(self, centers: np.ndarray | torch.Tensor) -> None:
        """Set h so that its logits are 2 z·c_k - ‖c_k‖² = -‖z - c_k‖² + ‖z‖²: the softmax ranks the clusters as the
        nearest k-means centre does (``head_init="kmeans"``)."""
        weight = self.cluster_head.weight
        centers = torch.as_tensor(centers, dtype=weight.dtype, device=weight.device)
        if tuple(centers.shape) != tuple(weight.shape):
            raise ValueError(
                f"Centres of shape {tuple(centers.shape)} do not fit the head "
                f"({tuple(self.cluster_head.weight.shape)} = num_clusters x hidden_size)."
            )
        weight.copy_(2 * centers)
        self.cluster_head.bias.copy_(-(centers**2).sum(dim=-1))

    def init_clusters_from_kmeans(self, centers: np.ndarray | torch.Tensor) -> None:
        """The head as the nearest-centre rule of ``centers`` (``initialize_clusters`` / re-clustering a trained
        model). Training does not start from it: the head is fitted from stage 2 on."""
        self.init_head_from_centroids(centers)
        self._clusters_set()
