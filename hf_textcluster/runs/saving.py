"""The one writer of a model folder, :func:`save_model_folder`: the model, the trained head it keeps aside, the run
record, the training texts' clusters, the kept candidates, ``update``'s online state, the card and ``previous/``,
written in one all-or-nothing save (:func:`~hf_textcluster.modeling.serialization.save_folder`); and the names of
the files beside the model, which live here only.

Every module of ``runs/`` that saves a model folder calls :func:`save_model_folder`; :func:`restore_previous`
swaps a folder's model with its ``previous/``; ``training_run.json`` is written by :func:`write_record` only (in a
save, or alone where a run adds to its record). Reading the folder is :class:`~hf_textcluster.runs.folder.RunFolder`'s.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..cache import write_whole
from ..modeling import serialization
from ..modeling.loading_checks import check_finite_weights
from ..modeling.serialization import folder_lock, recover_folder, save_folder
from ..models.remote_code import add_remote_code
from .record import RunRecord

TRAINING_RUN_FILE = "training_run.json"  # what a run records (RunRecord); cards and `push` read it
RUN_IDENTITY_FILE = "run_identity.json"  # what makes a resumed run the same run
# The training texts' clusters as the saved model serves them: one column, ``cluster``, one row per training text in
# the order they were trained on.
ASSIGNMENTS_FILE = "assignments.csv"
# The trained head of a model that serves k-means centres in its place (editing.clusters.keep_method_head): serving
# `head` again serves it.
METHOD_HEAD_FILE = "method_head.safetensors"
CANDIDATES_FILE = "candidates.safetensors"  # the candidate partitions a `train --method auto` run keeps
SERVED_KEY = "served"  # the training texts' clusters as the saved model serves them, beside the candidates
ONLINE_STATE_FILE = "online_state.safetensors"  # what `update` keeps between batches: running means and counts
CARD_FILE = "README.md"  # the model card: a save of an edited model writes it again when the folder has one
TRAINER_STATE_FILE = "trainer_state.json"  # the Trainer's log history (losses, health checks), for `plot`
SIGNALS_DIR = "signals"  # a default run's signals, each a run folder of its own (kept with --keep-signals)
PREVIOUS_FOLDER = "previous"  # a model folder's state before its last save replaced it (restore goes back to it)
# Files at least this large are hard-linked into `previous/` (every save writes them new, never rewrites them in
# place); smaller ones (a card a command writes again in place) are copied.
LINK_FROM_BYTES = 1 << 20


def save_model_folder(
    target: str | os.PathLike,
    *,
    model=None,
    remote_code: bool = False,
    run: RunRecord | Callable[[], RunRecord] | None = None,
    assignments=None,
    candidates: tuple[Mapping[str, np.ndarray], Mapping] | None = None,
    online_state=None,
    files: Mapping[str, str] | None = None,
    trainer_state=None,
    previous: bool = False,
    stale: Sequence[str] = (),
) -> None:
    """Replace ``target``'s model and the files beside it, all at once (one
    :func:`~hf_textcluster.modeling.serialization.save_folder`): what is given is written, every other file of the
    folder stays (but the names in ``stale``).

    Args:
        target: the model folder (created if missing).
        model: the model (refused with NaN or inf weights, before anything is written), with the trained head it
            keeps aside (:data:`METHOD_HEAD_FILE`; the folder's old one is left out); None: the folder's stays.
        remote_code: with the model, the method's inference code and ``config.json``'s ``auto_map``.
        run: the run record (:data:`TRAINING_RUN_FILE`), or a function that returns it, called last.
        assignments: the training texts' clusters (:data:`ASSIGNMENTS_FILE`).
        candidates: ``(partitions, record)``: the candidate partitions of the training texts by name, and the
            ``texts_sha1`` and ``num_train_texts`` of ``record`` (:data:`CANDIDATES_FILE`, in its metadata).
        online_state: ``update``'s running means and counts (:data:`ONLINE_STATE_FILE`).
        files: file name -> text (the card, the generated names' cache).
        trainer_state: a Trainer's state: its log history (:data:`TRAINER_STATE_FILE`).
        previous: keep the model the save replaces in ``previous/`` (``restore`` goes back to it).
        stale: names of the folder's files that describe the model it replaces: left out unless written again.
    """
    if model is not None:
        check_finite_weights(model)
        stale = {*stale, METHOD_HEAD_FILE}

    def write(staging: str) -> None:
        if previous:
            _keep_previous(target, staging)
        if model is not None:
            model.save_pretrained(staging)
            if remote_code:
                add_remote_code(staging, model.config.model_type)
            _write_method_head(model, staging)
        if candidates is not None:
            _write_candidates(staging, *candidates)
        if online_state is not None:
            from safetensors.torch import save_file

            save_file(online_state.to_tensors(), os.path.join(staging, ONLINE_STATE_FILE))
        for name, text in (files or {}).items():
            write_whole(os.path.join(staging, name), text)
        if assignments is not None:
            write_assignments(staging, assignments)
        if trainer_state is not None:
            trainer_state.save_to_json(os.path.join(staging, TRAINER_STATE_FILE))
        if run is not None:
            write_record(staging, run() if callable(run) else run)

    save_folder(target, write, keep=lambda name: name not in stale)


def write_record(folder: str | os.PathLike, record: RunRecord) -> None:
    """Write the run record to ``folder``'s :data:`TRAINING_RUN_FILE` (whole or not at all: a temporary file renamed
    over it): within :func:`save_model_folder`, or alone where a run adds to its record."""
    write_whole(os.path.join(os.fspath(folder), TRAINING_RUN_FILE), json.dumps(record.to_dict(), indent=2))


def write_identity(folder: str | os.PathLike, identity: Mapping) -> None:
    """Write ``identity`` to ``folder``'s :data:`RUN_IDENTITY_FILE` (created if missing; atomically)."""
    os.makedirs(folder, exist_ok=True)
    write_whole(os.path.join(os.fspath(folder), RUN_IDENTITY_FILE), json.dumps(dict(identity), indent=2))


def write_assignments(folder: str | os.PathLike, clusters) -> None:
    """Write :data:`ASSIGNMENTS_FILE`: the column ``cluster``, one row per training text (atomically)."""
    lines = "".join(f"{int(k)}\n" for k in np.asarray(clusters).reshape(-1))
    write_whole(os.path.join(os.fspath(folder), ASSIGNMENTS_FILE), "cluster\n" + lines)


def _write_method_head(model, folder: str) -> None:
    """The trained head ``model`` keeps aside while it serves k-means centres (``model.method_head_``), if any."""
    kept = getattr(model, "method_head_", None)
    if kept is None:
        return
    from safetensors.torch import save_file

    state, serving_head = kept
    tensors = {name: value.detach().cpu().contiguous() for name, value in state.items()}
    save_file(tensors, os.path.join(folder, METHOD_HEAD_FILE), metadata={"serving_head": serving_head or ""})


def _write_candidates(folder: str, partitions: Mapping[str, np.ndarray], record: Mapping) -> None:
    """Every candidate's partition of the training texts (int32, one per text; safetensors: no pickle)."""
    from safetensors.numpy import save_file

    tensors = {name: np.ascontiguousarray(np.asarray(labels, dtype=np.int32)) for name, labels in partitions.items()}
    metadata = {"texts_sha1": str(record["texts_sha1"]), "num_train_texts": str(record["num_train_texts"])}
    save_file(tensors, os.path.join(folder, CANDIDATES_FILE), metadata=metadata)


def holds_model(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds a saved hf_textcluster model (a config.json with ``num_clusters`` beside its
    weights)."""
    folder = os.fspath(folder)
    if not any(os.path.isfile(os.path.join(folder, n)) for n in ("model.safetensors", "model.safetensors.index.json")):
        return False
    try:
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            return "num_clusters" in (json.load(f) or {})
    except (OSError, ValueError, RecursionError):
        return False


def model_card_file(model, run: RunRecord, folders: Sequence[str | None], texts: Sequence[str] | None) -> dict:
    """``{"README.md": the card of the edited model}`` (keywords from ``texts``) when one of ``folders`` (the folder
    saved to, the one it was loaded from) has a card: it lists the clusters, so a save writes it again, in the same
    save (the Hub layer's writer, :data:`~hf_textcluster.modeling.serialization.card_writer`); else ``{}``."""
    if not serialization.card_writer or not any(os.path.lexists(os.path.join(f, CARD_FILE)) for f in folders if f):
        return {}
    return {CARD_FILE: serialization.card_writer(model, run, texts)}


def _model_files(folder: str) -> list[str]:
    """The files of a model folder's state: its top-level files (not its folders: checkpoints, signals, previous;
    nor a symbolic link, whose target is not the folder's to copy)."""
    return sorted(
        entry.name
        for entry in os.scandir(folder)
        if entry.is_file(follow_symlinks=False) and not entry.name.startswith(".") and not entry.name.endswith(".tmp")
    )


def _keep_files(source: str, target: str) -> None:
    """The files of ``source``'s state in ``target``: large ones hard-linked, small ones copied."""
    os.makedirs(target, exist_ok=True)
    for name in _model_files(source):
        path = os.path.join(source, name)
        try:
            if os.path.getsize(path) < LINK_FROM_BYTES:
                raise OSError("small: copied")
            os.link(path, os.path.join(target, name))
        except OSError:  # small, or a file system without hard links
            shutil.copy2(path, os.path.join(target, name))


def _keep_previous(model_dir: str | os.PathLike, into: str) -> None:
    """Before a save replaces the model in ``model_dir``: its files (model, config, tokenizer, ``training_run.json``
    and the rest of the folder's top-level files) in ``previous/`` of ``into``, the staging folder of that save, so
    that the new state and its ``previous/`` replace the old ones at once. Nothing when it holds no model."""
    if holds_model(model_dir):
        _keep_files(os.fspath(model_dir), os.path.join(into, PREVIOUS_FOLDER))


def restore_previous(model_dir: str | os.PathLike) -> str:
    """Swap the model in ``model_dir`` with its previous state (``<model_dir>/previous/``, kept by the last save
    that replaced it), in one save (:func:`~hf_textcluster.modeling.serialization.save_folder`): the state before
    the last change is served again, and the state it replaces becomes the previous one (a second restore undoes
    the first).

    Returns:
        ``model_dir``.

    Raises:
        FileNotFoundError: ``model_dir`` keeps no previous state.

    Example:
        >>> restore_previous("runs/tickets")  # doctest: +SKIP
    """
    model_dir = os.fspath(model_dir)
    previous = os.path.join(model_dir, PREVIOUS_FOLDER)
    with folder_lock(model_dir):
        recover_folder(model_dir, complete=True)  # a save that was interrupted: completed or undone first
        if os.path.islink(previous):
            raise ValueError(
                f"{previous} is a symbolic link, not the previous state a save kept: restore serves only what the "
                f"folder kept itself. Remove the link, or load the model it points to by its own folder."
            )
        if not holds_model(previous):
            raise FileNotFoundError(
                f"{model_dir} keeps no previous state ({PREVIOUS_FOLDER}/ with a model): it is kept by a command that "
                "changed the model in place, and there was none."
            )
        current = set(_model_files(model_dir))

        def write(staging: str) -> None:
            _keep_previous(model_dir, staging)
            _keep_files(previous, staging)

        save_folder(model_dir, write, keep=lambda name: name not in current)
    return model_dir
