"""A clusterer's ``from_pretrained`` (:func:`load_checked`): transformers' own load with checks around it, each one
clear error naming the folder. A config.json is data from anyone: every size it sets would otherwise be allocated as
asked, and a config that does not fit its weights would load some tensors random.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from typing import Any

import torch
from transformers import AutoConfig, AutoTokenizer
from transformers.utils import cached_file, logging

from .configuration_utils import TextClusteringConfig, running_as_remote_code
from .validation import check_local_path

logger = logging.get_logger(__name__)

# safetensors' own limit on a header
_MAX_HEADER_BYTES = 100_000_000
# from_pretrained's arguments that say where on the Hub the files are: the checks before the load read them too
_HUB_KWARGS = ("revision", "token", "cache_dir", "local_files_only")


def load_checked(cls, load: Callable, path: str, model_args: tuple, tokenizer, kwargs: dict) -> Any:
    """``cls.from_pretrained(path, *model_args, tokenizer=tokenizer, **kwargs)`` by transformers' ``load``, checked
    before (the config names a clusterer of ``cls``' kind, with the asked ``num_clusters``, and describes the weights:
    :func:`check_weights_fit_config`) and after (the weights file is readable, the load report is empty, no tensor
    holds NaN or inf); safetensors only. The tokenizer saved beside the weights is attached (or ``tokenizer``; None,
    with a warning, when there is none)."""
    check_local_path(path, "pretrained_model_name_or_path")
    config = kwargs.pop("config", None)
    num_clusters = kwargs.pop("num_clusters", None)
    hub_kwargs = {k: kwargs[k] for k in _HUB_KWARGS if k in kwargs}
    if config is None:
        # As remote code, the class's own config class (AutoConfig would pick the package's where it is
        # also installed); in the package, AutoConfig, so that another method's checkpoint is recognised.
        config = _load_config(cls.config_class if running_as_remote_code() else AutoConfig, path, hub_kwargs)
    # the base class loads any clusterer; a method's class its own kind. By class name, not identity: a folder's
    # remote code loaded next to the package (or twice, from transformers' module cache) has its own config class.
    expected = None if cls.config_class.__name__ == "TextClusteringConfig" else {cls.config_class.model_type}
    is_clusterer = any(c.__name__ == TextClusteringConfig.__name__ for c in type(config).__mro__)
    if not is_clusterer or (expected and config.model_type not in expected):
        raise ValueError(
            f"The checkpoint at {path!r} is a {config.model_type!r} model, not "
            f"{' or '.join(repr(t) for t in sorted(expected)) if expected else 'an hf_textcluster clusterer'}. "
            "Load it with `AutoModel.from_pretrained` (after `import hf_textcluster`) or with its own model class."
        )
    if num_clusters is not None and num_clusters != config.num_clusters:
        raise ValueError(
            f"`num_clusters={num_clusters}` disagrees with the checkpoint at {path!r}, whose centroids are for "
            f"{config.num_clusters} clusters. Omit `num_clusters`, or train a new model with "
            "`from_encoder_pretrained(..., num_clusters=...)`."
        )
    kwargs.setdefault("use_safetensors", True)  # loading never unpickles
    wants_info = kwargs.pop("output_loading_info", False)
    check_weights_fit_config(cls, path, config, hub_kwargs)
    try:
        model, info = load(path, *model_args, config=config, output_loading_info=True, **kwargs)
    except Exception as err:
        if "safetensors" in type(err).__module__ or "header" in str(err).lower() or "deserializ" in str(err).lower():
            raise OSError(
                f"The weights file in {path!r} is corrupted or incomplete ({err}). Re-download or re-save the model."
            ) from err
        raise
    # weights that do not fit the class (a config.json of another method over these weights) would load random
    missing, unexpected = list(info.get("missing_keys") or []), list(info.get("unexpected_keys") or [])
    if missing or unexpected:
        raise ValueError(
            f"The weights in {path!r} do not fit a {cls.__name__} ({config.model_type!r} in its config.json): "
            f"{len(missing)} missing (e.g. {missing[:2]}) and {len(unexpected)} unexpected (e.g. {unexpected[:2]}). "
            "Its config.json and model.safetensors do not belong together; re-save the model."
        )
    if tokenizer is None:
        try:
            tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=running_as_remote_code(), **hub_kwargs)
        except Exception as err:  # noqa: BLE001 - a missing tokenizer is reported when texts are used
            logger.warning(
                f"No tokenizer could be loaded from {path!r} ({type(err).__name__}). `predict`/`embed` and the "
                "pipeline need one: pass `tokenizer=` or set `model.tokenizer`."
            )
    model.tokenizer = tokenizer
    check_finite_weights(model, path)
    return (model, info) if wants_info else model


def _load_config(config_class: Any, path: str, hub_kwargs: dict) -> Any:
    """``config_class.from_pretrained(path)``; a Hub id that names no repository (and no local folder) is an OSError
    that says so, instead of the Hub's bare 404."""
    try:
        return config_class.from_pretrained(path, **hub_kwargs)
    except OSError as err:
        from huggingface_hub import constants
        from huggingface_hub.errors import RepositoryNotFoundError

        if os.path.isdir(path) or not isinstance(err.__cause__, RepositoryNotFoundError):
            raise
        raise OSError(
            f"No model {path!r}: it is not a local folder, and the Hub at {constants.ENDPOINT} has no "
            "repository with that id. Check the spelling (e.g. 'org/sccl-stackoverflow'); for a private "
            "repository pass `token=` or log in with `hf auth login`."
        ) from err


