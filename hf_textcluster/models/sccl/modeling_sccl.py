"""SCCL model: encoder ψ, contrast head g and clustering head f (centroids + Student's t, Eq. 3)."""

from __future__ import annotations

from ...modeling.layers import ProjectionHead, StudentTAssignment
from ...modeling.modeling_utils import TextClusteringPreTrainedModel
from .configuration_sccl import SCCLConfig


class SCCLModel(TextClusteringPreTrainedModel):
    config_class = SCCLConfig
    config: SCCLConfig

    def __init__(self, config: SCCLConfig):
        super().__init__(config)
        hidden_size = config.encoder.hidden_size
        # g: z = g(ψ(x)) are the features the instance contrastive loss compares (training only)
        self.contrast_head = ProjectionHead(hidden_size, hidden_size, config.contrast_dim)
        self.cluster_head = StudentTAssignment(config.num_clusters, hidden_size, alpha=config.alpha)
        self.post_init()
