"""How a clusterer is built from an encoder, loaded, saved and pushed: :class:`SerializationMixin`, mixed into
:class:`~hf_textcluster.modeling.modeling_utils.TextClusteringPreTrainedModel` in front of ``PreTrainedModel``,
whose ``from_pretrained`` / ``save_pretrained`` / ``push_to_hub`` it wraps (the checks around loading are
:mod:`~hf_textcluster.modeling.loading_checks`).

Part of the inference code that every pushed repository carries. Model cards, remote code on save and one-commit
pushes come from the package's Hub layer, imported on first use (``package_layer`` below).
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any, cast

from transformers import AutoConfig, AutoModel, AutoTokenizer
from transformers.utils import logging

from .configuration_utils import TextClusteringConfig, running_as_remote_code
from .loading_checks import (
    check_checkpoint_config,
    check_load_report,
    check_loaded_weights_finite,
    check_weights_fit_config,
    corrupted_weights_error,
    load_config,
    non_finite_tensors,
)
from .validation import check_local_path

if TYPE_CHECKING:  # a mixin of PreTrainedModel: type checkers read it as one (super() is PreTrainedModel's)
    from transformers import PreTrainedModel as _ModelBase

    from .modeling_utils import TextClusteringPreTrainedModel
else:
    _ModelBase = object

logger = logging.get_logger(__name__)

# The package's layers above the models that a model's own methods offer when the package is installed: the Hub layer
# (cards and remote code on save, one-commit pushes), the encoder resolution (pip-shipped encoders offline, a
# sentence-transformers folder's pooling) and the table of clusters (``cluster_info``). Named here and imported on
# first use, never at import time and never as remote code (running_as_remote_code(): saving and pushing are then
# transformers' own, encoders hub ids or paths, and ``cluster_info`` is refused).
_PACKAGE_LAYERS = {
    "hub": "hf_textcluster.hub",
    "encoders": "hf_textcluster.encoders",
    "summary": "hf_textcluster.representation.summary",
}
# from_pretrained's arguments that say where on the Hub the files are: the checks before the load read them too
_HUB_KWARGS = ("revision", "token", "cache_dir", "local_files_only")


def package_layer(name: str):
    """The package's module ``_PACKAGE_LAYERS[name]``, imported on first use; ``None`` as remote code."""
    return None if running_as_remote_code() else importlib.import_module(_PACKAGE_LAYERS[name])


