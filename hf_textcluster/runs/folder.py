"""The run folder: what ``train`` writes and every later command reads or updates.

A run folder holds the trained model (``config.json``, ``model.safetensors``, the tokenizer), the Trainer's
checkpoints, ``run_identity.json`` (what makes a resumed run the same run) and ``training_run.json`` (what the run
did: method, data, recipe, metrics; cards and ``push`` read it). :class:`RunFolder` reads those files: identity, the
run record (the schema is :class:`~hf_textcluster.runs.record.RunRecord`) and its training texts, the model, the
online state; it holds the ownership check of every writer. What writes the folder is
:mod:`~hf_textcluster.runs.saving` (the names of its files live there).

Nothing here ships as remote code: a served model needs none of it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from transformers import AutoModel

from ..editing.rows import OnlineCentres
from ..encoders import read_pretrained_config
from ..modeling.modeling_utils import TextClusteringPreTrainedModel
from ..modeling.serialization import recover_folder
from ..models import METHODS
from ..training.checkpoints import last_complete_checkpoint
from .record import RunRecord, texts_sha1
from .saving import (
    ASSIGNMENTS_FILE,
    METHOD_HEAD_FILE,
    ONLINE_STATE_FILE,
    PREVIOUS_FOLDER,
    RUN_IDENTITY_FILE,
    TRAINING_RUN_FILE,
    holds_model,
    write_identity,
    write_record,
)
from .training_texts import find_training_texts

__all__ = ["RunFolder", "load_clusterer", "read_folder_text", "read_online_state", "record_metrics"]


def check_finished_run(model_dir: str | os.PathLike, argument: str = "--model") -> None:
    """A folder without ``config.json`` is one clear line saying why and how to go on, not transformers'
    "Unrecognized model ... Should have a `model_type` key": ``train`` still running there or interrupted
    (checkpoints or a run identity, no saved model yet), a saved model whose ``config.json`` is gone, or a save into it
    that was interrupted (what it left is cleaned up first: :func:`~hf_textcluster.modeling.serialization.
    recover_folder`). Anything else (a saved model, a hub id) passes.

    Raises:
        ValueError: ``model_dir`` holds no finished model.
    """
    path = os.fspath(model_dir)
    interrupted = recover_folder(path)
    if os.path.isfile(os.path.join(path, "config.json")) or not (os.path.isdir(path) or interrupted):
        return
    checkpoint = last_complete_checkpoint(path)
    saved = [name for name in ("model.safetensors", TRAINING_RUN_FILE) if os.path.isfile(os.path.join(path, name))]
    if saved:
        previous = os.path.isdir(os.path.join(path, PREVIOUS_FOLDER))
        raise ValueError(
            f"{argument} {path} holds {' and '.join(saved)} but no config.json: the saved model is damaged. Put its "
            "config.json back, or run the command that saved it again"
            + (f" (train resumes from its last checkpoint, {os.path.basename(checkpoint)})" if checkpoint else "")
            + (f"; `hf-textcluster restore --model {path}` goes back to the model before." if previous else ".")
        )
    if checkpoint is not None or os.path.isfile(os.path.join(path, RUN_IDENTITY_FILE)):
        where = (
            f"its last checkpoint is {os.path.basename(checkpoint)}"
            if checkpoint
            else "it has no complete checkpoint yet"
        )
        raise ValueError(
            f"{argument} {path} holds a training run that has not finished (no saved model yet; {where}): wait for "
            "`hf-textcluster train` to end, or, if it was interrupted, run the same train command again to resume "
            f"{'from that checkpoint' if checkpoint else 'it'}."
        )
    if interrupted:
        raise ValueError(
            f"{argument} {path} holds no saved model: a save into it was interrupted before it finished (the model "
            "it was made from is unchanged). Run that command again."
        )
    if not os.listdir(path):
        raise ValueError(
            f"{argument} {path} is an empty folder, not a saved model: pass a saved model's folder, or run the "
            "command that saves one there."
        )
    raise ValueError(
        f"{argument} {path} holds no saved model (no config.json): pass the folder a model was saved in (train, or "
        "an edit's --output-dir, saves one)."
    )


def load_clusterer(model_dir: str | os.PathLike, **kwargs):
    """``AutoModel.from_pretrained(model_dir)`` that insists on an hf_textcluster clusterer and never runs a folder's
    own code: a folder of another kind, one that asks to run its own code, or (offline) a Hub id that is not in the
    cache is one line naming it, before anything is loaded.

    Args:
        model_dir: a saved model folder or a Hub id.
        **kwargs: passed to ``from_pretrained``.

    Returns:
        The clusterer.

    Raises:
        ValueError: when the folder holds another kind of model, or code of its own.
        FileNotFoundError: offline, a Hub id that is not in the cache.

    Example:
        >>> model = load_clusterer("runs/sccl-stackoverflow")  # doctest: +SKIP
    """
    check_finished_run(model_dir)
    path = os.fspath(model_dir)
    config = read_pretrained_config(path, cache_dir=kwargs.get("cache_dir"), revision=kwargs.get("revision"))
    if config is not None and config.get("model_type") not in tuple(METHODS):  # a tuple: any JSON value compares
        raise _not_a_clusterer(path, config.get("model_type"))
    model = AutoModel.from_pretrained(path, **{**kwargs, "trust_remote_code": False})
    if not isinstance(model, TextClusteringPreTrainedModel):  # a Hub id whose config.json was not cached
        raise _not_a_clusterer(path, model.config.model_type)
    _load_method_head(model, os.path.join(path, METHOD_HEAD_FILE))
    return model


def _not_a_clusterer(path: str, model_type) -> ValueError:
    what = f"model_type {model_type!r}" if model_type is not None else "its config.json has no model_type"
    return ValueError(
        f"{path} is not a folder made by hf_textcluster ({what}; its models are {', '.join(METHODS)}): pass the folder "
        "of a model that `hf-textcluster train` or `save_pretrained` saved, or train one."
    )


def read_online_state(model_dir: str | os.PathLike) -> OnlineCentres | None:
    """The running means and counts ``update`` kept in ``model_dir`` (:data:`~.saving.ONLINE_STATE_FILE`), or None."""
    path = os.path.join(os.fspath(model_dir), ONLINE_STATE_FILE)
    if not os.path.isfile(path):
        return None
    from safetensors.torch import load_file

    return OnlineCentres.from_tensors(load_file(path))


def read_folder_text(folder: str | None, name: str) -> str | None:
    """The text of the file ``name`` of ``folder``, or None."""
    path = os.path.join(folder, name) if folder else None
    if path is None or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return f.read()


def _load_method_head(model, path: str) -> None:
    """The trained head a save kept beside the model (:data:`~.saving.METHOD_HEAD_FILE`), when it fits the model's
    head."""
    if not os.path.isfile(path):
        return
    from safetensors import safe_open

    current = model.cluster_head.state_dict()
    with safe_open(path, framework="pt") as f:
        state = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118 - a safetensors file is not iterable
        serving_head = (f.metadata() or {}).get("serving_head") or None
    if set(state) == set(current) and all(state[n].shape == current[n].shape for n in state):
        model.method_head_ = ({n: v.to(current[n].device, current[n].dtype) for n, v in state.items()}, serving_head)


class RunFolder:
    """One run folder (see the module docstring).

    Args:
        path: the folder (it need not exist yet: ``train`` creates it).

    Example:
        >>> folder = RunFolder("runs/sccl-stackoverflow")
        >>> folder.holds_trained_model()  # doctest: +SKIP
        True
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)

    def _file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def _read_json(self, name: str) -> Any:
        if not os.path.isfile(self._file(name)):
            return None
        with open(self._file(name), encoding="utf-8") as f:
            try:
                return json.load(f)
            except RecursionError:  # JSON nested past Python's recursion limit: hf_textcluster never writes that
                raise ValueError(f"{self._file(name)} is nested too deep to be read; fix or delete it.") from None

    # ----- identity: what makes a resumed run the same run ------------------------------------------------------------
    @staticmethod
    def identity_of(method, num_clusters, encoder, config_kwargs, dataset, seed: int | None = None) -> dict:
        """The identity of a run: method, K, encoder, the simple config values, a digest of the training texts and
        the seed (when given)."""
        identity = {
            "method": method,
            "num_clusters": num_clusters,
            "encoder": encoder or "default",
            "num_train_texts": len(dataset),
            "texts_sha1": texts_sha1(dataset["text"]),
            "config": {k: v for k, v in sorted(config_kwargs.items()) if isinstance(v, (int, float, str, bool))},
        }
        return identity if seed is None else {**identity, "seed": seed}

    def read_identity(self) -> dict | None:
        """The recorded ``run_identity.json``, or ``None``."""
        return self._read_json(RUN_IDENTITY_FILE)

    def check_same_run(self, identity: dict) -> None:
        """Resuming continues *this* run only: another method, K, encoder, config, seed or other texts is an error."""
        saved = self.read_identity()
        if saved is None:
            return
        # a run recorded before its seed was part of its identity resumes under any seed, as it did then
        differs = [key for key in identity if (key in saved or key != "seed") and saved.get(key) != identity[key]]
        if differs:
            raise ValueError(
                f"{self.path} holds checkpoints of another run (its {', '.join(differs)} differ from this one's), "
                "which this run would resume from. Pass --no-resume (resume=False) to start over there, or another "
                "--output-dir."
            )

    def record_identity(self, identity: dict, resuming: bool) -> None:
        """Write ``run_identity.json`` (after :meth:`check_same_run` when ``resuming``)."""
        if resuming:
            self.check_same_run(identity)
        write_identity(self.path, identity)

    # ----- the run record and its texts -------------------------------------------------------------------------------
    def read_record(self) -> RunRecord | None:
        """The run record (``training_run.json``) written beside the model, or ``None`` when there is none.

        Raises:
            ValueError: the file is not valid JSON, or not a run record (a key it does not have).
        """
        path = self._file(TRAINING_RUN_FILE)
        try:
            data = self._read_json(TRAINING_RUN_FILE)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not valid JSON ({err}); fix or delete it.") from err
        try:
            return None if data is None else RunRecord.from_dict(data)
        except (ValueError, TypeError) as err:  # TypeError: a block holds a value of another type
            raise ValueError(f"{path} {err}: fix or delete it (the fields are RunRecord's).") from err

    def read_assignments(self):
        """The clusters of :data:`ASSIGNMENTS_FILE` (an int array, one per training text), or None without one.

        Raises:
            ValueError: a file that is not one column ``cluster`` of whole numbers.
        """
        path = self._file(ASSIGNMENTS_FILE)
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            lines = f.read().split()
        try:
            if lines[:1] != ["cluster"]:
                raise ValueError
            return np.asarray([int(line) for line in lines[1:]], dtype=np.int64)
        except ValueError:
            raise ValueError(f"{path} is not one column `cluster` of cluster ids; delete it.") from None

    def training_texts(self, data_dir: str | os.PathLike | None = None) -> tuple[list[str] | None, str | None]:
        """The texts this run was trained on: see :func:`~hf_textcluster.runs.training_texts.find_training_texts`."""
        return find_training_texts(self.read_record(), data_dir)

    # ----- the model -------------------------------------------------------------------------------------------------
    def holds_trained_model(self) -> bool:
        """Whether the folder holds a saved hf_textcluster model (a config.json with ``num_clusters`` beside its
        weights)."""
        return holds_model(self.path)

    def check_may_replace_model(
        self,
        *,
        overwrite: bool,
        argument: str = "--output-dir",
        command: str = "this command",
        source: str | None = None,
    ) -> None:
        """The one ownership check of every writer (train, recluster, refine, calibrate): a folder holding a trained
        model is replaced only with ``overwrite`` (or when it is ``source``, the model being updated in place); a
        path that is a file is an error.

        Raises:
            FileExistsError: the folder holds a trained model and ``overwrite`` is false.
            NotADirectoryError: the path is a file.
        """
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise NotADirectoryError(
                f"{argument} {self.path} is a file, not a folder: pass a folder (it is created if missing)."
            )
        if overwrite or not self.holds_trained_model() or (source is not None and self.is_folder(source)):
            return
        raise FileExistsError(
            f"{argument} {self.path} already holds a trained model, which {command} would replace. "
            "Pass --overwrite (overwrite=True) to replace it, or choose another folder."
        )

    def is_folder(self, path: str | os.PathLike) -> bool:
        """Whether ``path`` is this very folder (both existing)."""
        return os.path.isdir(self.path) and os.path.isdir(path) and os.path.samefile(self.path, path)

    def open(self, model=None, **kwargs) -> tuple[Any, RunRecord | None]:
        """The saved model and its run record: what ``card`` and ``push`` start from.

        Args:
            model: the model, when the caller has it loaded already (only the record is read then).
            **kwargs: passed to :func:`load_clusterer`.

        Returns:
            ``(model, record)`` (the record is ``None`` when the run wrote none).

        Raises:
            FileNotFoundError: when the folder holds no saved model.
        """
        if not os.path.isfile(self._file("config.json")):
            raise FileNotFoundError(f"{self.path} is not a saved model directory (no config.json).")
        model = model if model is not None else load_clusterer(self.path, **kwargs)
        return model, self.read_record()

    def ships_remote_code(self) -> bool:
        """Whether the saved model's ``config.json`` points at shipped remote code (``auto_map``)."""
        return "auto_map" in (self._read_json("config.json") or {})


