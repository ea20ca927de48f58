"""What a trained clusterer serves: its candidate partitions, refined or not, and a label-free choice among them.

A trained model holds several partitions of its training texts: its own cluster head (the paper's output), k-means
on its trained embeddings ("k-means after") and the BERTopic way on them (UMAP -> k-means, "UMAP k-means after").
Each can be refined by iterative classification (:mod:`~hf_textcluster.choosing.refinement`). Which one is best
differs from corpus to corpus, and only labels tell for sure; :func:`serve_partition` ranks the candidates with an
internal criterion (:mod:`~hf_textcluster.choosing.candidate_choice`, no labels) and makes the model serve the winner:

- ``"head"``: the method's own head (a refined head served in front of it is dropped; the head's weights were kept);
- ``"kmeans"``: the centres (means of each cluster's ``kmeans_features``) replace the head, as ``hf-textcluster
  recluster`` does;
- ``"umap_kmeans"``: a linear ``refined_head`` fitted on its clusters (a logistic regression, no refinement rounds:
  :func:`~hf_textcluster.choosing.linear_heads.distil_partition`) replaces the head, and its argmax on the texts is the
  candidate: the clusters were found in the UMAP space, where the nearest of their centres in the embedding space
  keeps them less well;
- ``"<candidate>+refined"``: a linear ``refined_head`` on the L2-normalised ``kmeans_features`` replaces the head
  (:func:`hf_textcluster.editing.clusters.set_refined_head`).

Every candidate is scored as the model would serve it, so the choice ranks what a user gets. The choice, each
candidate's criterion value and what refinement did are returned as a :class:`ServingChoice` (``to_dict`` is what
``training_run.json`` and the model card record).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from transformers.utils import logging

from ..editing.clusters import init_clusters_from_kmeans, keep_method_head, restore_method_head, set_refined_head
from ..editing.kmeans import UMAP_MIN_ROWS, NearestCentres, fit_kmeans

# The names of the partitions a model can serve live with the model (its config's `served_partition`), so that the
# training arguments check `serve` without importing this layer.
from ..modeling.input_checks import BASE_CANDIDATES, CANDIDATES, REFINED_SUFFIX, check_serve
from ..modeling.modeling_utils import TextClusteringPreTrainedModel
from ..training.distributed import share_from_main
from .candidate_choice import DEFAULT_SERVE_CRITERION, choose_partition
from .linear_heads import RefinementResult, distil_partition
from .refinement import refine_partition

logger = logging.get_logger(__name__)


@dataclass
class ServingChoice:
    """The partition a model serves and why.

    Attributes:
        served: the candidate the model now serves (one of :data:`CANDIDATES`).
        criterion: the label-free criterion the candidates were ranked by (None when ``served`` was asked for).
        scores: each candidate's criterion value (higher is better).
        labels: the served partition of the texts it was chosen on.
        refinement: per refined candidate, what refinement did (rounds, fraction changed, declined and why).
        candidates: every candidate's partition of those texts (for benchmarks; not recorded).
        serving: what serving ``served`` took (see :func:`apply_partition`), to apply it to another copy.
    """

    served: str
    criterion: str | None
    scores: dict[str, float]
    labels: np.ndarray
    refinement: dict[str, dict] = field(default_factory=dict)
    candidates: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    serving: object = field(default=None, repr=False)

    def to_dict(self) -> dict:
        """What ``training_run.json`` and the model card record (no per-text arrays)."""
        return {
            "served": self.served,
            "criterion": self.criterion,
            "scores": {name: round(float(value), 6) for name, value in self.scores.items()},
            "refinement": self.refinement,
        }


def _on_model(model: TextClusteringPreTrainedModel, embeddings: np.ndarray, step) -> np.ndarray:
    with torch.no_grad():
        return step(torch.from_numpy(np.asarray(embeddings, dtype=np.float32)).to(model.device)).cpu().numpy()


def partition_features(model: TextClusteringPreTrainedModel, embeddings: np.ndarray) -> np.ndarray:
    """The space the candidates are made, ranked and served in: ``model.kmeans_features`` of pooled ``embeddings``
    (N x d float32)."""
    return _on_model(model, embeddings, lambda x: model.kmeans_features(x).float())


def candidate_partitions(
    model: TextClusteringPreTrainedModel,
    embeddings: np.ndarray,
    *,
    candidates: Sequence[str] = CANDIDATES,
    random_state: int = 0,
    features: np.ndarray | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """Each candidate partition of the texts whose pooled ``embeddings`` are given, as the model would serve it.

    Args:
        model: a trained clusterer (its clusters initialised).
        embeddings: ``model.embed(texts)`` of the texts to partition (N x hidden).
        candidates: which of :data:`CANDIDATES` to compute (a refined one brings its base along).
        random_state: seed of k-means, UMAP and refinement.
        features: :func:`partition_features` of ``embeddings`` when already computed.

    Returns:
        ``(partitions, how)``: candidate name -> served labels (N,), and candidate name -> what serving it needs
        (``None`` for the head, the centres for ``kmeans``, a :class:`RefinementResult` for ``umap_kmeans`` (its head
        distilled, no rounds) and for the refined ones).

    Raises:
        ValueError: an unknown candidate name.

    Example:
        >>> embeddings = model.embed(texts)  # doctest: +SKIP
        >>> partitions, _ = candidate_partitions(model, embeddings, candidates=("head", "kmeans"))  # doctest: +SKIP
    """
    for name in candidates:
        check_serve(name, "candidates")
    if features is None:
        features = partition_features(model, embeddings)
    wanted_bases = [b for b in BASE_CANDIDATES if b in candidates or f"{b}{REFINED_SUFFIX}" in candidates]
    num_clusters = model.config.num_clusters
    partitions: dict[str, np.ndarray] = {}
    how: dict[str, object] = {}
    for base in wanted_bases:
        if base == "head":
            # the method's own head, whatever the model serves now (a refined head in front is not the head)
            labels, serving = _on_model(model, embeddings, lambda x: model.head_probabilities(x).argmax(dim=-1)), None
            raw = labels
        else:
            init = "umap" if base == "umap_kmeans" else "k-means++"
            if init == "umap" and features.shape[0] < UMAP_MIN_ROWS:
                logger.warning(
                    f"No UMAP k-means candidate: UMAP needs more than {UMAP_MIN_ROWS - 1} texts, "
                    f"got {features.shape[0]}."
                )
                continue
            fitted = fit_kmeans(features, num_clusters, random_state=random_state, init=init)
            labels = raw = np.asarray(fitted.labels_)
            if init == "umap":
                # UMAP's own clusters, not `labels_` (the nearest of their means in the embedding space, which moves
                # some texts); past max_samples UMAP saw a sample only, and the nearest means stand in for the rest
                groups = np.asarray(fitted.groups_)
                raw = groups if groups.shape[0] == features.shape[0] else labels
                if np.unique(raw).size < 2:  # identical features: one cluster, nothing to fit a head to
                    continue
                # Its clusters were found in the UMAP space: a linear head fitted on them keeps them better than the
                # nearest of their centres in the embedding space.
                serving = distil_partition(features, raw, num_clusters=num_clusters, random_state=random_state)
                labels = serving.labels  # the head's argmax on these features: what serving them gives
            elif np.bincount(labels, minlength=num_clusters).min() == 0:  # an empty cluster has no centre to serve
                continue
            else:  # the means of its clusters, served as the nearest of them
                nearest = NearestCentres.of_groups(features, labels)
                serving, labels = nearest.cluster_centers_, np.asarray(nearest.labels_)
        if base in candidates:
            partitions[base], how[base] = labels, serving
        refined_name = f"{base}{REFINED_SUFFIX}"
        if refined_name in candidates and np.unique(raw).size > 1:  # a collapsed head (one cluster) is not refined
            # refined from the partition itself (UMAP's own clusters, not their served approximation)
            result = refine_partition(features, raw, num_clusters=num_clusters, random_state=random_state)
            partitions[refined_name], how[refined_name] = result.predict(features), result
    return partitions, how


def refinement_records(how: dict[str, object]) -> dict[str, dict]:
    """What refinement did for each refined candidate of ``how`` (see :func:`candidate_partitions`): rounds, share of
    texts moved, whether it declined and why. (``umap_kmeans``' distilled head is not a refinement.)"""
    return {
        name: {
            "rounds": int(result.rounds),
            "changed": round(float(result.changed), 4),
            "declined": bool(result.declined),
            "reason": result.reason,
        }
        for name, result in how.items()
        if name.endswith(REFINED_SUFFIX) and isinstance(result, RefinementResult)
    }


def apply_partition(model: TextClusteringPreTrainedModel, name: str, serving: object) -> None:
    """Make ``model`` serve candidate ``name`` (see :func:`candidate_partitions` for ``serving``): what it records in
    ``config.served_partition`` is what it then serves. The trained head survives every switch: a refined head is
    served in front of it, and centres that replace it keep it aside (:func:`keep_method_head`), so ``head`` serves it
    again."""
    if name == "head":
        restore_method_head(model)
        model.config.served_partition = "head"
        return
    if isinstance(serving, RefinementResult):
        set_refined_head(model, serving.coef, serving.intercept, served_partition=name)
        return
    keep_method_head(model)
    init_clusters_from_kmeans(model, serving)
    model.config.served_partition = name


def serve_partition(
    model: TextClusteringPreTrainedModel,
    embeddings: np.ndarray,
    *,
    serve: str = "auto",
    candidates: Sequence[str] = CANDIDATES,
    criterion: str = DEFAULT_SERVE_CRITERION,
    random_state: int = 0,
) -> ServingChoice:
    """Choose (without labels) or take the partition ``model`` serves, and make it serve it.

    Args:
        model: a trained clusterer; changed in place (calibrate it again afterwards, as ``train`` does).
        embeddings: ``model.embed(texts)`` of its training texts (or a sample of them).
        serve: ``"auto"`` (the label-free choice among ``candidates``) or one candidate name (e.g. ``"head"``,
            the paper's output).
        candidates: what ``"auto"`` chooses among (default: all of :data:`CANDIDATES`).
        criterion: the internal criterion of :func:`~hf_textcluster.choosing.candidate_choice.choose_partition`.
        random_state: seed of k-means, UMAP, refinement and the criterion.

    Returns:
        The :class:`ServingChoice`.

    Raises:
        ValueError: ``serve`` or a candidate is not a known partition, or the model's clusters are not initialised.

    Example:
        >>> choice = serve_partition(model, model.embed(texts))   # doctest: +SKIP
        >>> choice.served, model.config.served_partition            # doctest: +SKIP
        ('umap_kmeans+refined', 'umap_kmeans+refined')
    """
    check_serve(serve)
    model._check_clusters_initialized()
    if getattr(model, "method_head_", None) is not None:  # serving centres: the head candidates are the trained head's
        restore_method_head(model)
    wanted = tuple(candidates) if serve == "auto" else (serve,)
    features = partition_features(model, embeddings)  # once: the candidates and the criterion both work on them
    partitions, how = candidate_partitions(
        model, embeddings, candidates=wanted, random_state=random_state, features=features
    )
    if serve == "auto":
        served, scores = choose_partition(features, partitions, criterion=criterion, random_state=random_state)
    elif serve in partitions:
        served, scores = serve, {}
    else:
        raise ValueError(
            f"`serve`={serve!r} cannot be served here: its partition has an empty cluster or only "
            "one cluster; pass serve='auto' or another candidate."
        )
    apply_partition(model, served, how[served])
    return ServingChoice(
        served=served,
        criterion=criterion if serve == "auto" else None,
        scores=scores,
        labels=partitions[served],
        refinement=refinement_records(how),
        candidates=partitions,
        serving=how[served],
    )


def serve_chosen_partition(trainer) -> dict | None:
    """Make a trainer's model serve the partition its ``args.serve`` asks for (by default the label-free choice among
    its candidate partitions), chosen once on the main process from the training texts' embeddings (each process
    encodes its share). The step after ``trainer.train()`` in :func:`~hf_textcluster.runs.api.train_clusterer`;
    recorded in ``trainer.serving_choice`` (``training_run.json``), and the training texts' served clusters in
    ``trainer.served_labels`` (main process only).

    Args:
        trainer: a :class:`~hf_textcluster.training.trainer.ClusteringTrainer` that has trained.

    Returns:
        The choice's record (``ServingChoice.to_dict()`` plus ``seconds``), or None when nothing is chosen
        (``serve="head"``, no training texts, or no clusters yet).

    Example:
        >>> trainer.train()  # doctest: +SKIP
        >>> serve_chosen_partition(trainer)["served"]  # doctest: +SKIP
        'kmeans+refined'
    """
    serve, model = trainer.args.serve, trainer.model
    trainer.served_labels = None  # none chosen yet: never an earlier choice's
    if serve == "head" or trainer.train_dataset is None or not model.config.centroids_initialized:
        return None
    start = time.perf_counter()
    embeddings = trainer.embed_train_texts()  # every process encodes its share; the choice is made once

    def choose():
        choice = serve_partition(model, embeddings, serve=serve, random_state=trainer.args.seed)
        trainer.served_labels = choice.labels  # on the main process (naming reads them)
        return choice.to_dict(), choice.serving

    record, serving = share_from_main(trainer, choose)
    if not trainer.accelerator.is_main_process:
        apply_partition(model, record["served"], serving)
    trainer.serving_choice = {**record, "seconds": round(time.perf_counter() - start, 2)}
    logger.info(
        f"Serving the {record['served']} partition (criterion {record['criterion']}: "
        f"{record['scores']}), chosen in {trainer.serving_choice['seconds']:.1f}s."
    )
    return trainer.serving_choice
