"""Training runs: a clusterer trained end to end: recipe -> data with augmented views -> model -> Trainer -> saved
model + metrics.

Used by ``hf-textcluster train``, ``make demo`` and the benchmark (``python -m training.bench``). The data step
(the views, the held-out split) is here; the other steps of :func:`train_clusterer` have their own modules:
:mod:`~hf_textcluster.runs.cluster_count` (K, chosen without labels with ``num_clusters="auto"``),
:mod:`~hf_textcluster.runs.trainer_setup` (configuration, schedule, arguments, the Trainer) and
:mod:`~hf_textcluster.runs.after_training` (serve, calibrate, check, name the clusters, save the run folder).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import datasets
from transformers import set_seed
from transformers.utils import logging

from ..choosing.auto_k import ClusterCountRequest
from ..data import (
    AUGMENTATION_FAMILIES,
    AUGMENTERS,
    add_augmented_views,
    load_benchmark,
    views_augmentation,
)
from ..modeling.validation import Interval, validate_parameters
from ..models import get_method
from ..representation import ClusterNames
from ..training.checkpoints import last_complete_checkpoint
from .after_training import name_trained_clusters, save_run, train_and_finish
from .cluster_count import check_cluster_count, settle_auto_k
from .folder import RunFolder
from .recipes import load_recipe
from .schedule import Schedule
from .trainer_setup import build_trainer, set_up_training

logger = logging.get_logger(__name__)

AUGMENTATIONS = tuple(AUGMENTATION_FAMILIES) + tuple(AUGMENTERS)


def prepare_dataset(
    dataset: str | datasets.Dataset,
    augmentation: str | None,
    data_dir: str | None = None,
    seed: int = 0,
) -> datasets.Dataset:
    """A benchmark name or a Dataset with a ``text`` column -> a Dataset with ``text_aug1``/``text_aug2`` as asked:
    a precomputed family (joined from files) or an on-the-fly augmenter (computed with ``map``, cached)."""
    if augmentation is not None and augmentation not in AUGMENTATIONS:
        raise ValueError(f"Unknown augmentation {augmentation!r}; choose one of {', '.join(AUGMENTATIONS)}.")
    if isinstance(dataset, str):
        family = augmentation if augmentation in AUGMENTATION_FAMILIES else None
        dataset = load_benchmark(dataset, data_dir=data_dir, augmentation=family)
    elif augmentation in AUGMENTATION_FAMILIES:
        raise ValueError(f"Precomputed augmentation {augmentation!r} only exists for the benchmark corpora.")
    if augmentation in AUGMENTERS:
        dataset = add_augmented_views(dataset, augmentation, seed=seed)
    return dataset


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
    import math

    held_out = test_size if isinstance(test_size, int) else math.ceil(test_size * n)
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
    """What :func:`train_clusterer` returns.

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


