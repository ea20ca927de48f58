"""Curating a trained clusterer's clusters: :func:`merge_clusters`, :func:`split_cluster`, :func:`start_online` /
:func:`update` for new texts, :func:`reduce_outliers` and :func:`least_typical`, functions that take the model.

They choose what to edit and check the arguments; the weight arithmetic that rewrites each head's rows is
:mod:`~hf_textcluster.editing.rows`. An edit returns an edited copy (``update`` edits in place) that serves, saves
and ships its new partition like any model, as remote code too: package-only code makes the edit, the served model
needs none of it.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..modeling.calibration import quantile_at, quantile_rank
from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..modeling.validation import check_scalar
from ..representation import store_names
from ..representation.summary import SUMMARY_KEY, assign_texts, outlier_rows, summarize_model
from .kmeans import fit_kmeans
from .rows import (
    OnlineCentres,
    UpdateResult,
    append_row,
    cohesive_group,
    grown_group,
    head_inputs,
    is_distinct,
    merge_rows,
    split_rows,
)

if TYPE_CHECKING:
    from ..modeling.modeling_utils import TextClusteringPreTrainedModel

# `update`: a text farther from its nearest cluster than nine in ten of that cluster's texts may belong to a new one
UPDATE_FAR_QUANTILE = 0.9


def _edited_copy(model: TextClusteringPreTrainedModel) -> TextClusteringPreTrainedModel:
    int8 = model.__dict__.pop("_int8_cache", None)  # a cache, not worth copying
    try:
        edited = copy.deepcopy(model)
    finally:
        if int8 is not None:
            model.__dict__["_int8_cache"] = int8
    edited.__dict__.pop("online_state_", None)  # the running means describe the old clusters
    return edited


def _check_cluster_id(model, value, argument_name: str) -> int:
    num_clusters = model.config.num_clusters
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < num_clusters:
        raise ValueError(f"`{argument_name}` must be a cluster id in 0..{num_clusters - 1}, got {value!r}.")
    return int(value)


def _rename_clusters(
    model, plan: list[list[int]], suffixes: dict[int, str] | None = None, given: dict[int, str] | None = None
) -> None:
    """``id2label`` for clusters made of the old ``plan[i]``: default names (``cluster_<i>``) follow the new ids,
    given names are joined (``a + b``) or suffixed (a split's parts); ``given``: new id -> a name it takes instead."""
    old = {int(k): str(v) for k, v in (model.config.id2label or {}).items()}
    default = all(name == f"cluster_{k}" for k, name in old.items())
    names = {
        new_id: " + ".join(old[k] for k in members) + (suffixes or {}).get(new_id, "")
        if members and not default
        else f"cluster_{new_id}"
        for new_id, members in enumerate(plan)
    } | (given or {})
    model.config.num_clusters = len(plan)
    store_names(model.config, names)
    vars(model.config).pop("cluster_summary", None)  # it described the old clusters (the package recomputes it)


def _embeddings_tensor(model, texts, batch_size, precision) -> tuple[list[str], torch.Tensor]:
    texts, precision = model._serving_arguments(texts, batch_size, precision)
    embeddings = model._encode_texts(texts, batch_size, None, precision, ("embeddings",)).embeddings
    return texts, embeddings.to(model.device)


def merge_clusters(
    model,
    groups: Sequence[Sequence[int]],
    texts: Sequence[str] | None = None,
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    precision: str | torch.dtype | None = "auto",
) -> TextClusteringPreTrainedModel:
    """A copy of ``model`` whose clusters ``groups`` are merged, each into one cluster.

    Weight arithmetic: a merged cluster's row in every head is the size-weighted mean of its members' rows (see
    :mod:`hf_textcluster.editing.rows`), so the copy serves the merged partition itself (``predict``,
    the pipeline, ``save_pretrained`` and the Hub). Ids: a merged cluster takes the smallest id of its group, and
    the clusters are numbered again from 0 in the order of their smallest old id; ``cluster_mapping_`` on the copy
    gives each old id's new id. Names (``id2label``) are joined (``"a + b"``). With ``texts`` (the training texts,
    or a sample), the rows are weighted by the clusters' shares of them, a linear head's merged row keeps the
    ground its clusters held on them, and the calibration is refitted on them; without, the rows are weighted by
    the calibration's cluster sizes, its centres averaged and its outlier distances the widest of the members'.

    Args:
        model: a trained clusterer.
        groups: lists of at least two cluster ids each, no id in two groups, e.g. ``[[3, 7], [1, 4, 9]]``.
        texts: the training texts (or a sample); optional, recommended.
        batch_size: texts per encoder call.
        precision: as for ``embed``.

    Returns:
        The merged copy (``model`` is unchanged).

    Raises:
        ValueError: a bad group (an unknown id, a group of one, an id in two groups, fewer than 2 clusters left).

    Example:
        >>> merged = merge_clusters(model, [[3, 7], [1, 4, 9]], texts=training_texts)   # doctest: +SKIP
        >>> merged.config.num_clusters, merged.cluster_mapping_[7]                     # doctest: +SKIP
        (17, 3)
    """
    model._check_clusters_initialized()
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence) or not groups:
        raise ValueError(f"`groups` must be a list of lists of cluster ids, e.g. [[3, 7], [1, 4, 9]]; got {groups!r}.")
    seen: set[int] = set()
    representative = list(range(model.config.num_clusters))
    for group in groups:
        if isinstance(group, (str, bytes)) or not isinstance(group, Sequence) or len(set(group)) < 2:
            raise ValueError(f"Each of `groups` must list at least two different cluster ids; got {group!r}.")
        ids = sorted({_check_cluster_id(model, k, "groups") for k in group})
        if seen & set(ids):
            raise ValueError(f"Cluster {min(seen & set(ids))} is in two of `groups`: merge it once.")
        seen |= set(ids)
        for k in ids:
            representative[k] = ids[0]
    kept = sorted(set(representative))
    if len(kept) < 2:
        raise ValueError("Merging these `groups` leaves one cluster: a clusterer needs at least 2.")
    plan = [[k for k in range(model.config.num_clusters) if representative[k] == rep] for rep in kept]
    inputs = labels = None
    if texts is not None:
        texts, embeddings = _embeddings_tensor(model, texts, batch_size, precision)
        probs, inputs = head_inputs(model, embeddings)
        labels = probs.argmax(dim=-1)
    edited = _edited_copy(model)
    merge_rows(edited, plan, inputs, labels)
    _rename_clusters(edited, plan)
    edited.cluster_mapping_ = np.array([kept.index(rep) for rep in representative], dtype=np.int64)
    if texts is not None:
        edited.calibrate(texts, batch_size=batch_size, precision=precision)
    return edited


