"""One method's training run, end to end: recipe -> data with augmented views -> model -> Trainer -> saved model +
metrics.

:func:`~hf_textcluster.runs.api.train_clusterer` runs it for one method, and ``auto`` for each of its signals. The data
step (the views, the held-out split) is here; the other steps of :func:`train_method` have their own modules:
:mod:`~hf_textcluster.runs.cluster_count` (K, chosen without labels with ``num_clusters="auto"``),
:mod:`~hf_textcluster.runs.trainer_setup` (configuration, schedule, arguments, the Trainer) and
:mod:`~hf_textcluster.runs.after_training` (serve, calibrate, check, name the clusters, save the run folder).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

import datasets
from transformers import set_seed
from transformers.utils import logging

from ..data.augmentation import AUGMENTERS, add_augmented_views
from ..data.loading import load_benchmark
from ..data.provenance import VIEW_COLUMNS, benchmark_corpus, views_augmentation
from ..modeling.validation import Interval, validate_parameters
from ..models import get_method
from ..representation import ClusterNames
from ..timing import own_phases, phase, recording_phases
from ..training.checkpoints import last_complete_checkpoint
from .after_training import name_trained_clusters, save_run, train_and_finish
from .cluster_count import check_cluster_count, settle_auto_k
from .folder import RunFolder
from .recipes import load_recipe
from .record import RunRecord
from .request import TrainingRequest
from .schedule import Schedule
from .trainer_setup import build_trainer, set_up_training

logger = logging.get_logger(__name__)


def prepare_dataset(
    dataset: str | datasets.Dataset,
    augmentation: str | None,
    data_dir: str | None = None,
    seed: int = 0,
) -> datasets.Dataset:
    """A benchmark name or a Dataset with a ``text`` column -> a Dataset with the ``text_aug1``/``text_aug2`` of the
    augmenter ``augmentation`` names (computed with ``map``, cached). Any other ``augmentation`` (None, a recipe's
    precomputed views) leaves the texts as they are: precomputed views come with the Dataset."""
    if isinstance(dataset, str):
        dataset = load_benchmark(dataset, data_dir=data_dir)
    if augmentation in AUGMENTERS:
        dataset = add_augmented_views(dataset, augmentation, seed=seed)
    return dataset


def held_out_count(test_size: int | float, num_texts: int) -> int:
    """How many of ``num_texts`` texts ``test_size`` (a count, or a fraction rounded up) holds out."""
    return test_size if isinstance(test_size, int) else math.ceil(test_size * num_texts)


def split_held_out(
    dataset: datasets.Dataset, test_size: int | float, seed: int = 0
) -> tuple[datasets.Dataset, datasets.Dataset]:
    """(train, test): ``test_size`` texts (a count, or a fraction in (0, 1)) held out, stratified by ``label`` when
    the dataset has class labels; the split depends on ``seed`` only, not on the training seed."""
    n = len(dataset)
    fraction_or_count = [Interval(float, 0, 1, closed="neither"), Interval(int, 1, n - 1)]
    validate_parameters({"test_size": test_size}, {"test_size": fraction_or_count})
    label = dataset.features.get("label")
    stratify = "label" if isinstance(label, datasets.ClassLabel) else None
    held_out = held_out_count(test_size, n)
    classes = label.num_classes if stratify else 1
    if min(held_out, n - held_out) < max(2, classes):  # scikit-learn's own message names none of this
        why = " (one per class, the split is stratified)" if stratify else ""
        raise ValueError(
            f"`test_size` {test_size!r} (--test-size) holds out {held_out} of {n} texts, leaving {n - held_out} to "
            f"train on; each side needs at least {max(2, classes)} texts{why}. Pass a smaller --test-size (e.g. 0.2)."
        )
    parts = dataset.train_test_split(test_size=test_size, seed=seed, stratify_by_column=stratify)
    return parts["train"], parts["test"]


@dataclass
class TrainingResult:
    """What :func:`train_method` (and :func:`~hf_textcluster.runs.api.train_clusterer` for one method) returns.

    Attributes:
        model: the trained clusterer (also saved in ``output_dir`` unless ``save=False``).
        trainer: the method's Trainer, e.g. for ``trainer.state.log_history`` or ClusterBERT's ``stage_metrics``.
        metrics: ACC / NMI / ARI of the head and of k-means on the trained embeddings (empty without labels).
        output_dir: where the model, its checkpoints and ``training_run.json`` are.
        train_seconds: wall-clock seconds of training.
        test_dataset: the held-out texts (``test_size``), never trained on.
        k_selection: with ``num_clusters="auto"``, how K was chosen.
        cluster_names: the clusters' names (saved as ``config.id2label``), keywords and sizes on the training texts.
        schedule: how many steps the run trained and why (see :mod:`~hf_textcluster.runs.schedule`).
    """

    model: object
    trainer: object
    metrics: dict
    output_dir: str
    train_seconds: float
    test_dataset: datasets.Dataset | None = None  # the held-out texts (``test_size``), never trained on
    k_selection: dict | None = None  # num_clusters="auto": how K was chosen (AutoKResult.to_dict() + the request)
    cluster_names: ClusterNames | None = None
    schedule: Schedule | None = None


def train_method(request: TrainingRequest, schedule: Mapping | None = None) -> TrainingResult:
    """Train the one method ``request`` names as it asks (see :func:`~hf_textcluster.runs.api.train_clusterer`).

    Args:
        request: the run's options, ``method`` one registered method.
        schedule: a recipe ``schedule`` block (:func:`~hf_textcluster.runs.schedule.plan_schedule`) in place of the
            recipe's, e.g. ``auto``'s for its signals.

    Returns:
        A :class:`TrainingResult`.
    """
    spec, method = get_method(request.method), request.method
    out = request.output_dir
    request.check_output_dir(resuming=bool(last_complete_checkpoint(out)))  # its own checkpoints replace nothing
    # a Dataset loaded from a benchmark (a sample of it, or with its precomputed views) gets the corpus' settings
    plan = load_recipe(method, request.recipe, request.dataset_name or benchmark_corpus(request.dataset))
    if schedule is not None:
        plan["schedule"] = dict(schedule)
    with recording_phases() as seconds:
        with phase("data"):  # the recipe's views resolved, the dataset prepared after seeding, texts held out
            augmentation = _resolve_augmentation(spec, plan, request.dataset, request.augmentation)
            set_seed(request.seed)
            train_dataset = prepare_dataset(request.dataset, augmentation, data_dir=request.data_dir, seed=request.seed)
            test_dataset = None
            if request.test_size is not None:
                train_dataset, test_dataset = split_held_out(train_dataset, request.test_size, seed=request.split_seed)
        count = check_cluster_count(request.num_clusters, train_dataset)
        request = replace(request, num_clusters=count)  # no K and no labels: "auto"
        config_kwargs, planned, args = set_up_training(spec, request, plan, len(train_dataset))
        # the run's identity with its K settled (chosen now, or the one a resumed run chose), recorded in `out`
        encoder, seed = request.encoder, request.seed
        identity = RunFolder.identity_of(method, count.num_clusters, encoder, config_kwargs, train_dataset, seed)
        last_checkpoint = last_complete_checkpoint(out) if request.resume and os.path.isdir(out) else None
        k_selection, embeddings = None, None
        if count.is_auto:
            with phase("num_clusters"):
                k_selection, embeddings = settle_auto_k(
                    request, identity, last_checkpoint, config_kwargs, args, train_dataset
                )
        RunFolder(out).record_identity(identity, resuming=bool(last_checkpoint))
        # Built once K is known; the embeddings that chose K (if any) are the k-means initialisation's.
        k = identity["num_clusters"]
        with phase("model"):
            model, trainer = build_trainer(
                spec, k, encoder, config_kwargs, args, train_dataset, test_dataset, embeddings
            )
        metrics, train_seconds = train_and_finish(trainer, last_checkpoint, request.evaluate)
        with phase("name"):  # from the served clusters the choice computed, when it did (no encoding pass then)
            cluster_names = name_trained_clusters(model, trainer, train_dataset, request)
        if request.save and trainer.is_world_process_zero():  # under several processes, the main one writes
            # what made the views trained on (an augmenter, a precomputed family), also for a Dataset given with views
            views = (views_augmentation(train_dataset) or augmentation) if spec.uses_augmented_views else None
            data = (train_dataset, test_dataset)
            run = _run_record(request, views, k_selection, metrics, planned, trainer, data)
            run.seconds = own_phases(seconds)
            assignments = cluster_names.assignments.clusters if cluster_names and cluster_names.assignments else None
            with phase("save"):
                save_run(out, model, trainer, run, request.keep_checkpoints, assignments)
    return TrainingResult(
        model=model,
        trainer=trainer,
        metrics=metrics,
        output_dir=out,
        train_seconds=train_seconds,
        test_dataset=test_dataset,
        k_selection=k_selection,
        cluster_names=cluster_names,
        schedule=planned,
    )


def _run_record(request: TrainingRequest, augmentation, k_selection, metrics, schedule, trainer, data) -> RunRecord:
    """``training_run.json``: what ``card`` / ``push`` and the benchmark read back (see
    :meth:`~hf_textcluster.runs.folder.RunFolder.read_record`); the run's ``seconds`` are added last."""
    train_dataset, test_dataset = data
    test = test_dataset is not None
    return RunRecord(
        method=request.method,
        **request.record(),
        corpus=benchmark_corpus(train_dataset),  # a Dataset loaded from a benchmark (a sample of it) names its corpus
        augmentation=augmentation,
        encoder=trainer.model.config.name_or_path,
        num_train_texts=len(train_dataset),
        num_test_texts=len(test_dataset) if test else None,
        test_size=request.test_size if test else None,
        split_seed=request.split_seed if test else None,
        precision=trainer.precision_description(),
        k_selection=k_selection,
        serving=trainer.serving_choice or None,
        schedule=schedule,
        config_overrides=dict(request.config_overrides or {}),
        metrics=metrics,
    )


