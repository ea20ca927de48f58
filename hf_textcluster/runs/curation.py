"""What the edits of :class:`~hf_textcluster.runs.clusterer.Clusterer` need around the weight arithmetic of
:mod:`hf_textcluster.editing`: names for the edited clusters (c-TF-IDF on their texts) and the clusters' summary
saved again, the closest clusters to merge (``reduce``), the warnings about texts unlike a model's own, the online
state a folder keeps (``update``), and a model folder's previous state (kept before a save replaces the model there,
and restored from).

Example:
    >>> closest_merges(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]]), np.ones(3), 2)
    [[0, 1]]
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence

import numpy as np
import torch
from transformers.utils import logging

from ..editing.rows import OnlineCentres
from ..evaluation.metrics import cluster_accuracy
from ..modeling import serialization
from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..modeling.serialization import folder_lock, recover_folder, save_folder
from ..representation import BaseRepresentation
from ..representation.ctfidf import keyword_representation
from ..representation.summary import SUMMARY_KEY, assign_texts, summarize_model
from .folder import PREVIOUS_FOLDER, RunFolder, texts_sha1
from .record import EditAlreadyApplied, RunRecord

logger = logging.get_logger(__name__)

CARD_FILE = "README.md"  # the model card: a save of an edited model writes it again when the folder has one
ONLINE_STATE_FILE = "online_state.safetensors"  # what `update` keeps between batches: running means and counts
# Files at least this large are hard-linked into `previous/` (every save writes them new, never rewrites them in
# place); smaller ones (a card a command writes again in place) are copied.
LINK_FROM_BYTES = 1 << 20
# Above this share of outliers (1% expected on the texts a model was calibrated on), the texts are not like those.
UNLIKE_CALIBRATION = 0.1
# Below this share of texts in the same cluster (ids matched), the texts are probably not the model's training texts.
LOW_AGREEMENT = 0.5


def name_edited_clusters(model, texts: Sequence[str], clusters: Sequence[int], edited: Sequence[int]) -> dict[int, str]:
    """Name the ``edited`` clusters of ``model`` after their c-TF-IDF keywords on ``texts`` (assigned ``clusters``);
    the other clusters keep their names, and a model whose names are all the defaults (``cluster_<i>``) keeps them.
    Returns the names given."""
    if not edited or all(str(name) == f"cluster_{k}" for k, name in model.config.id2label.items()):
        return {}
    num_clusters = model.config.num_clusters
    keywords = keyword_representation(model.config).extract(list(texts), np.asarray(clusters), num_clusters)
    labels = BaseRepresentation.labels(keywords)
    taken = {name for k, name in model.config.id2label.items() if k not in set(edited)}
    given = {}
    for k in edited:
        name = labels.get(k) or model.config.id2label[k]
        while name in taken:  # names stay unique (label2id)
            name = f"{name} ({k})"
        given[k] = name
        taken.add(name)
    model.config.id2label = {**model.config.id2label, **given}
    model.config.label2id = {name: k for k, name in model.config.id2label.items()}
    return given


def describe_edited_clusters(
    model, texts: Sequence[str], edited: Sequence[int], batch_size: int = DEFAULT_ENCODE_BATCH_SIZE
) -> np.ndarray:
    """After an edit, on ``texts`` (the training texts): name the ``edited`` clusters (:func:`name_edited_clusters`)
    and save the clusters' summary again (``config.cluster_summary``; one encoding pass for both). Returns the
    texts' clusters."""
    assignments = assign_texts(model, texts, batch_size=batch_size)
    name_edited_clusters(model, texts, assignments.clusters, edited)
    setattr(model.config, SUMMARY_KEY, summarize_model(model, list(texts), assignments))
    return np.asarray(assignments.clusters)