def record_metrics(model_dir: str | os.PathLike, metrics: Mapping[str, float]) -> None:
    """Add scores measured after training (``{"acc": .., "nmi": ..}``, fractions; against labels, never trained on)
    to the run's ``training_run.json``, so its card shows them.

    Args:
        model_dir: a directory ``train_clusterer`` saved (with its ``training_run.json``).
        metrics: the scores, keyed as :func:`~hf_textcluster.evaluation.metrics.clustering_scores` keys them.

    Raises:
        FileNotFoundError: ``model_dir`` has no ``training_run.json``.

    Example:
        >>> record_metrics("runs/demo-sccl-stackoverflow", {"acc": 0.728, "nmi": 0.70})  # doctest: +SKIP
    """
    folder = RunFolder(model_dir)
    record = folder.read_record()
    if record is None:
        raise FileNotFoundError(
            f"{os.path.join(folder.path, TRAINING_RUN_FILE)} does not exist: record_metrics adds to a run that "
            "train_clusterer saved."
        )
    record.metrics = {**(record.metrics or {}), **{key: float(value) for key, value in metrics.items()}}
    write_record(folder.path, record)


def save_back_target(model: str, output_dir: str | os.PathLike | None, *, overwrite: bool, command: str) -> RunFolder:
    """The folder a command that changes the saved model ``model`` writes it to: ``output_dir``, else ``model``
    itself (a local folder; ``check_local_path`` it first), checked as every writer's
    (:meth:`RunFolder.check_may_replace_model`).

    Raises:
        ValueError: a Hub model without ``output_dir``; an ``output_dir`` that is ``model`` itself or inside it (by
            its real path). FileExistsError / NotADirectoryError: see :meth:`RunFolder.check_may_replace_model`.
    """
    if not os.path.isdir(model) and not output_dir:
        raise ValueError(
            f"--model {model} is not a local folder: {command} saves the model back, so pass --output-dir <folder> "
            "(output_dir=) for a Hub model."
        )
    real = os.path.realpath(model) if model and os.path.isdir(model) else None
    if output_dir and real and (os.path.realpath(output_dir) + os.sep).startswith(real + os.sep):
        raise ValueError(
            f"--output-dir {output_dir} is --model {model} itself or a folder inside it: leave --output-dir out to "
            f"change {model} in place (the model before is kept in its {PREVIOUS_FOLDER}/), or pass a folder "
            "elsewhere."
        )
    target = RunFolder(output_dir or model)
    target.check_may_replace_model(overwrite=overwrite, argument="--output-dir", command=command, source=model)
    return target