def _resolve_augmentation(spec, plan: dict, dataset, augmentation: str | None) -> str | None:
    """``"recipe"`` -> the recipe's views: its augmenter, or, when it names precomputed views, None for a Dataset that
    has them and ``"virtual"`` otherwise; None for methods without views."""
    uses_views = spec.uses_augmented_views
    if not uses_views and augmentation not in (None, "recipe"):
        logger.warning(f"{spec.name} trains on the texts alone; augmentation {augmentation!r} is ignored.")
        return None
    if augmentation == "recipe":
        augmentation = plan.get("augmentation") if uses_views else None
        if augmentation is not None and augmentation not in AUGMENTERS:
            if isinstance(dataset, datasets.Dataset) and set(VIEW_COLUMNS) <= set(dataset.column_names):
                return None  # the views given with the data
            # one line, so a user knows what their texts train on and how to get text views instead
            logger.warning(
                f"The recipe's {augmentation} views are precomputed files that come as text_aug1 / text_aug2 columns "
                f"of a Dataset: {spec.display_name} trains on dropout-only views of these texts ('virtual': both "
                "views are the text itself). For text views pass --augmentation word_deletion "
                "(augmentation='word_deletion'; or word_swap, wordnet, contextual)."
            )
            augmentation = "virtual"
    return augmentation
