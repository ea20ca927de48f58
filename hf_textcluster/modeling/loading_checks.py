"""A clusterer's ``from_pretrained``: transformers' load (which refuses weights of another shape than the config's),
and the checks it does not make: a checkpoint of another kind, tensors the weights lack or hold in excess (served
random otherwise: silently wrong clusters), NaN or inf weights; and the tokenizer beside the weights attached.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from transformers import AutoConfig, AutoTokenizer
from transformers.utils import logging

from .configuration_utils import TextClusteringConfig, running_as_remote_code
from .validation import check_local_path

logger = logging.get_logger(__name__)

# from_pretrained's arguments that say where on the Hub the files are: the config and the tokenizer read them too
_HUB_KWARGS = ("revision", "token", "cache_dir", "local_files_only")


def load_checked(cls, load: Callable, path: str, model_args: tuple, tokenizer, kwargs: dict) -> Any:
    """``cls.from_pretrained`` by transformers' ``load`` (safetensors only), checked before (a clusterer of ``cls``'
    kind, with the asked ``num_clusters``) and after (see the module); the tokenizer attached (None, with a warning,
    when there is none)."""
    check_local_path(path, "pretrained_model_name_or_path")
    config = kwargs.pop("config", None)
    num_clusters = kwargs.pop("num_clusters", None)
    hub_kwargs = {k: kwargs[k] for k in _HUB_KWARGS if k in kwargs}
    if config is None:  # as remote code, its own config class (not the package's); in the package, any method's
        try:
            config = (cls.config_class if running_as_remote_code() else AutoConfig).from_pretrained(path, **hub_kwargs)
        except RecursionError:  # transformers' json.loads of a config.json nested past Python's recursion limit
            raise ValueError(
                f"{path}: its config.json is nested too deep to be read (no model was saved with it); put the "
                "model's own config.json back, or save the model again."
            ) from None
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
    try:
        model, info = load(path, *model_args, config=config, output_loading_info=True, **kwargs)
    except Exception as err:
        message = str(err)
        if "safetensors" in type(err).__module__ or "header" in message.lower() or "deserializ" in message.lower():
            raise OSError(
                f"The weights file in {path!r} is corrupted or incomplete ({err}). Re-download or re-save the model."
            ) from err
        if isinstance(err, OSError) or "ignore_mismatched_sizes" in message:
            raise  # transformers' own report: a file it cannot find, tensors of another shape than the config's
        # whatever an edited config.json breaks while the model is built, it is one line naming the folder
        raise ValueError(
            f"The config.json in {path!r} does not describe a model that can be built ({type(err).__name__}: "
            f"{message.splitlines()[0] if message else 'no message'}). Was it edited? Re-save the model."
        ) from None
    # transformers only logs these, and fills the tensors the weights lack at random: wrong clusters, served silently
    missing, unexpected = list(info.get("missing_keys") or []), list(info.get("unexpected_keys") or [])
    if missing or unexpected:
        raise ValueError(
            f"The weights in {path!r} do not fit a {cls.__name__} ({config.model_type!r} in its config.json): "
            f"{len(missing)} missing (e.g. {sorted(missing)[:2]}) and {len(unexpected)} unexpected (e.g. "
            f"{sorted(unexpected)[:2]}). Its config.json and model.safetensors do not belong together; re-save the "
            "model."
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


def check_finite_weights(model: torch.nn.Module, path: str | None = None) -> None:
    """Refuse NaN or inf weights: a diverged run is never saved, pushed, or loaded from ``path`` (it would serve every
    text in one cluster with a NaN score)."""
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