def closest_merges(centres: np.ndarray, sizes: np.ndarray, num_clusters: int) -> list[list[int]]:
    """The groups of clusters to merge so that ``num_clusters`` remain: again and again the two clusters whose
    centres are closest (cosine) merge, a merged cluster's centre being the size-weighted mean of its members'.

    Args:
        centres: (K, d) one centre per cluster.
        sizes: (K,) each cluster's size (its weight in a merged centre).
        num_clusters: how many clusters remain (``1 <= num_clusters <= K``).

    Returns:
        The groups of at least two old ids, each sorted, in order of their smallest id.

    Example:
        >>> closest_merges(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]]), np.ones(3), 2)
        [[0, 1]]
    """
    vectors = [np.asarray(c, dtype=np.float64) for c in centres]
    weights = [max(float(w), 1e-12) for w in sizes]
    groups = [[i] for i in range(len(vectors))]
    while len(groups) > num_clusters:
        unit = np.stack(vectors)
        unit = unit / np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
        similarity = unit @ unit.T
        np.fill_diagonal(similarity, -np.inf)
        i, j = sorted(np.unravel_index(int(np.argmax(similarity)), similarity.shape))
        total = weights[i] + weights[j]
        vectors[i] = (weights[i] * vectors[i] + weights[j] * vectors[j]) / total
        weights[i] = total
        groups[i] += groups.pop(j)
        del vectors[j], weights[j]
    return sorted((sorted(group) for group in groups if len(group) > 1), key=lambda group: group[0])


def reduce_groups(
    model, num_clusters, texts: Sequence[str] | None, batch_size: int = DEFAULT_ENCODE_BATCH_SIZE
) -> list[list[int]]:
    """The groups to merge so that ``num_clusters`` of ``model``'s clusters remain (:func:`closest_merges` on the
    calibrated centres and sizes; for a model that is not calibrated, on the mean embeddings of ``texts``).

    Raises:
        ValueError: ``num_clusters`` out of range, or no ``texts`` for a model that is not calibrated.
    """
    k = model.config.num_clusters
    if isinstance(num_clusters, bool) or not isinstance(num_clusters, (int, np.integer)) or not 2 <= num_clusters < k:
        raise ValueError(
            f"`num_clusters` must be a whole number from 2 to {k - 1} to reduce this model's {k} "
            f"clusters; got {num_clusters!r}."
        )
    if model.is_calibrated:
        centres = model.calibration.centres.detach().float().cpu().numpy()
        sizes = model.calibration.cluster_sizes.detach().float().cpu().numpy()
    elif texts is not None:
        embeddings = model.embed(texts, batch_size=batch_size, show_progress_bar=False)
        clusters = model.predict(texts, batch_size=batch_size, show_progress_bar=False)
        sizes = np.bincount(clusters, minlength=k).astype(np.float64)
        centres = np.stack(
            [embeddings[clusters == c].mean(axis=0) if sizes[c] else np.zeros(embeddings.shape[1]) for c in range(k)]
        )
    else:
        raise ValueError(
            "reducing a model that is not calibrated needs texts (texts=..., --input FILE): its clusters' centres "
            "come from them. Pass the training texts, or calibrate the model first (hf-textcluster calibrate)."
        )
    return closest_merges(centres, sizes, int(num_clusters))


def warn_if_unlike_calibration(model, texts: Sequence[str], batch_size: int, seed: int, sample_size: int = 2000):
    """A calibrated model re-calibrated on texts its calibration finds mostly outliers: one warning line."""
    if not model.is_calibrated:
        return
    rows = np.random.default_rng(seed).permutation(len(texts))[:sample_size]
    flagged = model.predict_with_confidence([texts[int(i)] for i in rows], batch_size=batch_size)["is_outlier"]
    if flagged.mean() > UNLIKE_CALIBRATION:
        logger.warning(
            f"{100 * flagged.mean():.0f}% of these texts are outliers for the model's current calibration (about 1% "
            "of its training texts are): are they its training texts? Calibrate on those."
        )


@torch.no_grad()
def warn_if_unlike_head(model, embeddings: np.ndarray, before: np.ndarray) -> None:
    """After re-clustering: new clusters that agree with the trained head's (``before``) on under half of the
    texts, ids matched one to one, are one warning line (the texts are probably not the training texts)."""
    after = model.cluster_probabilities(torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32)))
    share = cluster_accuracy(before, after.argmax(dim=-1).numpy())
    if share < LOW_AGREEMENT:
        logger.warning(
            f"The new clusters agree with the trained head on only {100 * share:.0f}% of these texts: are they the "
            f"model's training texts? Re-cluster on those (the model before is kept in {PREVIOUS_FOLDER}/)."
        )


