"""Curating a saved clusterer: merge or split its clusters, reduce them to N, or take in new texts, into a NEW model
folder; rename its clusters (in place, or into another folder).

The functions of :mod:`hf_textcluster.editing` do the weight arithmetic (``merge_clusters``, ``split_cluster``,
``update``); this module adds what a saved run needs around them: the texts (given, or the run's
own training texts), names for the edited clusters (c-TF-IDF on their texts), the folder written next to the old one
(never over it without ``overwrite``, so an edit is undone by loading the old folder), and ``training_run.json``
updated with the history of edits (``"edits"``: one record per edit: op, clusters, time, ...). The online state of
``update`` (each cluster's running means and counts) is kept in the folder as ``online_state.safetensors``. An edit
with texts saves the clusters' summary again (``cluster_info``), a merge without texts merges it.

Example:
    >>> merge_saved_model("runs/tickets", "runs/tickets-merged", [[3, 7], [1, 4, 9]], texts=texts)  # doctest: +SKIP
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from ..editing.curation import merge_clusters, split_cluster, start_online, update
from ..editing.rows import OnlineCentres, UpdateResult
from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..modeling.serialization import save_folder
from ..modeling.validation import check_local_path, validate_texts
from ..models.remote_code import save_pretrained
from ..representation import cluster_keywords, keyword_labels, rename_clusters
from ..representation.summary import (
    SUMMARY_KEY,
    assign_texts,
    merge_summaries,
    read_cluster_summary,
    summarize_model,
)
from .folder import (
    ASSIGNMENTS_FILE,
    TRAINING_RUN_FILE,
    RunFolder,
    load_clusterer,
    read_training_run,
    save_back_target,
)
from .training_texts import find_training_texts

ONLINE_STATE_FILE = "online_state.safetensors"


def name_edited_clusters(model, texts: Sequence[str], clusters: Sequence[int], edited: Sequence[int]) -> dict[int, str]:
    """Name the ``edited`` clusters of ``model`` after their c-TF-IDF keywords on ``texts`` (assigned ``clusters``);
    the other clusters keep their names, and a model whose names are all the defaults (``cluster_<i>``) keeps them.
    Returns the names given."""
    if not edited or all(str(name) == f"cluster_{k}" for k, name in model.config.id2label.items()):
        return {}
    keywords = cluster_keywords(list(texts), np.asarray(clusters), model.config.num_clusters)
    labels = keyword_labels(keywords)
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


def _save(model, model_dir: str, output_dir: str, record: dict, in_place: bool) -> dict:
    """Save ``model`` into ``output_dir`` with the source's ``training_run.json`` and the edit appended, all at once
    (:func:`~hf_textcluster.modeling.serialization.save_folder`); in place, nothing else of the folder is kept."""
    run = read_training_run(model_dir) or {}
    if run.get("metrics"):  # measured on the trained partition, not on the edited one
        run.setdefault("metrics_before_edits", run["metrics"])
        run["metrics"] = {}
    record = {
        **record,  # its "op" first
        "num_clusters": model.config.num_clusters,
        "source": os.path.abspath(model_dir),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    run["edits"] = [*run.get("edits", []), record]
    run["num_clusters"] = model.config.num_clusters
    state = getattr(model, "online_state_", None)
    remote_code = RunFolder(model_dir).ships_remote_code()

    def write(folder: str) -> None:
        save_pretrained(model, folder, remote_code=remote_code)
        RunFolder(folder).write_training_run(run)
        if state is not None:
            from safetensors.torch import save_file

            save_file(state.to_tensors(), os.path.join(folder, ONLINE_STATE_FILE))

    # the old clusters' online state does not describe these
    save_folder(output_dir, write, keep=lambda name: not in_place and name != ONLINE_STATE_FILE)
    return run


def _edit(model_dir, output_dir, overwrite, op, texts, texts_required, edit: Callable) -> tuple[object, dict]:
    model_dir, output_dir = os.fspath(model_dir), os.fspath(output_dir) if output_dir else output_dir
    check_local_path(model_dir, "model_dir")
    if not output_dir:
        raise ValueError(f"`output_dir` is required: {op} writes a new folder and keeps {model_dir} to go back to.")
    folder = RunFolder(output_dir)
    in_place = folder.is_folder(model_dir)
    if in_place and not overwrite:
        raise FileExistsError(
            f"--output-dir {output_dir} is the model being edited: {op} keeps it to go back to. Pass another "
            "folder, or --overwrite (overwrite=True) to replace it."
        )
    folder.check_may_replace_model(overwrite=overwrite, argument="--output-dir", command=op)
    if texts is not None:
        texts = validate_texts(texts)
    else:
        texts, why = find_training_texts(read_training_run(model_dir))
        if texts is None and texts_required:
            raise ValueError(
                f"{op} needs texts: pass the training texts (--input FILE / texts=...)"
                + (f"; {why}." if why else "; the run records none that can be found.")
            )
    edited, record = edit(load_clusterer(model_dir), texts)
    return edited, _save(edited, model_dir, output_dir, record, in_place)


def merge_saved_model(
    model_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    groups: Sequence[Sequence[int]],
    texts: Sequence[str] | None = None,
    overwrite: bool = False,
) -> tuple[object, dict]:
    """Merge the clusters ``groups`` of the model in ``model_dir`` and save it to ``output_dir``.

    Args:
        model_dir: a trained model folder (kept unchanged).
        output_dir: where the merged model goes (a new folder; ``model_dir`` itself only with ``overwrite``).
        groups: lists of cluster ids to merge, e.g. ``[[3, 7], [1, 4, 9]]``.
        texts: texts to calibrate and name on (default: the run's training texts when they can be found; without
            any, the calibration is merged and the names joined).
        overwrite: replace a model already in ``output_dir``.

    Returns:
        ``(model, training_run)``: the merged model and its updated ``training_run.json`` record.

    Raises:
        ValueError: bad groups.
        FileExistsError: ``output_dir`` holds a model (or is ``model_dir``) without ``overwrite``.

    Example:
        >>> model, run = merge_saved_model("runs/a", "runs/a-merged", [[3, 7]])   # doctest: +SKIP
        >>> *_, last_edit = run["edits"]                                          # doctest: +SKIP
        >>> last_edit["op"], model.config.num_clusters                             # doctest: +SKIP
        ('merge', 19)
    """
    return _edit(model_dir, output_dir, overwrite, "merge", texts, False, lambda m, t: merge_and_describe(m, groups, t))


def merge_and_describe(
    model, groups: Sequence[Sequence[int]], texts: Sequence[str] | None, batch_size: int = DEFAULT_ENCODE_BATCH_SIZE
) -> tuple[object, dict]:
    """``merge_clusters(model, groups)`` with the edited clusters named and the summary of the clusters refreshed (on
    ``texts`` when given, else merged from the model's): ``(merged model, the edit's record)``."""
    merged = merge_clusters(model, groups, texts=texts, batch_size=batch_size)
    mapping = merged.cluster_mapping_
    edited = sorted({int(mapping[k]) for group in groups for k in group})
    if texts is not None:
        describe_edited_clusters(merged, texts, edited, batch_size)
    else:
        summary = merge_summaries(read_cluster_summary(model.config), mapping, merged.config.num_clusters)
        setattr(merged.config, SUMMARY_KEY, summary)
    return merged, {
        "op": "merge",
        "clusters": [sorted(int(k) for k in group) for group in groups],
        "mapping": [int(v) for v in mapping],
    }


def describe_edited_clusters(
    model, texts: Sequence[str], edited: Sequence[int], batch_size: int = DEFAULT_ENCODE_BATCH_SIZE
) -> None:
    """After an edit, on ``texts`` (the training texts): name the ``edited`` clusters (:func:`name_edited_clusters`)
    and save the clusters' summary again (``config.cluster_summary``; one encoding pass for both)."""
    assignments = assign_texts(model, texts, batch_size=batch_size)
    name_edited_clusters(model, texts, assignments.clusters, edited)
    setattr(model.config, SUMMARY_KEY, summarize_model(model, list(texts), assignments))