def split_cluster(
    model,
    cluster: int,
    n: int = 2,
    texts: Sequence[str] | None = None,
    random_state: int | None = 0,
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    precision: str | torch.dtype | None = "auto",
) -> TextClusteringPreTrainedModel:
    """A copy of ``model`` whose cluster ``cluster`` is split into ``n`` clusters.

    The cluster's members among ``texts`` are split by k-means in the head's input space; each head gets one row
    per part from the parts' means (see :mod:`hf_textcluster.editing.rows`), so the copy serves the
    split partition itself. The first part keeps the id ``cluster``, the others get ids ``K .. K+n-2``;
    ``cluster_mapping_`` (old id -> new id) is the identity. Names get `` (1)``, `` (2)``... The calibration is
    refitted on ``texts``.

    Args:
        model: a trained clusterer.
        cluster: the id of the cluster to split.
        n: into how many clusters (>= 2).
        texts: the training texts (or a sample with enough of the cluster's members: at least ``2 * n``).
        random_state: seed of the k-means split.
        batch_size: texts per encoder call.
        precision: as for ``embed``.

    Returns:
        The split copy (``model`` is unchanged).

    Raises:
        ValueError: a bad ``cluster`` or ``n``, no ``texts``, or too few (distinct) members of the cluster in them.

    Example:
        >>> split = split_cluster(model, 5, n=2, texts=training_texts)   # doctest: +SKIP
        >>> split.config.num_clusters                                   # doctest: +SKIP
        21
    """
    model._check_clusters_initialized()
    cluster = _check_cluster_id(model, cluster, "cluster")
    check_scalar(n, "n", numbers.Integral, min_val=2, hint="the clusters to split into")
    if texts is None:
        raise ValueError("`texts` is required: the cluster's members among them are split (pass the training texts).")
    texts, embeddings = _embeddings_tensor(model, texts, batch_size, precision)
    probs, inputs = head_inputs(model, embeddings)
    is_member = probs.argmax(dim=-1) == cluster
    members = torch.nonzero(is_member).flatten()
    distinct = len({row.numpy().tobytes() for row in embeddings[members].cpu()})
    if distinct < 2 * n:
        raise ValueError(
            f"Cluster {cluster} has {members.numel()} texts ({distinct} distinct) among `texts`: splitting it into "
            f"{n} needs at least {2 * n}. Pass more of its texts (the training texts), or a smaller `n`."
        )
    with torch.no_grad():
        features = model.kmeans_features(embeddings[members]).float().cpu().numpy()
    parts = torch.as_tensor(fit_kmeans(features, int(n), random_state=random_state).labels_, dtype=torch.long)
    edited = _edited_copy(model)
    split_rows(edited, cluster, inputs, is_member, parts)
    plan = [[k] for k in range(model.config.num_clusters)] + [[cluster]] * (int(n) - 1)
    suffixes = {cluster: " (1)", **{model.config.num_clusters + j: f" ({j + 2})" for j in range(int(n) - 1)}}
    _rename_clusters(edited, plan, suffixes)
    edited.cluster_mapping_ = np.arange(model.config.num_clusters)
    edited.calibrate(texts, batch_size=batch_size, precision=precision)
    return edited


