"""Building a new clusterer around a pretrained encoder: :func:`from_encoder_pretrained`.

Package-only: no shipped module imports this one, so a pushed repository serves and loads models without it. It
resolves encoders the package's way (pip-shipped encoders offline, a sentence-transformers folder's pooling) and loads
a masked-LM head where the model has one (DEC-MLM).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import torch
from torch import nn
from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer
from transformers.utils import logging

from ..encoders import resolve_encoder

logger = logging.get_logger(__name__)


def from_encoder_pretrained(
    cls, encoder: str | os.PathLike | None = None, num_clusters: int = 8, **config_kwargs
) -> Any:
    """A new, untrained clusterer of class ``cls`` (e.g. :class:`~hf_textcluster.SCCLModel`) around a pretrained
    encoder.

    Pooling follows a sentence-transformers folder's metadata unless given. The cluster head is not fitted
    yet: the trainer (or :func:`hf_textcluster.editing.initialize_clusters`) does that. A model with a masked-LM head
    (DEC-MLM) takes the encoder checkpoint's head too where it has one (``config.mlm_head_pretrained``).

    Args:
        encoder: a hub id or local path; ``None`` is the pip-shipped all-MiniLM-L6-v2.
        num_clusters: K.
        **config_kwargs: fields of the method's config (``max_length``, ``pooling``, its loss weights, ...).

    Returns:
        The model, in eval mode, with the encoder's tokenizer attached.

    Example:
        >>> from hf_textcluster import SCCLModel, from_encoder_pretrained
        >>> model = from_encoder_pretrained(SCCLModel, None, num_clusters=20, max_length=32)  # doctest: +SKIP
    """
    spec = resolve_encoder(encoder)
    config_kwargs.setdefault("pooling", spec.pooling)
    # never a folder's own code (resolving the encoder refused what it could read; this refuses a Hub download's)
    encoder_model = AutoModel.from_pretrained(spec.name_or_path, trust_remote_code=False)
    config = cls.config_class(encoder=encoder_model.config.to_dict(), num_clusters=num_clusters, **config_kwargs)
    model = cls(config)
    model.encoder.load_state_dict(encoder_model.state_dict())
    model.tokenizer = AutoTokenizer.from_pretrained(spec.name_or_path, trust_remote_code=False)
    model.config.name_or_path = spec.name_or_path
    if hasattr(model, "mlm_head"):
        model.config.mlm_head_pretrained = load_pretrained_mlm_head(model.mlm_head, spec.name_or_path)
        if not model.config.mlm_head_pretrained:
            logger.warning(
                f"The encoder checkpoint {spec.name_or_path!r} has no masked-LM head (sentence-transformers models "
                "such as the default all-MiniLM-L6-v2 ship the bare encoder): the MLM head's transform layer "
                "(dense + LayerNorm) and its output bias start untrained; its decoder is tied to the input word "
                "embeddings. Early masked-LM losses are therefore high and the MLM term partly trains the head "
                "itself. Use an encoder with an MLM head (the paper: bert-base-uncased) to start from pretrained "
                "weights. `config.mlm_head_pretrained` records this."
            )
    return model.eval()  # like from_pretrained: dropout off until a trainer calls train()


@contextlib.contextmanager
def _quiet_transformers():
    """Silence transformers' own load report (we report what matters ourselves)."""
    level, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(level)
        if bars:
            logging.enable_progress_bar()


@torch.no_grad()
def load_pretrained_mlm_head(head: nn.Module, path: str) -> bool:
    """Copy the masked-LM head of the checkpoint at ``path`` into ``head`` (a ``MaskedLMHead``: dense, LayerNorm,
    bias; its decoder is the tied input embeddings); False when the checkpoint has none of that form."""
    try:
        with _quiet_transformers():
            mlm_model, info = AutoModelForMaskedLM.from_pretrained(
                path, output_loading_info=True, trust_remote_code=False
            )
    except (ValueError, KeyError, OSError) as err:  # no masked-LM class for this architecture
        logger.info(f"No masked-LM model could be loaded from {path!r} ({type(err).__name__}: {err}).")
        return False
    prefix = mlm_model.base_model_prefix
    if any(not k.startswith(f"{prefix}.") for k in info["missing_keys"]):
        return False
    base_modules = {id(m) for m in mlm_model.base_model.modules()}
    head_modules = [m for m in mlm_model.modules() if id(m) not in base_modules]
    width, hidden_size = head.dense.out_features, head.dense.in_features
    denses = [
        m for m in head_modules if isinstance(m, nn.Linear) and (m.in_features, m.out_features) == (hidden_size, width)
    ]
    norms = [
        m
        for m in head_modules
        if "LayerNorm" in type(m).__name__ and tuple(getattr(m, "normalized_shape", ())) == (width,)
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
    head.dense.load_state_dict(denses[0].state_dict())
    head.layer_norm.load_state_dict(norms[0].state_dict())
    head.bias.copy_(decoder.bias)
    return True
