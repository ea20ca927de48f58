"""DEC-MLM model: a masked-LM encoder whose mean-pooled output is softly assigned to K centroids (Eq. 3).

The masked-LM head is part of the checkpoint (so that training can continue) but inference (``forward``,
``embed``, ``predict``, the pipeline) never runs it. ``from_encoder_pretrained`` loads the encoder checkpoint's
masked-LM head where it has one (``config.mlm_head_pretrained``; see :mod:`hf_textcluster.models.building`).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers.activations import ACT2FN

from ...modeling.layers import StudentTAssignment
from ...modeling.modeling_utils import TextClusteringPreTrainedModel
from .configuration_decmlm import DECMLMConfig


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

    def reset_own_parameters(self) -> None:
        nn.init.zeros_(self.bias)


class DECMLMModel(TextClusteringPreTrainedModel):
    config_class = DECMLMConfig
    config: DECMLMConfig

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