def start_online(
    model,
    texts: Sequence[str],
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    precision: str | torch.dtype | None = "auto",
) -> TextClusteringPreTrainedModel:
    """Start what ``update`` keeps (``online_state_``, an
    :class:`~hf_textcluster.editing.rows.OnlineCentres`)
    from ``texts``, the texts the model already describes (its training texts, or a sample): each cluster's mean
    of its texts in every head's input space (a centroid head: its centroids) and their counts. Returns the model.

    Example:
        >>> result = update(start_online(model, training_texts), new_texts)   # doctest: +SKIP
    """
    model._check_clusters_initialized()
    _, embeddings = _embeddings_tensor(model, texts, batch_size, precision)
    probs, inputs = head_inputs(model, embeddings)
    model.online_state_ = OnlineCentres.start(model, inputs, probs.argmax(-1))
    return model


def update(
    model,
    texts: Sequence[str],
    accept_new: bool = False,
    far_quantile: float = UPDATE_FAR_QUANTILE,
    min_new_size: int | None = None,
    new_name: str | None = None,
    random_state: int | None = 0,
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    precision: str | torch.dtype | None = "auto",
):
    """Take in new texts without retraining the encoder (in place): assign them, move the clusters, and propose
    an emerging group as a new cluster.

    The online rule is mini-batch k-means' per-centre update on the served features: each cluster's mean of its
    texts in every head's input space moves by ``m / (count + m) * (batch mean - mean)`` (``m`` of the new texts
    are assigned to it; counts grow), and the head's row follows (a centroid is the mean; a linear row gets the
    nearest-mean term ``s(|x - mean|² - |x - new mean|²)``, see :mod:`hf_textcluster.editing.rows`). The
    state starts with ``start_online`` (call it with the training texts first; else this batch starts it and
    moves nothing). A text farther from its nearest calibrated centre than that cluster's ``far_quantile`` of
    its calibration texts is *far* (not an outlier: the pipeline's ``outlier_quantile``, 0.99 by default, flags
    those). The largest cohesive group among the far texts (median distance to its own
    centre no larger than a typical cluster's) seeds a new cluster; it grows by a few k-means steps against the
    fixed existing centres (the texts of the batch nearer to its centre than to every existing one join it), and
    it is proposed when it has at least ``min_new_size`` texts and its centre stands as far from every existing
    centre as the two closest existing centres stand from each other. Far and proposed texts move no centre;
    ``accept_new=True`` adds the proposal (every head grows by one row, the calibration too).

    Args:
        model: a trained, calibrated clusterer (changed in place).
        texts: the new texts.
        accept_new: add the proposed group as a cluster.
        far_quantile: beyond this quantile of its nearest cluster's calibrated distances a text is far
            (default 0.9: farther than nine in ten of that cluster's own texts).
        min_new_size: the smallest group proposed; default a quarter of the texts per cluster in this batch
            (at least 5).
        new_name: the new cluster's name (default ``cluster_<id>``).
        random_state: seed of the grouping of the far texts.
        batch_size: texts per encoder call.
        precision: as for ``embed``.

    Returns:
        An :class:`~hf_textcluster.editing.rows.UpdateResult`.

    Raises:
        ValueError: the model is not calibrated, or a bad argument.

    Example:
        >>> start_online(model, training_texts)                       # doctest: +SKIP
        >>> result = update(model, new_texts, accept_new=True)       # doctest: +SKIP
        >>> result.proposed is not None, model.config.num_clusters   # doctest: +SKIP
        (True, 21)
    """
    model._check_clusters_initialized()
    model._require_calibration("`update`")
    hint = "a quantile of a cluster's calibrated distances beyond which a text is far, e.g. 0.9"
    check_scalar(
        far_quantile, "far_quantile", (int, float), min_val=0, max_val=1, include_boundaries="right", hint=hint
    )
    far_quantile = float(far_quantile)
    check_scalar(min_new_size, "min_new_size", int, min_val=2, allow_none=True)
    texts, embeddings = _embeddings_tensor(model, texts, batch_size, precision)
    probs, inputs = head_inputs(model, embeddings)
    unit = torch.nn.functional.normalize(embeddings.float().cpu(), dim=-1)
    # far: beyond the nearest cluster's `far_quantile` of its calibrated distances
    nearest = (1 - unit @ model.calibration.centres.float().cpu().T).min(dim=-1)
    far = nearest.values > model.calibration.thresholds(far_quantile).float().cpu()[nearest.indices]
    size = min_new_size or max(5, math.ceil(len(texts) / model.config.num_clusters / 4))
    proposed = _propose_cluster(model, unit, far, size, random_state)
    still = far.clone()
    if proposed is not None:
        still[torch.as_tensor(proposed)] = True
    moved = _move_online(model, inputs, probs.argmax(dim=-1), unit, still)
    new_cluster = _add_cluster(model, inputs, unit, proposed, new_name) if accept_new and proposed is not None else None
    with torch.no_grad():
        clusters = model.cluster_probabilities(embeddings).argmax(dim=-1)
    distance = model.calibration.distance(embeddings.float(), clusters).cpu()
    return UpdateResult(
        clusters=clusters.cpu().numpy(),
        distance=distance.numpy(),
        far=far.numpy(),
        proposed=proposed,
        accepted=new_cluster is not None,
        new_cluster=new_cluster,
        moved=moved.numpy(),
    )