def split_saved_model(
    model_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    cluster: int,
    n: int = 2,
    texts: Sequence[str] | None = None,
    overwrite: bool = False,
    random_state: int = 0,
) -> tuple[object, dict]:
    """Split cluster ``cluster`` of the model in ``model_dir`` into ``n`` and save it to ``output_dir`` (see
    :func:`merge_saved_model` for the folders). ``texts``: the training texts (default: the run's, when found);
    required. The parts are named after their c-TF-IDF keywords (unless the model's names are the defaults).

    Example:
        >>> model, run = split_saved_model("runs/a", "runs/a-split", 5, n=2, texts=texts)   # doctest: +SKIP
    """

    def edit(model, texts):
        split = split_cluster(model, cluster, n=n, texts=texts, random_state=random_state)
        k = model.config.num_clusters
        parts = [int(cluster), *range(k, k + int(n) - 1)]
        describe_edited_clusters(split, texts, parts)
        return split, {"op": "split", "clusters": [int(cluster)], "n": int(n), "new_ids": parts}

    return _edit(model_dir, output_dir, overwrite, "split", texts, True, edit)


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


def reduce_clusters(
    model,
    num_clusters: int,
    texts: Sequence[str] | None = None,
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
) -> object:
    """A copy of ``model`` with ``num_clusters`` clusters: its closest clusters merged (:func:`closest_merges` on
    the calibrated cluster centres and sizes; for a model that is not calibrated, on the mean embeddings of
    ``texts``), by ``merge_clusters``, so that the copy serves the reduced partition itself. As BERTopic's
    ``reduce_topics(nr_topics=N)``. ``cluster_mapping_`` on the copy gives each old id's new id.

    Args:
        model: a trained clusterer (unchanged).
        num_clusters: how many clusters remain, from 2 to the model's K - 1.
        texts: the training texts (or a sample): recommended (the calibration is refitted on them, the merged
            clusters named after their keywords and the clusters' summary recomputed); required for a model that
            is not calibrated.
        batch_size: texts per encoder call.

    Returns:
        The reduced copy.

    Raises:
        ValueError: ``num_clusters`` out of range, or no ``texts`` for a model that is not calibrated.

    Example:
        >>> reduced = reduce_clusters(model, 10, texts=texts)  # doctest: +SKIP
        >>> reduced.config.num_clusters, reduced.cluster_mapping_[:4]  # doctest: +SKIP
        (10, array([0, 1, 1, 2]))
    """
    return _reduce(model, num_clusters, texts, batch_size)[0]


