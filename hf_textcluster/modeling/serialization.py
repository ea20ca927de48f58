"""How a clusterer is built from an encoder, loaded and saved: the bodies of the model base's
``from_encoder_pretrained``, ``from_pretrained`` and ``save_pretrained``
(:class:`~hf_textcluster.modeling.modeling_utils.TextClusteringPreTrainedModel`), around transformers' own; the checks
around loading are :mod:`~hf_textcluster.modeling.loading_checks`.

Part of the inference code that every pushed repository carries. Model cards, remote code on save and one-commit
pushes are the package's Hub layer (``hf_textcluster.hub.save_pretrained`` / ``push_to_hub``), which calls the model;
the model never calls it.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from transformers import AutoConfig, AutoModel, AutoTokenizer
from transformers.utils import logging

from .configuration_utils import running_as_remote_code
from .loading_checks import (
    check_checkpoint_config,
    check_finite_weights,
    check_load_report,
    check_weights_fit_config,
    corrupted_weights_error,
    load_config,
)
from .validation import check_local_path

logger = logging.get_logger(__name__)

# The package's layers that a model's own methods offer when the package is installed: the encoder resolution
# (pip-shipped encoders offline, a sentence-transformers folder's pooling) and the table of clusters
# (``cluster_info``). Named here and imported on first use, never at import time and never as remote code
# (running_as_remote_code(): encoders are then hub ids or paths, and ``cluster_info`` is refused).
_PACKAGE_LAYERS = {
    "encoders": "hf_textcluster.encoders",
    "summary": "hf_textcluster.representation.summary",
}
# from_pretrained's arguments that say where on the Hub the files are: the checks before the load read them too
_HUB_KWARGS = ("revision", "token", "cache_dir", "local_files_only")


def package_layer(name: str):
    """The package's module ``_PACKAGE_LAYERS[name]``, imported on first use; ``None`` as remote code."""
    return None if running_as_remote_code() else importlib.import_module(_PACKAGE_LAYERS[name])