def train_clusterer(
    method: str,
    dataset: str | datasets.Dataset,
    output_dir: str,
    *,
    encoder: str | None = None,
    recipe: str = "cpu",
    augmentation: str | None = "recipe",
    num_clusters: int | str | ClusterCountRequest | None = None,
    k_range: tuple[int | None, int | None] | None = None,
    k_criterion: str | None = None,
    data_dir: str | None = None,
    seed: int = 0,
    config_overrides: dict | None = None,
    training_overrides: dict | None = None,
    resume: bool = True,
    evaluate: bool = True,
    save: bool = True,
    test_size: int | float | None = None,
    split_seed: int = 0,
    input_file: dict | None = None,
    overwrite: bool = False,
    keep_checkpoints: bool = False,
    verbose: bool = True,
    name_clusters: bool = True,
) -> TrainingResult:
    """Train ``method`` on a benchmark (by name) or a Dataset, save it to ``output_dir`` and evaluate it.

    How long it trains follows the recipe's schedule (:mod:`~hf_textcluster.runs.schedule`): the ``cpu`` recipes
    train 10 epochs of the training texts within 30 to 300 steps, the ``paper`` recipes their own numbers, and a
    ``max_steps`` (or ``num_train_epochs``) in ``training_overrides`` wins. Checkpoints go to ``output_dir`` as the
    Trainer writes them; with ``resume`` an interrupted run continues from the last one, and a run that ends well
    removes them unless ``keep_checkpoints``. The run is recorded in ``<output_dir>/training_run.json`` (method,
    data, recipe, overrides, precision, metrics, schedule), which ``hf-textcluster card`` / ``push`` read.

    Args:
        method: a registered method name (``"sccl"``, ``"decmlm"``, ``"deccrl"``, ``"aecl"``, ``"clusterbert"``), or
            ``"auto"``: several training signals, every read-out of each and their consensus, one served by a
            label-free choice (:func:`~hf_textcluster.runs.auto.train_auto`, which returns an
            ``AutoTrainingResult``).
        dataset: a benchmark name (see :data:`~hf_textcluster.data.BENCHMARKS`) or a ``datasets.Dataset`` with a
            ``text`` column (and ``text_aug1`` / ``text_aug2`` for methods that train on augmented views; an
            optional ``label`` column is only scored against).
        output_dir: where checkpoints, the model and ``training_run.json`` go.
        encoder: a hub id or local path; ``None`` is the pip-shipped all-MiniLM-L6-v2.
        recipe: the recipe variant in the method's ``recipes.json``: ``"cpu"`` (default) or ``"paper"``.
        augmentation: ``"recipe"`` (the recipe's precomputed views for a benchmark), an augmenter name, or ``None``.
        num_clusters: K; defaults to the number of classes of a labelled dataset. ``"auto"`` chooses K from the
            training texts' embeddings (one encoding pass, reused for the k-means initialisation) with
            :func:`~hf_textcluster.choosing.auto_k.estimate_num_clusters`; a resumed run keeps the K it chose. A
            :class:`~hf_textcluster.choosing.auto_k.ClusterCountRequest` holds the whole request (then no
            ``k_range`` / ``k_criterion``).
        k_range: with ``"auto"``, ``(k_min, k_max)`` bounds the search (either may be None: 2, and
            min(200, 3 sqrt(N))).
        k_criterion: with ``"auto"``, the criterion (default
            :data:`~hf_textcluster.choosing.auto_k.DEFAULT_CRITERION`).
        data_dir: the folder of the benchmark CSVs (default ``$HF_TEXTCLUSTER_DATA_DIR``).
        seed: the training seed.
        config_overrides: model config fields over the recipe's, e.g. ``{"mlm_loss_weight": 0}``.
        training_overrides: ``ClusteringTrainingArguments`` fields over the recipe's, e.g. ``{"max_steps": 100}``.
        resume: continue from the last checkpoint in ``output_dir`` when there is one.
        overwrite: replace a trained model already in ``output_dir`` (without it, a folder holding a saved model is
            only written to when it resumes this run's own checkpoints).
        evaluate: score the trained model (labels needed).
        save: save the model into ``output_dir``.
        test_size: hold out that many texts (an int) or that share (a float), stratified by label and split by
            ``split_seed``: the model never trains on them and the evaluation is on them.
        split_seed: the seed of the held-out split.
        input_file: ``{"path": <absolute path>, "text_column": .., "label_column": ..}``, the user's file the Dataset
            was read from, recorded in ``training_run.json`` so ``card`` / ``push`` compute cluster keywords from it.
        keep_checkpoints: keep the ``checkpoint-*`` folders after a successful, saved run (by default they are
            removed then; a run that fails or is interrupted always keeps them, to resume from).
        verbose: say the schedule before training and show a progress bar with the loss terms (False: log them at
            INFO level and no bar, unless ``training_overrides`` sets ``disable_tqdm``).
        name_clusters: name the served clusters after their c-TF-IDF keywords on a sample of the training texts
            (``config.id2label``), save the clusters' summary with the model (``model.cluster_info()``) and the
            training texts' clusters beside it (``assignments.csv``). False leaves the default names
            (``cluster_<i>``) and saves neither, e.g. for a model whose served partition is chosen afterwards, as
            ``auto`` does with each signal.

    Returns:
        A :class:`TrainingResult` (model, trainer, metrics, output_dir, train_seconds, test_dataset, k_selection).

    Raises:
        ValueError: an unknown method, augmentation, config key or training argument; ``num_clusters`` missing for
            texts without labels; ``k_range`` / ``k_criterion`` without ``num_clusters="auto"``; an ``output_dir``
            holding another run's checkpoints.

    Example:
        >>> from hf_textcluster import train_clusterer
        >>> from hf_textcluster.data import add_augmented_views, load_text_file
        >>> train = add_augmented_views(load_text_file("tickets.csv"), "word_deletion")  # doctest: +SKIP
        >>> result = train_clusterer("sccl", train, "runs/tickets", num_clusters=12)       # doctest: +SKIP
    """
    arguments = dict(locals())  # the arguments as given (nothing else is defined yet)
    if method == "auto":  # several signals, their candidates, a consensus and a label-free choice (runs.auto)
        from .auto import train_auto  # the same layer; auto trains each signal through this function

        return train_auto(**{name: value for name, value in arguments.items() if name not in _NOT_FOR_AUTO})
    spec = get_method(method)
    # resuming this run's own checkpoints replaces nothing
    if save and not (resume and last_complete_checkpoint(output_dir)):
        RunFolder(output_dir).check_may_replace_model(
            overwrite=overwrite, argument="output_dir (--output-dir)", command="train"
        )
    request = ClusterCountRequest.parse(num_clusters, k_range, k_criterion)  # before any data is read
    plan = load_recipe(method, recipe, dataset if isinstance(dataset, str) else None)
    augmentation, train_dataset, test_dataset = _training_data(
        spec, plan, dataset, augmentation, data_dir, seed, test_size, split_seed
    )
    request = check_cluster_count(request, train_dataset)
    config_kwargs, schedule, args = set_up_training(
        spec, recipe, plan, len(train_dataset), output_dir, config_overrides, training_overrides, seed, verbose
    )
    identity, last_checkpoint, k_selection, embeddings = _start_run(
        method, request, encoder, config_kwargs, args, train_dataset, output_dir, resume, seed
    )
    # Built once K is known; the embeddings that chose K (if any) are the k-means initialisation's.
    model, trainer = build_trainer(
        spec, identity["num_clusters"], encoder, config_kwargs, args, train_dataset, test_dataset, embeddings
    )
    metrics, train_seconds = train_and_finish(trainer, last_checkpoint, evaluate)
    cluster_names = (  # from the served clusters the choice computed, when it did (no encoding pass then)
        name_trained_clusters(model, trainer, train_dataset, seed) if name_clusters else None
    )
    if save and trainer.is_world_process_zero():  # under several processes, the main one writes
        # what made the views trained on (an augmenter, a precomputed family), also for a Dataset given with views
        views = (views_augmentation(train_dataset) or augmentation) if spec.uses_augmented_views else None
        record = _run_record(arguments, views, k_selection, metrics, schedule)
        assignments = cluster_names.assignments.clusters if cluster_names and cluster_names.assignments else None
        save_run(output_dir, model, trainer, train_dataset, test_dataset, record, keep_checkpoints, assignments)
    return TrainingResult(
        model=model,
        trainer=trainer,
        metrics=metrics,
        output_dir=output_dir,
        train_seconds=train_seconds,
        test_dataset=test_dataset,
        k_selection=k_selection,
        cluster_names=cluster_names,
        schedule=schedule,
    )