def _move_online(model, inputs: dict[str, torch.Tensor], labels, unit: torch.Tensor, far) -> torch.Tensor:
    """Move the clusters (heads' rows and calibrated centres) by the running means of the texts that are not far;
    a first batch only starts the state. Returns how far each cluster moved."""
    near = torch.nonzero(~far).flatten()
    if getattr(model, "online_state_", None) is None:  # a first batch starts the state (from all texts if all are far)
        near = near if near.numel() else torch.arange(len(labels))
        model.online_state_ = OnlineCentres.start(model, {k: v[near] for k, v in inputs.items()}, labels[near])
        return torch.zeros(model.config.num_clusters)
    moved = model.online_state_.update(model, {k: v[near] for k, v in inputs.items()}, labels[near])
    _move_calibration_centres(model, unit[near], labels[near])
    return moved


def _propose_cluster(model, unit: torch.Tensor, far, size: int, random_state: int | None) -> np.ndarray | None:
    """The rows of a proposed new cluster: the largest cohesive group of far texts (``cohesive_group``) grown
    against the existing centres (``grown_group``), when it keeps ``size`` texts and stands apart
    (``is_distinct``); else None."""
    typical = float(quantile_at(model.calibration.distance_quantiles.float(), 0.5).median())
    far_rows = torch.nonzero(far).flatten().numpy()
    if far_rows.size < size:
        return None
    group = cohesive_group(unit[far_rows].numpy(), size, typical, random_state=random_state)
    if group is None:
        return None
    centres = torch.nn.functional.normalize(model.calibration.centres.float().cpu(), dim=-1).numpy()
    rows = grown_group(unit.numpy(), far_rows[group], centres)
    return rows if rows.size >= size and is_distinct(unit.numpy(), rows, centres) else None


def _add_cluster(model, inputs: dict[str, torch.Tensor], unit, proposed: np.ndarray, new_name: str | None) -> int:
    """Grow every head, the online state and the names by one cluster made of the texts ``proposed``; its id."""
    num_clusters = model.config.num_clusters
    rows = torch.as_tensor(proposed)
    in_group = torch.zeros(len(unit), dtype=torch.bool)
    in_group[rows] = True
    append_row(model, inputs, in_group, model.online_state_.scales, unit[rows])
    model.online_state_.grow({k: v[rows] for k, v in inputs.items()})
    given = {num_clusters: str(new_name)} if new_name else None
    _rename_clusters(model, [[k] for k in range(num_clusters)] + [[]], given=given)
    return num_clusters