def from_encoder_pretrained(
    cls, encoder: str | os.PathLike | None = None, num_clusters: int = 8, **config_kwargs
) -> Any:
    """A new, untrained clusterer of class ``cls`` around a pretrained encoder (a classmethod of every clusterer:
    ``SCCLModel.from_encoder_pretrained(...)``).

    Pooling follows a sentence-transformers folder's metadata unless given. The cluster head is not fitted
    yet: the trainer (or :func:`hf_textcluster.editing.initialize_clusters`) does that.

    Args:
        encoder: a hub id or local path; ``None`` is the pip-shipped all-MiniLM-L6-v2.
        num_clusters: K.
        **config_kwargs: fields of the method's config (``max_length``, ``pooling``, its loss weights, ...).

    Returns:
        The model, in eval mode, with the encoder's tokenizer attached.

    Example:
        >>> from hf_textcluster import SCCLModel
        >>> model = SCCLModel.from_encoder_pretrained(None, num_clusters=20, max_length=32)  # doctest: +SKIP
    """
    resolver = cls.encoder_resolver
    if resolver is None and (encoders := package_layer("encoders")) is not None:
        resolver = encoders.resolve_encoder
    if resolver is not None:  # the package's: pip-shipped encoders, sentence-transformers pooling
        spec = resolver(encoder)
        name_or_path, pooling = spec.name_or_path, spec.pooling
    elif encoder is None:
        raise ValueError("`encoder` is required here (the pip-shipped default needs the hf_textcluster package).")
    else:
        name_or_path, pooling = str(encoder), "mean"
    config_kwargs.setdefault("pooling", pooling)
    encoder_model = AutoModel.from_pretrained(name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(name_or_path)
    config = cls.config_class(encoder=encoder_model.config.to_dict(), num_clusters=num_clusters, **config_kwargs)
    model = cls(config)
    model.encoder.load_state_dict(encoder_model.state_dict())
    model.tokenizer = tokenizer
    model.config.name_or_path = name_or_path
    return model.eval()  # like from_pretrained: dropout off until a trainer calls train()


def load_checked(cls, load: Callable, path: str, model_args: tuple, tokenizer, kwargs: dict) -> Any:
    """``cls.from_pretrained(path, *model_args, tokenizer=tokenizer, **kwargs)`` by transformers' ``load``, with the
    checks of :mod:`.loading_checks` before (the config is a clusterer's of ``cls``' kind and describes the weights
    tensor by tensor) and after (an empty load report, finite weights); safetensors only."""
    check_local_path(path, "pretrained_model_name_or_path")
    config = kwargs.pop("config", None)
    num_clusters = kwargs.pop("num_clusters", None)
    hub_kwargs = {k: kwargs[k] for k in _HUB_KWARGS if k in kwargs}
    if config is None:
        # As remote code, the class's own config class (AutoConfig would pick the package's where it is
        # also installed); in the package, AutoConfig, so that another method's checkpoint is recognised.
        config = load_config(cls.config_class if running_as_remote_code() else AutoConfig, path, hub_kwargs)
    # the base class loads any clusterer; a method's class its own kind
    expected = None if cls.config_class.__name__ == "TextClusteringConfig" else {cls.config_class.model_type}
    check_checkpoint_config(config, expected, path, num_clusters)
    kwargs.setdefault("use_safetensors", True)  # loading never unpickles
    wants_info = kwargs.pop("output_loading_info", False)
    check_weights_fit_config(cls, path, config, hub_kwargs)
    try:
        model, info = load(path, *model_args, config=config, output_loading_info=True, **kwargs)
    except Exception as err:
        if (corrupted := corrupted_weights_error(path, err)) is not None:
            raise corrupted from err
        raise
    check_load_report(cls, path, config, info)
    model.tokenizer = _load_tokenizer(path, hub_kwargs) if tokenizer is None else tokenizer
    check_finite_weights(model, path)
    return (model, info) if wants_info else model


def save_staged(save_directory: str | os.PathLike, write: Callable[[str], None]) -> None:
    """``write(staging)`` fills a temporary folder inside ``save_directory`` (created if missing), whose files are
    then given the umask's modes and moved into place: an interrupted save never leaves a half-written folder."""
    save_directory = os.fspath(save_directory)
    if os.path.exists(save_directory) and not os.path.isdir(save_directory):
        raise NotADirectoryError(
            f"`save_directory` {save_directory} is a file, not a folder: pass a folder (it is created if missing)."
        )
    os.makedirs(save_directory, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".saving-", dir=save_directory)
    try:
        write(staging)
        apply_umask(staging)
        move_into(staging, save_directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _load_tokenizer(path: str, hub_kwargs: dict) -> Any:
    """The tokenizer saved with the model, or None (with a warning): a missing tokenizer is reported when texts are
    used, not at load."""
    try:
        return AutoTokenizer.from_pretrained(path, trust_remote_code=running_as_remote_code(), **hub_kwargs)
    except Exception as err:  # noqa: BLE001 - a missing tokenizer is reported when texts are used
        logger.warning(
            f"No tokenizer could be loaded from {path!r} ({type(err).__name__}). `predict`/`embed` and the "
            "pipeline need one: pass `tokenizer=` or set `model.tokenizer`."
        )
        return None


def current_umask() -> int:
    """The process' umask (read from ``/proc`` where it can be, so that it is never changed, even for a moment)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: str | os.PathLike) -> None:
    """Give ``path`` (a file, or a folder and everything in it) the mode a file created now gets (``0o666`` less the
    umask; folders ``0o777`` less it): transformers and safetensors write their files readable by their owner only
    (``0o600``), which another account of a shared machine could not load."""
    mask = current_umask()
    path = os.fspath(path)
    if not os.path.isdir(path):
        os.chmod(path, 0o666 & ~mask)
        return
    for root, folders, files in os.walk(path):
        for name in folders:
            os.chmod(os.path.join(root, name), 0o777 & ~mask)
        for name in files:
            file = os.path.join(root, name)
            if not os.path.islink(file):
                os.chmod(file, 0o666 & ~mask)


def move_into(staging: str, save_directory: str) -> None:
    """Move every file and folder of ``staging`` into ``save_directory``, replacing what is there."""
    for name in os.listdir(staging):
        target = os.path.join(save_directory, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        os.replace(os.path.join(staging, name), target)
