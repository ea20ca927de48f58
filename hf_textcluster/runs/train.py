"""Training runs: a clusterer trained end to end: recipe -> data with augmented views -> model -> Trainer -> saved
model + metrics.

Used by ``hf-textcluster train``, ``make demo`` and the benchmark (``python -m training.bench``).
"""

from __future__ import annotations

import difflib
import os
import shutil
import time
from dataclasses import dataclass, fields

import datasets
import torch
from transformers import set_seed
from transformers.utils import logging

from ..choosing.auto_k import ClusterCountRequest
from ..choosing.serving import serve_chosen_partition
from ..data import (
    AUGMENTATION_FAMILIES,
    AUGMENTERS,
    add_augmented_views,
    benchmark_corpus,
    load_benchmark,
    views_augmentation,
)
from ..modeling.modeling_utils import TextClusteringPreTrainedModel
from ..modeling.validation import check_num_clusters, check_scalar
from ..models import get_method
from ..representation import ClusterNames, name_clusters
from ..training.trainer import ClusteringTrainingArguments, last_complete_checkpoint
from .folder import (  # noqa: F401  (also importable from here, where they used to live)
    RUN_IDENTITY_FILE,
    TRAINING_RUN_FILE,
    RunFolder,
    find_training_texts,
    load_clusterer,
    read_training_run,
    record_metrics,
    run_input_file,
    training_texts_for,
)
from .recipes import load_recipe
from .schedule import Schedule, plan_schedule

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
    if isinstance(test_size, float):
        hint = f"a fraction of the texts; or a number of texts in [1, {n - 1}]"
        check_scalar(test_size, "test_size", float, min_val=0, max_val=1, include_boundaries="neither", hint=hint)
    else:
        check_scalar(
            test_size, "test_size", int, min_val=1, max_val=n - 1, hint="a number of texts; or a fraction in (0, 1)"
        )
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


def check_config_overrides(config_class, overrides: dict) -> None:
    """Unknown keys and values of the wrong kind are errors here, not a silently stored key or a failure at step 1."""
    defaults = config_class()
    for key, value in overrides.items():
        if key == "encoder" or not hasattr(defaults, key):
            known = sorted(
                k for k in defaults.to_dict() if not k.startswith("_") and k not in ("encoder", "transformers_version")
            )
            close = difflib.get_close_matches(key, known, n=1)
            raise ValueError(
                f"Unknown {config_class.__name__} key {key!r}"
                + (f"; did you mean {close[0]!r}?" if close else f". Known keys: {', '.join(known)}.")
            )
        default = getattr(defaults, key)
        numeric = isinstance(default, (int, float)) and not isinstance(default, bool)
        if numeric and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(f"Config key {key!r} takes a number (default {default!r}), got {value!r}.")
        if isinstance(default, bool) and not isinstance(value, bool):
            raise ValueError(f"Config key {key!r} takes true or false, got {value!r}.")


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