def read_online_state(model_dir: str | os.PathLike) -> OnlineCentres | None:
    """The running means and counts ``update`` kept in ``model_dir`` (:data:`ONLINE_STATE_FILE`), or None."""
    path = os.path.join(os.fspath(model_dir), ONLINE_STATE_FILE)
    if not os.path.isfile(path):
        return None
    from safetensors.torch import load_file

    return OnlineCentres.from_tensors(load_file(path))


def write_online_state(folder: str | os.PathLike, state: OnlineCentres | None) -> None:
    """Write ``state`` as :data:`ONLINE_STATE_FILE` into ``folder``, the staging folder of the save
    (:func:`~hf_textcluster.modeling.serialization.save_folder`); None writes none, and the save leaves the folder's
    old file out (the old clusters' state does not describe the model)."""
    if state is None:
        return
    from safetensors.torch import save_file

    save_file(state.to_tensors(), os.path.join(os.fspath(folder), ONLINE_STATE_FILE))


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


def keep_previous(model_dir: str | os.PathLike, into: str) -> str | None:
    """Before a save replaces the model in ``model_dir``: its files (model, config, tokenizer, ``training_run.json``
    and the rest of the folder's top-level files) in ``previous/`` of ``into``, the staging folder of that save
    (:func:`~hf_textcluster.modeling.serialization.save_folder`), so that the new state and its ``previous/``
    replace the old ones at once. Returns ``<model_dir>/previous``, or None when ``model_dir`` holds no model."""
    model_dir = os.fspath(model_dir)
    if not RunFolder(model_dir).holds_trained_model():
        return None
    _keep_files(model_dir, os.path.join(into, PREVIOUS_FOLDER))
    return os.path.join(model_dir, PREVIOUS_FOLDER)


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
        if not RunFolder(previous).holds_trained_model():
            raise FileNotFoundError(
                f"{model_dir} keeps no previous state ({PREVIOUS_FOLDER}/ with a model): it is kept by a command that "
                "changed the model in place, and there was none."
            )
        current = set(_model_files(model_dir))

        def write(staging: str) -> None:
            keep_previous(model_dir, staging)
            _keep_files(previous, staging)

        save_folder(model_dir, write, keep=lambda name: name not in current)
    return model_dir


def read_folder_text(folder: str | None, name: str) -> str | None:
    """The text of the file ``name`` of ``folder``, or None."""
    path = os.path.join(folder, name) if folder else None
    if path is None or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return f.read()


def model_card_file(model, run: RunRecord, folders: Sequence[str | None], texts: Sequence[str] | None) -> dict:
    """``{"README.md": the card of the edited model}`` (keywords from ``texts``) when one of ``folders`` (the folder
    saved to, the one it was loaded from) has a card: it lists the clusters, so a save writes it again, in the same
    save (the Hub layer's writer, :data:`~hf_textcluster.modeling.serialization.card_writer`); else ``{}``."""
    if not serialization.card_writer or not any(os.path.lexists(os.path.join(f, CARD_FILE)) for f in folders if f):
        return {}
    return {CARD_FILE: serialization.card_writer(model, run, texts)}


def next_edit_id(edits: Sequence[dict] | None, op: str, kwargs: dict, in_place: str | None) -> str:
    """The id of the edit ``op(**kwargs)`` made after ``edits`` (a run record's): a digest of the id of the edit it
    follows, ``op`` and its arguments (texts by their digest; the batch size left out). The same edit of the same
    state has the same id, so an edit run again after its save was interrupted (and completed later) is found.

    Raises:
        EditAlreadyApplied: ``in_place`` (the folder edited in place) already ends with this very edit.
    """
    edits = list(edits or [])
    follows = [None, *(edit.get("id") for edit in edits)]  # the id of the edit each one follows
    if in_place and edits and edits[-1].get("id") == _edit_id(follows[-2], op, kwargs):
        raise EditAlreadyApplied(
            f"{in_place}: this {op} is already applied: it is the folder's last edit, on the same model (saved "
            f"{edits[-1].get('time')}; a command interrupted after its save leaves it so). Nothing changed."
        )
    return _edit_id(follows[-1], op, kwargs)


def _edit_id(follows: str | None, op: str, kwargs: dict) -> str:
    arguments = [
        (key, texts_sha1(value) if key in ("texts", "reference_texts") and value is not None else value)
        for key, value in sorted(kwargs.items())
        if key != "batch_size"
    ]
    return hashlib.sha1(json.dumps([follows, op, arguments], default=repr).encode()).hexdigest()[:16]