class SerializationMixin(_ModelBase):
    """``from_encoder_pretrained``, ``from_pretrained``, ``save_pretrained``, ``register_for_auto_class`` and
    ``push_to_hub`` of a clusterer: checked loads, atomic saves, and the package's Hub layer where it is installed."""

    config_class: type[TextClusteringConfig] = TextClusteringConfig
    tokenizer: Any

    # A callable that resolves `encoder` (name_or_path, pooling); None: the package's resolve_encoder (see
    # _PACKAGE_LAYERS), or as remote code a hub id or path as given. Set it to resolve encoders your own way.
    encoder_resolver = None
    _ship_remote_code = False

    @classmethod
    def from_encoder_pretrained(
        cls, encoder: str | os.PathLike | None = None, num_clusters: int = 8, **config_kwargs
    ) -> TextClusteringPreTrainedModel:
        """A new, untrained clusterer around a pretrained encoder.

        Pooling follows a sentence-transformers folder's metadata unless given. The cluster head is not fitted
        yet: the trainer (or ``initialize_clusters``) does that.

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
        model = cast("TextClusteringPreTrainedModel", cls(config))  # the mixin is only ever part of one
        model.encoder.load_state_dict(encoder_model.state_dict())
        model.tokenizer = tokenizer
        model.config.name_or_path = name_or_path
        return model.eval()  # like from_pretrained: dropout off until a trainer calls train()

    @classmethod
    def _expected_model_types(cls) -> set[str] | None:
        if cls.config_class is TextClusteringConfig:
            return None  # the base class loads any clusterer
        return {cls.config_class.model_type}

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, tokenizer=None, **kwargs):
        path = str(pretrained_model_name_or_path)
        check_local_path(path, "pretrained_model_name_or_path")
        config = kwargs.pop("config", None)
        num_clusters = kwargs.pop("num_clusters", None)
        hub_kwargs = {k: kwargs[k] for k in _HUB_KWARGS if k in kwargs}
        if config is None:
            # As remote code, the class's own config class (AutoConfig would pick the package's where it is
            # also installed); in the package, AutoConfig, so that another method's checkpoint is recognised.
            config = load_config(cls.config_class if running_as_remote_code() else AutoConfig, path, hub_kwargs)
        check_checkpoint_config(config, cls._expected_model_types(), path, num_clusters)
        kwargs.setdefault("use_safetensors", True)  # loading never unpickles
        wants_info = kwargs.pop("output_loading_info", False)
        check_weights_fit_config(cls, path, config, hub_kwargs)
        try:
            loaded: Any = super().from_pretrained(path, *model_args, config=config, output_loading_info=True, **kwargs)
        except Exception as err:
            if (corrupted := corrupted_weights_error(path, err)) is not None:
                raise corrupted from err
            raise
        if tokenizer is None:
            tokenizer = _load_tokenizer(path, hub_kwargs)
        model, info = loaded
        check_load_report(cls, path, config, info)
        model.tokenizer = tokenizer
        check_loaded_weights_finite(model, path)
        return (model, info) if wants_info else model

    def _check_finite_weights(self) -> None:
        """A model with NaN / inf weights (a diverged run) is never saved, carded or pushed (nor loaded)."""
        bad = non_finite_tensors(self)
        if bad:
            raise ValueError(
                f"{len(bad)} of this model's tensors hold NaN or inf (e.g. {bad[0]!r}): training diverged. Not saving "
                "it; retrain with a lower learning rate (the last good checkpoint in the run folder is kept)."
            )

    def save_pretrained(
        self,
        save_directory: str | os.PathLike,
        *args,
        model_card: bool | str | dict = False,
        remote_code: bool | None = None,
        **kwargs,
    ):
        """Save config, ``model.safetensors`` and the tokenizer. Files are written to a temporary folder first and
        moved into place, so an interrupted save never leaves a half-written checkpoint behind.

        With the hf_textcluster package, and only when asked: ``model_card=True`` (or a dict of
        :func:`~hf_textcluster.hub.model_card.generate_model_card` arguments, or the card's text) also writes
        ``README.md``; ``remote_code=True`` (default: whether the class was ``register_for_auto_class``-ed) adds the
        inference code and the ``auto_map`` / ``custom_pipelines`` entries that ``trust_remote_code=True`` needs.
        """
        if kwargs.pop("push_to_hub", False):  # transformers' spelling of "save, then push to repo_id"
            hub_keys = ("token", "private", "commit_message", "create_pr", "revision")
            hub_kwargs = {k: kwargs.pop(k) for k in hub_keys if k in kwargs}
            repo_id = kwargs.pop("repo_id", None) or os.path.basename(os.path.normpath(os.fspath(save_directory)))
            self.save_pretrained(save_directory, *args, model_card=model_card, remote_code=remote_code, **kwargs)
            if running_as_remote_code():
                return super().push_to_hub(repo_id, **hub_kwargs)  # type: ignore[arg-type]
            return self.push_to_hub(repo_id, remote_code=remote_code is not False, **hub_kwargs)
        if remote_code is None:
            remote_code = type(self)._ship_remote_code
        wants_card = model_card is not False and model_card is not None
        if (wants_card or remote_code) and running_as_remote_code():
            raise ValueError(
                "`model_card` and `remote_code` need the hf_textcluster package (`pip install -e .` in its "
                "checkout); this model runs as a repository's remote code."
            )
        self._check_finite_weights()
        save_directory = os.fspath(save_directory)
        if os.path.exists(save_directory) and not os.path.isdir(save_directory):
            raise NotADirectoryError(
                f"`save_directory` {save_directory} is a file, not a folder: pass a folder (it is created if missing)."
            )
        os.makedirs(save_directory, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".saving-", dir=save_directory)
        try:
            super().save_pretrained(staging, *args, **kwargs)
            if self.tokenizer is not None:
                self.tokenizer.save_pretrained(staging)
            if (hub := package_layer("hub")) is not None:
                hub.add_to_saved_model(
                    self,
                    staging,
                    save_directory=save_directory,
                    model_card=model_card if wants_card else None,
                    remote_code=bool(remote_code),
                )
            apply_umask(staging)
            _move_into(staging, save_directory)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    # ----- the Hub ---------------------------------------------------------------------------------------------------
    @classmethod
    def register_for_auto_class(cls, auto_class="AutoModel"):
        """Make ``save_pretrained`` ship remote code for this class (``push_to_hub`` always does): the inference code
        and ``config.json``'s ``auto_map`` (``AutoConfig``/``AutoModel``) and ``custom_pipelines``
        (``text-clustering``), so that ``trust_remote_code=True`` loads it without hf_textcluster."""
        if running_as_remote_code():  # transformers copies this file and its imports itself
            return super().register_for_auto_class(auto_class)
        if not isinstance(auto_class, str):
            auto_class = auto_class.__name__
        if auto_class != "AutoModel":
            raise ValueError(f"hf_textcluster clusterers register for 'AutoModel' only, got {auto_class!r}.")
        cls._ship_remote_code = True

    def push_to_hub(self, repo_id: str, **kwargs):  # type: ignore[override]  # the Hub layer's options, by name
        """Upload this trained clusterer to ``repo_id`` in one commit: weights, config, tokenizer, a generated model
        card (with ``metrics=`` / ``training_run=`` and the clusters' keywords from ``texts=``) and the inference code
        for ``trust_remote_code``. Refuses (before uploading anything) a model whose clusters were never initialised.
        Arguments: see :func:`hf_textcluster.hub.push.push_to_hub`. Returns the ``CommitInfo``."""
        if running_as_remote_code():
            return super().push_to_hub(repo_id, **kwargs)  # type: ignore[arg-type]
        return package_layer("hub").push_to_hub(self, repo_id, **kwargs)


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


def _move_into(staging: str, save_directory: str) -> None:
    """Move every file and folder of ``staging`` into ``save_directory``, replacing what is there."""
    for name in os.listdir(staging):
        target = os.path.join(save_directory, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        os.replace(os.path.join(staging, name), target)