def build_training_arguments(output_dir: str, recipe_training: dict, overrides: dict | None = None, seed: int = 0):
    values = {"output_dir": output_dir, "seed": seed, "report_to": "none", "save_total_limit": 2}
    values.update(recipe_training)
    values.update(overrides or {})
    # the loss terms every ~10% of a short run (the progress bar shows them), at most every 50 steps
    values.setdefault(
        "logging_steps", min(50, max(1, values["max_steps"] // 10)) if values.get("max_steps", -1) > 0 else 50
    )
    if (
        values.get("max_steps", -1) > 0
        and "save_steps" not in values
        and values.get("save_strategy", "steps") == "steps"
    ):
        # Checkpoints every ~10% of the run, so an interrupted `train` has something to resume from.
        values["save_strategy"], values["save_steps"] = "steps", max(1, values["max_steps"] // 10)
    if not torch.cuda.is_available():
        values.setdefault("use_cpu", True)  # TrainingArguments refuses bf16 without a GPU unless told it is on CPU
    known = {f.name for f in fields(ClusteringTrainingArguments)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"Unknown training arguments {unknown}; see `hf-textcluster train --help`.")
    return ClusteringTrainingArguments(**values)


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
    if method == "auto":  # several signals, their candidates, a consensus and a label-free choice (runs.auto)
        from .auto import train_auto  # the same layer; auto trains each signal through this function

        return train_auto(
            dataset,
            output_dir,
            encoder=encoder,
            recipe=recipe,
            augmentation=augmentation,
            num_clusters=num_clusters,
            k_range=k_range,
            k_criterion=k_criterion,
            data_dir=data_dir,
            seed=seed,
            config_overrides=config_overrides,
            training_overrides=training_overrides,
            resume=resume,
            evaluate=evaluate,
            save=save,
            test_size=test_size,
            split_seed=split_seed,
            input_file=input_file,
            overwrite=overwrite,
        )
    spec = get_method(method)
    # resuming this run's own checkpoints replaces nothing
    if save and not (resume and last_complete_checkpoint(output_dir)):
        RunFolder(output_dir).check_may_replace_model(
            overwrite=overwrite, argument="output_dir (--output-dir)", command="train"
        )
    request = ClusterCountRequest.parse(num_clusters, k_range, k_criterion)  # before any data is read
    dataset_name = dataset if isinstance(dataset, str) else None
    plan = load_recipe(method, recipe, dataset_name)
    augmentation = _resolve_augmentation(spec, plan, dataset, augmentation)
    set_seed(seed)
    train_dataset = prepare_dataset(dataset, augmentation, data_dir=data_dir, seed=seed)
    test_dataset = None
    if test_size is not None:
        train_dataset, test_dataset = split_held_out(train_dataset, test_size, seed=split_seed)
    request = _check_cluster_count(request, train_dataset)
    check_config_overrides(spec.config_class, config_overrides or {})
    config_kwargs = {**plan["config"], **(config_overrides or {})}
    schedule = plan_schedule(plan, len(train_dataset), training_overrides)
    training = {**plan["training"], "max_steps": schedule.max_steps or -1}
    if not verbose:
        training["disable_tqdm"] = True
    args = build_training_arguments(output_dir, training, training_overrides, seed=seed)
    (logger.warning if verbose else logger.info)(
        f"Training {spec.display_name} with the {recipe} recipe: {schedule.describe()}."
    )
    identity = RunFolder.identity_of(method, request.num_clusters, encoder, config_kwargs, train_dataset)
    last_checkpoint = last_complete_checkpoint(output_dir) if resume and os.path.isdir(output_dir) else None
    k_selection, embeddings = None, None
    if request.is_auto:
        k_selection, embeddings = _settle_auto_k(
            request, output_dir, identity, last_checkpoint, encoder, config_kwargs, args, train_dataset, seed
        )
    RunFolder(output_dir).record_identity(identity, resuming=bool(last_checkpoint))
    # Built once K is known; the embeddings that chose K (if any) are the k-means initialisation's.
    model = spec.model_class.from_encoder_pretrained(encoder, num_clusters=identity["num_clusters"], **config_kwargs)
    trainer = spec.trainer_class(
        model=model,
        args=args,
        train_dataset=train_dataset,
        init_embeddings=embeddings,
        eval_dataset=test_dataset if test_dataset is not None else train_dataset,
    )
    metrics, train_seconds = _train(trainer, last_checkpoint, evaluate)
    cluster_names = None
    if model.config.centroids_initialized and trainer.is_world_process_zero():
        # named once, on the training texts, after the served partition was chosen: predict, the pipeline, the
        # report and the card then answer names (a seeded sample of at most 10,000 texts)
        cluster_names = name_clusters(
            model,
            train_dataset["text"],
            random_state=seed,
            batch_size=trainer.encode_batch_size,
            precision=trainer.precision,
        )
    if save and trainer.is_world_process_zero():  # under several processes, the main one writes
        model.save_pretrained(output_dir)
        record = {
            "method": method,
            "dataset": dataset_name,
            "input": input_file,
            "recipe": recipe,
            # what made the views trained on (an augmenter, a precomputed family), also for a Dataset given with views
            "augmentation": (views_augmentation(train_dataset) or augmentation) if spec.uses_augmented_views else None,
            "seed": seed,
            "test_size": test_size,
            "split_seed": split_seed,
            "k_selection": k_selection,
            "config_overrides": config_overrides,
            "training_overrides": training_overrides,
            "metrics": metrics,
            "schedule": schedule.to_dict(),
        }
        _write_training_run(output_dir, model, trainer, train_dataset, test_dataset, record)
        # the log history (losses, health checks) stays beside the model for `plot`, whatever happens to checkpoints
        trainer.state.save_to_json(os.path.join(output_dir, "trainer_state.json"))
        if not keep_checkpoints:  # the model is saved: checkpoints only served to resume this run
            remove_checkpoints(output_dir)
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


def remove_checkpoints(output_dir: str) -> list[str]:
    """Delete the Trainer's ``checkpoint-<step>`` folders in ``output_dir`` (the saved model beside them stays);
    returns the removed folders. Called only after a run saved its model."""
    removed = []
    for name in sorted(os.listdir(output_dir)):
        path = os.path.join(output_dir, name)
        if name.startswith("checkpoint-") and name[len("checkpoint-") :].isdigit() and os.path.isdir(path):
            shutil.rmtree(path)
            removed.append(path)
    return removed


def _write_training_run(output_dir: str, model, trainer, train_dataset, test_dataset, record: dict) -> None:
    """``training_run.json``: what ``card`` / ``push`` and the benchmark read back (see :func:`read_training_run`)."""
    input_file = record["input"] if not record["dataset"] else None
    run_info = {
        "method": record["method"],
        "dataset": record["dataset"],
        **({"input": dict(input_file)} if input_file else {}),
        # a Dataset loaded from a benchmark (a sample of it, e.g. the demo's) names its corpus
        **({"corpus": benchmark_corpus(train_dataset)} if benchmark_corpus(train_dataset) else {}),
        "recipe": record["recipe"],
        "augmentation": record["augmentation"],
        "encoder": model.config.name_or_path,
        "seed": record["seed"],
        "num_train_texts": len(train_dataset),
        **(
            {"num_test_texts": len(test_dataset), "test_size": record["test_size"], "split_seed": record["split_seed"]}
            if test_dataset is not None
            else {}
        ),
        "precision": trainer.precision_description(),
        **({"k_selection": record["k_selection"]} if record["k_selection"] is not None else {}),
        **({"serving": trainer.serving_choice} if trainer.serving_choice else {}),
        "schedule": record["schedule"],
        "config_overrides": record["config_overrides"] or {},
        "training_overrides": record["training_overrides"] or {},
        "metrics": record["metrics"],
    }
    RunFolder(output_dir).write_training_run(run_info)


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


def _check_cluster_count(request: ClusterCountRequest, train_dataset: datasets.Dataset) -> ClusterCountRequest:
    """The request checked against the training texts; K from the labels when none was given."""
    if request.is_auto:
        request.check(len(train_dataset))  # a bad range fails before the encoding pass
        return request
    num_clusters = request.num_clusters
    if num_clusters is None:
        label_feature = train_dataset.features.get("label")
        if label_feature is None:
            raise ValueError("`num_clusters` is required for a dataset without labels.")
        num_clusters = (
            label_feature.num_classes if hasattr(label_feature, "num_classes") else len(set(train_dataset["label"]))
        )
    check_num_clusters(num_clusters, len(train_dataset), texts=train_dataset["text"])
    return ClusterCountRequest(num_clusters)


def finish_training(trainer) -> None:
    """The steps after ``trainer.train()``, in the order :func:`train_clusterer` runs them: choose what the model
    serves (``args.serve``: :func:`~hf_textcluster.choosing.serving.serve_chosen_partition`), calibrate its
    confidence and outlier distances (``trainer.calibrate_model``), and check that its clusters did not collapse
    (``trainer.check_final_health``). For a user who trains with a method's Trainer directly.

    Args:
        trainer: a :class:`~hf_textcluster.training.trainer.ClusteringTrainer` that has trained.

    Example:
        >>> trainer = SCCLTrainer(model=model, args=args, train_dataset=train)  # doctest: +SKIP
        >>> trainer.train()  # doctest: +SKIP
        >>> finish_training(trainer)  # doctest: +SKIP
        >>> model.save_pretrained("runs/mine")  # doctest: +SKIP
    """
    serve_chosen_partition(trainer)
    trainer.calibrate_model()
    trainer.check_final_health()


def _train(trainer, last_checkpoint: str | None, evaluate: bool) -> tuple[dict, float]:
    """Train (resuming from ``last_checkpoint``) and finish (``finish_training``), then evaluate: (metrics, training
    seconds without calibration)."""
    if last_checkpoint:
        logger.warning(f"Resuming from {last_checkpoint}.")
    start = time.perf_counter()
    trainer.train(resume_from_checkpoint=last_checkpoint)
    finish_training(trainer)
    train_seconds = time.perf_counter() - start - trainer.calibration_seconds
    metrics = {"train_seconds": round(train_seconds, 2)}
    if trainer.calibration_seconds:
        metrics["calibration_seconds"] = round(trainer.calibration_seconds, 2)
    if evaluate:
        metrics.update(trainer.evaluate())
    return metrics, train_seconds


# ----- num_clusters="auto" -------------------------------------------------------------------------------------------
def _settle_auto_k(
    request, output_dir, identity, last_checkpoint, encoder, config_kwargs, args, train_dataset, seed
) -> tuple[dict, object]:
    """K for ``num_clusters="auto"``: the one a resumed run chose, else chosen now from the training texts'
    embeddings (returned too, for the k-means initialisation); ``identity`` records it."""
    k_selection = _saved_k_selection(output_dir, request, identity) if last_checkpoint else None
    embeddings = None
    if k_selection is not None:
        logger.warning(
            f"num_clusters='auto': resuming with K={k_selection['num_clusters']}, as chosen by "
            f"{k_selection['criterion']} when this run started."
        )
    else:
        k_selection, embeddings = _choose_num_clusters(encoder, config_kwargs, args, train_dataset, request, seed)
    identity["num_clusters"] = k_selection["num_clusters"]
    identity["k_selection"] = k_selection
    check_num_clusters(identity["num_clusters"], len(train_dataset), texts=train_dataset["text"])
    set_seed(seed)  # the model starts as it would with --num-clusters K
    return k_selection, embeddings


EMBEDDING_CONFIG_KEYS = ("pooling", "normalize_embeddings", "max_length")


def _choose_num_clusters(
    encoder, config_kwargs, args, train_dataset, request: ClusterCountRequest, seed
) -> tuple[dict, object]:
    """Embed the training texts once with the encoder, pooling and length the method's model will use (the
    encoder alone: no method heads, at the precision and batch size the trainer will use), choose K; returns the
    record and the embeddings."""
    embedding_kwargs = {k: v for k, v in config_kwargs.items() if k in EMBEDDING_CONFIG_KEYS}
    embedder = TextClusteringPreTrainedModel.from_encoder_pretrained(
        encoder, num_clusters=request.k_min, **embedding_kwargs
    ).to(args.device)
    precision = "bf16" if args.bf16 else ("fp16" if args.fp16 else "fp32")  # ClusteringTrainer.precision
    start = time.perf_counter()
    embeddings = embedder.embed(
        train_dataset["text"],
        batch_size=args.encode_batch_size,
        show_progress_bar=not args.disable_tqdm,
        precision=precision,
    )
    embed_seconds = time.perf_counter() - start
    del embedder
    result = request.choose(embeddings, random_state=seed)
    logger.warning(f"num_clusters='auto': {result}; embedding took {embed_seconds:.0f}s; no labels used.")
    for note in result.notes:
        logger.warning(f"num_clusters='auto': {note}.")
    return {**result.to_dict(), "requested_k_range": request.to_dict()["k_range"]}, embeddings


def _saved_k_selection(output_dir: str, request: ClusterCountRequest, identity: dict) -> dict | None:
    """The K an interrupted run of the same request on the same texts chose (its run_identity.json), if any."""
    saved = RunFolder(output_dir).read_identity()
    if saved is None:
        return None
    selection = saved.get("k_selection") or {}
    same = (
        saved.get("texts_sha1") == identity["texts_sha1"]
        and selection.get("criterion") == request.criterion
        and selection.get("requested_k_range") == request.to_dict()["k_range"]
    )
    return selection if same and isinstance(selection.get("num_clusters"), int) else None