def _reduce(model, num_clusters, texts, batch_size: int = DEFAULT_ENCODE_BATCH_SIZE) -> tuple[object, dict]:
    k = model.config.num_clusters
    if isinstance(num_clusters, bool) or not isinstance(num_clusters, (int, np.integer)) or not 2 <= num_clusters < k:
        raise ValueError(
            f"`num_clusters` (--num-clusters) must be a whole number from 2 to {k - 1} to reduce this model's {k} "
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
    groups = closest_merges(centres, sizes, int(num_clusters))
    merged, record = merge_and_describe(model, groups, texts, batch_size)
    return merged, {**record, "reduced_to": int(num_clusters)}


def reduce_saved_model(
    model_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    num_clusters: int,
    texts: Sequence[str] | None = None,
    overwrite: bool = False,
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
) -> tuple[object, dict]:
    """Merge the closest clusters of the model in ``model_dir`` until ``num_clusters`` remain
    (:func:`reduce_clusters`) and save it to ``output_dir``, as :func:`merge_saved_model` saves a merge (its
    ``edits`` record is a merge's, with ``reduced_to``).

    Args:
        model_dir: a trained model folder (kept unchanged).
        output_dir: where the reduced model goes (a new folder; ``model_dir`` itself only with ``overwrite``).
        num_clusters: how many clusters remain.
        texts: the training texts (default: the run's, when they can be found).
        overwrite: replace a model already in ``output_dir``.
        batch_size: texts per encoder call.

    Returns:
        ``(model, training_run)``.

    Example:
        >>> model, run = reduce_saved_model("runs/a", "runs/a-10", 10)  # doctest: +SKIP
        >>> *_, last_edit = run["edits"]  # doctest: +SKIP
        >>> last_edit["clusters"]  # doctest: +SKIP
        [[0, 4], [2, 7, 9]]
    """
    return _edit(
        model_dir, output_dir, overwrite, "reduce", texts, False, lambda m, t: _reduce(m, num_clusters, t, batch_size)
    )


def rename_saved_model(
    model_dir: str | os.PathLike,
    names: Mapping[int | str, str],
    output_dir: str | os.PathLike | None = None,
    overwrite: bool = False,
) -> object:
    """Give clusters of the model in ``model_dir`` the ``names`` you choose
    (:func:`~hf_textcluster.representation.rename_clusters`: saved as its ``id2label``) and save it, in place unless
    ``output_dir``. Nothing else changes; a folder's card (``README.md``) is written again by the command.

    Args:
        model_dir: a trained model folder.
        names: cluster id -> its new name.
        output_dir: save there instead (a folder holding another model only with ``overwrite``).
        overwrite: replace a model already in ``output_dir``.

    Returns:
        The renamed model.

    Example:
        >>> rename_saved_model("runs/tickets", {3: "refunds", 5: "billing"}).config.id2label[3]  # doctest: +SKIP
        'refunds'
    """
    model_dir = os.fspath(model_dir)
    check_local_path(model_dir, "model_dir")
    target = save_back_target(model_dir, output_dir, overwrite=overwrite, command="rename").path
    model = load_clusterer(model_dir)
    rename_clusters(model, names)  # refused before anything is written
    remote_code = RunFolder(model_dir).ships_remote_code()

    def write(folder: str) -> None:
        save_pretrained(model, folder, remote_code=remote_code)
        if target != model_dir:
            for name in (TRAINING_RUN_FILE, ASSIGNMENTS_FILE, ONLINE_STATE_FILE):
                if os.path.isfile(os.path.join(model_dir, name)):
                    shutil.copy2(os.path.join(model_dir, name), os.path.join(folder, name))

    save_folder(target, write)
    return model


def update_saved_model(
    model_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    texts: Sequence[str],
    accept_new: bool = False,
    reference_texts: Sequence[str] | None = None,
    overwrite: bool = False,
    **update_kwargs,
) -> tuple[object, UpdateResult, dict]:
    """Take the new ``texts`` into the model in ``model_dir`` (:func:`hf_textcluster.editing.update`) and save it to
    ``output_dir``.

    The online state (running means and counts) comes from ``model_dir``'s ``online_state.safetensors``; a folder
    without one starts it from ``reference_texts``, else from the run's training texts when they can be found, else
    from ``texts`` (which then move nothing). An accepted new cluster is named after its c-TF-IDF keywords.

    Returns:
        ``(model, result, training_run)``.

    Example:
        >>> update = update_saved_model("runs/a", "runs/a-week2", new_texts, accept_new=True)  # doctest: +SKIP
        >>> model, result, run = update  # doctest: +SKIP
    """
    texts = validate_texts(texts)
    outcome = {}

    def edit(model, reference):
        state_file = Path(model_dir, ONLINE_STATE_FILE)  # the running means and counts an update kept
        if state_file.is_file():
            from safetensors.torch import load_file

            model.online_state_ = OnlineCentres.from_tensors(load_file(str(state_file)))
        elif reference is not None:
            start_online(model, reference)
        result = update(model, texts, accept_new=accept_new, **update_kwargs)
        if result.accepted:
            name_edited_clusters(model, texts, result.clusters, [result.new_cluster])
        outcome["result"] = result
        return model, {
            "op": "update",
            "clusters": [] if result.new_cluster is None else [result.new_cluster],
            **result.to_dict(),
        }

    model, run = _edit(model_dir, output_dir, overwrite, "update", reference_texts, False, edit)
    return model, outcome["result"], run
