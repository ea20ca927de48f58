"""ClusterBERT model: an encoder (CLS pooling in the paper) and a linear clustering head with softmax (Eq. 2). The
TSDAE decoder that reconstructs texts from z during training lives in the trainer, not here: the served model is
the encoder and the head."""

from __future__ import annotations

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
