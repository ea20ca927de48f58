"""DEC-MLM model: a masked-LM encoder whose mean-pooled output is softly assigned to K centroids (Eq. 3).

The masked-LM head is part of the checkpoint (so that training can continue) but inference (``forward``,
``embed``, ``predict``, the pipeline) never runs it.
"""

from __future__ import annotations

import contextlib
import os

import torch
from torch import nn
from transformers.activations import ACT2FN
from transformers.utils import logging

from ...modeling.layers import StudentTAssignment
from ...modeling.modeling_utils import TextClusteringPreTrainedModel
from .configuration_decmlm import DECMLMConfig

logger = logging.get_logger(__name__)


@contextlib.contextmanager
def _quiet_transformers():
    """Silence transformers' own load report (we report what matters ourselves)."""
    level = logging.get_verbosity()
    bars = logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(level)
        if bars:
            logging.enable_progress_bar()


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

    # ----- construction --------------------------------------------------------------------------------------
    @classmethod
    def from_encoder_pretrained(
        cls, encoder: str | os.PathLike | None = None, num_clusters: int = 8, **config_kwargs
    ) -> DECMLMModel:
        """A new DEC-MLM clusterer around a pretrained encoder. When the checkpoint also holds a masked-LM head
        (e.g. ``bert-base-uncased``), the head is loaded too; otherwise (e.g. the default MiniLM, a
        sentence-transformers ``BertModel``) its transform layer starts untrained and a warning says so. The
        decoder is always the encoder's input word embeddings."""
        model = super().from_encoder_pretrained(encoder, num_clusters=num_clusters, **config_kwargs)
        model.config.mlm_head_pretrained = model._load_pretrained_mlm_head(model.config.name_or_path)
        if not model.config.mlm_head_pretrained:
            logger.warning(
                f"The encoder checkpoint {model.config.name_or_path!r} has no masked-LM head (sentence-transformers "
                "models such as the default all-MiniLM-L6-v2 ship the bare encoder): the MLM head's transform layer "
                "(dense + LayerNorm) and its output bias start untrained; its decoder is tied to the input word "
                "embeddings. Early masked-LM losses are therefore high and the MLM term partly trains the head "
                "itself. Use an encoder with an MLM head (the paper: bert-base-uncased) to start from pretrained "
                "weights. `config.mlm_head_pretrained` records this."
            )
        return model

    @torch.no_grad()
    def _load_pretrained_mlm_head(self, path: str) -> bool:
        """Copy the masked-LM head of the checkpoint at ``path`` into ``self.mlm_head``; False when it has none."""
        from transformers import AutoModelForMaskedLM

        try:
            with _quiet_transformers():
                mlm_model, info = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True)
        except (ValueError, KeyError, OSError) as err:  # no masked-LM class for this architecture
            logger.info(f"No masked-LM model could be loaded from {path!r} ({type(err).__name__}: {err}).")
            return False
        prefix = mlm_model.base_model_prefix
        missing_head = [k for k in info["missing_keys"] if not k.startswith(f"{prefix}.")]
        if missing_head:
            return False
        base = mlm_model.base_model
        base_modules = {id(m) for m in base.modules()}
        head_modules = [m for m in mlm_model.modules() if id(m) not in base_modules]
        embedding_dim = self.mlm_head.dense.out_features
        hidden_size = self.mlm_head.dense.in_features
        denses = [
            m
            for m in head_modules
            if isinstance(m, nn.Linear) and m.in_features == hidden_size and m.out_features == embedding_dim
        ]
        norms = [
            m
            for m in head_modules
            if "LayerNorm" in type(m).__name__ and tuple(getattr(m, "normalized_shape", ())) == (embedding_dim,)
        ]
        decoder = mlm_model.get_output_embeddings()
        if len(denses) != 1 or len(norms) != 1 or decoder is None or getattr(decoder, "bias", None) is None:
            logger.warning(
                f"The masked-LM head of {type(mlm_model).__name__} at {path!r} is not a dense-activation-LayerNorm "
                "head with a tied decoder; it is not loaded and the MLM head starts untrained."
            )
            return False
        if not torch.equal(decoder.weight, mlm_model.get_input_embeddings().weight):
            logger.warning(
                f"The masked-LM decoder of {path!r} is not tied to its input word embeddings; DEC-MLM ties them, so "
                "the checkpoint's separate decoder matrix is not used (its dense/LayerNorm/bias are)."
            )
        self.mlm_head.dense.load_state_dict(denses[0].state_dict())
        self.mlm_head.layer_norm.weight.copy_(norms[0].weight)
        self.mlm_head.layer_norm.bias.copy_(norms[0].bias)
        self.mlm_head.bias.copy_(decoder.bias)
        return True