def check_weights_fit_config(model_class, path: str, config, hub_kwargs: dict | None = None) -> None:
    """Before anything is allocated, every tensor the config describes must have the shape the weights hold (read
    from the safetensors header, without loading a tensor): loading then costs what the weights cost, however large
    the sizes an edited config.json asks for, and an edited ``num_clusters`` is one clear error. Tensors the weights
    lack are transformers' load report (:func:`load_checked` refuses it)."""
    if model_class.config_class is TextClusteringConfig:
        return
    saved = saved_shapes(path, hub_kwargs or {})
    if saved is None:  # no safetensors file found: the load itself reports that
        return
    # An encoder's layer count cannot exceed the tensors stored (each layer has some): checked before the model
    # is built, since building even on the meta device costs time and memory per layer.
    encoder = config.encoder.to_dict() if hasattr(config.encoder, "to_dict") else dict(config.encoder or {})
    for key, value in encoder.items():
        if key.endswith("layers") and isinstance(value, int) and not isinstance(value, bool) and value > len(saved):
            raise ValueError(
                f"The folder {path!r} is inconsistent: its config.json asks for {value} encoder layers "
                f"(`encoder.{key}`) but its weights hold {len(saved)} tensors in all. Was config.json edited? "
                "Re-save the model from its run folder."
            )
    try:
        with torch.device("meta"):
            model = model_class(config)
    except Exception as err:  # noqa: BLE001 - whatever the config breaks, it is one line naming the file
        raise ValueError(
            f"The config.json in {path!r} does not describe a model that can be built "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else 'no message'}). Was it edited? "
            "Re-save the model from its run folder."
        ) from None
    expected = {key: tuple(t.shape) for key, t in model.state_dict().items()}
    differ = [key for key in expected if key in saved and saved[key] != expected[key]]
    if differ:
        key = differ[0]
        raise ValueError(
            f"The folder {path!r} is inconsistent: its config.json ({config.model_type!r}, "
            f"num_clusters={config.num_clusters}) does not fit its model.safetensors: {key!r} is "
            f"{list(saved[key])} in the weights but {list(expected[key])} for that config"
            f"{f' ({len(differ) - 1} more tensors differ)' if len(differ) > 1 else ''}. Was config.json edited or "
            "the weights file replaced? Re-save the model from its run folder (loading it with "
            "ignore_mismatched_sizes would give random clusters)."
        )


def check_finite_weights(model: torch.nn.Module, path: str | None = None) -> None:
    """No floating-point tensor of ``model`` holds NaN or inf: a diverged run is never saved, carded or pushed, nor
    loaded from ``path`` (it would serve every text in one cluster with a NaN score)."""
    bad = [n for n, t in model.state_dict().items() if t.is_floating_point() and not torch.isfinite(t).all()]
    if bad and path is None:
        raise ValueError(
            f"{len(bad)} of this model's tensors hold NaN or inf (e.g. {bad[0]!r}): training diverged. Not saving "
            "it; retrain with a lower learning rate (the last good checkpoint in the run folder is kept)."
        )
    if bad:
        raise ValueError(
            f"The weights in {path!r} hold NaN or inf "
            f"({bad[0]!r}{f' and {len(bad) - 1} more' if len(bad) > 1 else ''}"
            "): the model was saved from a diverged run or the file was damaged. Not loading it; retrain, or load "
            "the last good checkpoint of its run folder."
        )


def saved_shapes(path: str, hub_kwargs: dict) -> dict[str, tuple[int, ...]] | None:
    """Every tensor's shape in the safetensors weights of a local folder or a Hub repository (a single file or the
    shards its index names), read from the files' JSON headers: no tensor is read. None when there is no such file,
    or one cannot be read (the load then reports it)."""

    def resolve(name: str) -> str | None:
        if os.path.isdir(path):
            return os.path.join(path, name) if os.path.isfile(os.path.join(path, name)) else None
        try:  # the Hub: the file is downloaded (its size is what loading costs anyway)
            return cached_file(path, name, _raise_exceptions_for_missing_entries=False, **hub_kwargs)
        except Exception:  # noqa: BLE001 - an unreachable Hub or a missing repository is reported by the load
            return None

    shapes: dict[str, tuple[int, ...]] = {}
    try:
        index = resolve("model.safetensors.index.json")
        if index is None:
            files = [resolve("model.safetensors")]
        else:
            with open(index, encoding="utf-8") as f:
                files = [resolve(name) for name in sorted(set(json.load(f)["weight_map"].values()))]
        for file in files:
            if file is None:
                return None
            with open(file, "rb") as weights:
                (length,) = struct.unpack("<Q", weights.read(8))
                if length > _MAX_HEADER_BYTES:
                    return None
                header = json.loads(weights.read(length))
            shapes.update({key: tuple(entry["shape"]) for key, entry in header.items() if key != "__metadata__"})
    except (OSError, ValueError, KeyError, TypeError, AttributeError, struct.error):
        return None
    return shapes
