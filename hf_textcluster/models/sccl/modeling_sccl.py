"""SCCL model: encoder ψ, contrast head g and clustering head f (centroids + Student's t, Eq. 3)."""

from __future__ import annotations

import torch

from ...modeling.layers import ProjectionHead, StudentTAssignment
from ...modeling.modeling_utils import TextClusteringPreTrainedModel
from .configuration_sccl import SCCLConfig


class SCCLModel(TextClusteringPreTrainedModel):
    config_class = SCCLConfig
    config: SCCLConfig

    def __init__(self, config: SCCLConfig):
        super().__init__(config)
        hidden_size = config.encoder.hidden_size
        self.contrast_head = ProjectionHead(hidden_size, hidden_size, config.contrast_dim)
        self.cluster_head = StudentTAssignment(config.num_clusters, hidden_size, alpha=config.alpha)
        self.post_init()

    def contrast_features(self, embeddings: torch.Tensor) -> torch.Tensor:
        """z = g(ψ(x)), the features the instance contrastive loss compares."""
        return self.contrast_head(embeddings)