# train_clusterer's arguments that train_auto does not take
_NOT_FOR_AUTO = ("method", "verbose")


def _training_data(
    spec, plan: dict, dataset, augmentation: str | None, data_dir, seed: int, test_size, split_seed: int
) -> tuple[str | None, datasets.Dataset, datasets.Dataset | None]:
    """(the augmentation, the training texts, the held-out texts or None): the recipe's views resolved, the
    dataset prepared (:func:`prepare_dataset`, after seeding) and ``test_size`` texts held out."""
    augmentation = _resolve_augmentation(spec, plan, dataset, augmentation)
    set_seed(seed)
    train_dataset = prepare_dataset(dataset, augmentation, data_dir=data_dir, seed=seed)
    test_dataset = None
    if test_size is not None:
        train_dataset, test_dataset = split_held_out(train_dataset, test_size, seed=split_seed)
    return augmentation, train_dataset, test_dataset


def _start_run(method, request, encoder, config_kwargs, args, train_dataset, output_dir, resume, seed):
    """(identity, the checkpoint to resume from or None, the K selection or None, the embeddings that chose K or
    None): the run's identity with its K settled (chosen now, or the one a resumed run chose), recorded in
    ``output_dir``."""
    identity = RunFolder.identity_of(method, request.num_clusters, encoder, config_kwargs, train_dataset, seed)
    last_checkpoint = last_complete_checkpoint(output_dir) if resume and os.path.isdir(output_dir) else None
    k_selection, embeddings = None, None
    if request.is_auto:
        k_selection, embeddings = settle_auto_k(
            request, output_dir, identity, last_checkpoint, encoder, config_kwargs, args, train_dataset, seed
        )
    RunFolder(output_dir).record_identity(identity, resuming=bool(last_checkpoint))
    return identity, last_checkpoint, k_selection, embeddings


def _run_record(arguments: dict, augmentation: str | None, k_selection, metrics: dict, schedule: Schedule) -> dict:
    """What ``training_run.json`` records of the call (see :func:`~hf_textcluster.runs.after_training.save_run`)."""
    dataset = arguments["dataset"]
    return {
        "method": arguments["method"],
        "dataset": dataset if isinstance(dataset, str) else None,
        "input": arguments["input_file"],
        "recipe": arguments["recipe"],
        "augmentation": augmentation,
        "seed": arguments["seed"],
        "test_size": arguments["test_size"],
        "split_seed": arguments["split_seed"],
        "k_selection": k_selection,
        "config_overrides": arguments["config_overrides"],
        "training_overrides": arguments["training_overrides"],
        "metrics": metrics,
        "schedule": schedule.to_dict(),
    }


def _resolve_augmentation(spec, plan: dict, dataset, augmentation: str | None) -> str | None:
    """``"recipe"`` -> the recipe's views (``"virtual"`` for a Dataset without them); None for methods without views."""
    uses_views = spec.uses_augmented_views
    if not uses_views and augmentation not in (None, "recipe"):
        logger.warning(f"{spec.name} trains on the texts alone; augmentation {augmentation!r} is ignored.")
        return None
    if augmentation == "recipe":
        augmentation = plan.get("augmentation") if uses_views else None
        if isinstance(dataset, datasets.Dataset) and augmentation in AUGMENTATION_FAMILIES:
            if {"text_aug1", "text_aug2"} <= set(dataset.column_names):
                return None  # the views given with the data
            # one line, so a user knows what their texts train on and how to get text views instead
            logger.warning(
                f"The recipe's {augmentation} views exist only for the benchmark corpora: {spec.display_name} trains "
                "on dropout-only views of these texts ('virtual': both views are the text itself). For text views "
                "pass --augmentation word_deletion (augmentation='word_deletion'; or word_swap, wordnet, contextual)."
            )
            augmentation = "virtual"
    return augmentation