@torch.no_grad()
def _move_calibration_centres(model, unit: torch.Tensor, labels: torch.Tensor) -> None:
    """The calibrated centres follow the clusters by the same running mean (of unit embeddings; sizes grow)."""
    cal = model.calibration
    counts = cal.cluster_sizes.double().cpu()
    batch = torch.bincount(labels, minlength=counts.shape[0]).double()
    sums = torch.zeros_like(cal.centres, dtype=torch.float64, device="cpu").index_add_(0, labels, unit.double())
    old = cal.centres.double().cpu()
    centres = torch.nn.functional.normalize(old * counts[:, None] + sums, dim=-1)
    cal.centres.copy_(torch.where((batch == 0)[:, None], old, centres))  # a cluster with no new text keeps its centre
    cal.cluster_sizes.copy_(counts + batch)


def least_typical(
    model,
    texts: Sequence[str],
    fraction: float = 0.05,
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    precision: str | torch.dtype | None = "auto",
) -> dict[str, np.ndarray]:
    """Every text with its cluster, and the ``fraction`` least typical texts of each cluster flagged (no text is
    left without a cluster): those farthest from their cluster's calibrated centre.

    Returns arrays of length N: ``cluster``; ``distance`` (cosine distance to the cluster's calibrated centre);
    ``typicality`` (the share of the cluster's calibration texts at least as far, in [0, 1]: 1 at the centre);
    ``least_typical`` (the ``ceil(fraction * n)`` farthest of each cluster's ``n`` texts here).

    Args:
        model: a trained, calibrated clusterer.
        texts: the texts.
        fraction: the share of each cluster's texts to flag, in (0, 1).
        batch_size: texts per encoder call.
        precision: as for ``embed``.

    Raises:
        ValueError: the model is not calibrated, or ``fraction`` is not in (0, 1).

    Example:
        >>> flagged = least_typical(model, texts, fraction=0.05)["least_typical"]        # doctest: +SKIP
        >>> merged.predict([t for t, f in zip(texts, flagged) if f])                     # doctest: +SKIP
    """
    model._require_calibration("`least_typical`")
    hint = "a share, e.g. 0.05 for the 5% least typical"
    check_scalar(fraction, "fraction", (int, float), min_val=0, max_val=1, include_boundaries="neither", hint=hint)
    model._check_clusters_initialized()
    texts, precision = model._serving_arguments(texts, batch_size, precision)
    outputs = model._encode_texts(texts, batch_size, None, precision, ("cluster_probs", "distance"))
    clusters, distance = outputs.cluster_probs.argmax(dim=-1), outputs.distance.float()
    quantiles = model.calibration.distance_quantiles.float().cpu()
    clusters_np, distance_np = clusters.numpy(), distance.numpy()
    typicality, flagged = np.zeros(len(texts), dtype=np.float32), np.zeros(len(texts), dtype=bool)
    for k in np.unique(clusters_np):
        rows = np.flatnonzero(clusters_np == k)
        typicality[rows] = 1 - quantile_rank(distance[rows], quantiles[int(k)]).numpy()
        flagged[rows[np.argsort(-distance_np[rows], kind="stable")[: math.ceil(fraction * rows.size)]]] = True
    return {"cluster": clusters_np, "distance": distance_np, "typicality": typicality, "least_typical": flagged}


def reduce_outliers(model, texts: Sequence[str], batch_size: int = DEFAULT_ENCODE_BATCH_SIZE) -> tuple[np.ndarray, int]:
    """Stop flagging outliers (``config.flag_outliers`` back to False, in place), so that every text that was -1 is
    in its nearest cluster (BERTopic's ``reduce_outliers``), and summarise the clusters again on ``texts`` (the
    training texts; ``config.cluster_summary``, names kept). Returns ``texts``' clusters now (one encoding pass) and
    how many of them were outliers.

    Raises:
        ValueError: the model flags no outliers (trained without ``outliers``, or reduced already).
    """
    if not model.flags_outliers:
        raise ValueError(
            "This model flags no outliers (trained without --outliers / outliers=True, or reduced already): "
            "no text is -1, there is nothing to reduce."
        )
    model.config.flag_outliers = False
    assigned = assign_texts(model, texts, batch_size=batch_size)
    setattr(model.config, SUMMARY_KEY, summarize_model(model, list(texts), assigned))
    return assigned.clusters, int(outlier_rows(model, assigned).sum())
