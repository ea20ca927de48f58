"""``train_clusterer``: a training run of one method, or ``auto`` (several signals and a label-free choice)."""

from __future__ import annotations

from collections.abc import Sequence

import datasets

from ..choosing.auto_k import ClusterCountRequest
from .auto import AutoTrainingResult, train_auto
from .request import TrainingRequest
from .signals import DEFAULT_SIGNALS
from .train import TrainingResult, train_method


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
    keep_signals: bool = False,
    time_budget: float | None = None,
    signals: Sequence[str] | None = None,
) -> TrainingResult | AutoTrainingResult:
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
            (``config.id2label``), save the clusters' summary with the model (``Clusterer.cluster_info()``) and the
            training texts' clusters beside it (``assignments.csv``). False leaves the default names
            (``cluster_<i>``) and saves neither, e.g. for a model whose served partition is chosen afterwards, as
            ``auto`` does with each signal.
        keep_signals: with ``"auto"``, keep each trained signal's model (``signals/<name>``, an encoder each) after a
            successful run; by default only the served model and every candidate's partition are kept (switching to
            another candidate fits a head for it on the served model's embeddings).
        time_budget: with ``"auto"``, stop training after this many seconds (a checkpoint saved, as after Ctrl-C):
            the model saved first stays, and running the same call again resumes training.
        signals: with ``"auto"``, what it trains (:func:`~hf_textcluster.runs.auto.train_auto`); None: the objectives
            on the pretrained encoder's cached embeddings (:data:`~hf_textcluster.runs.signals.DEFAULT_SIGNALS`).

    Returns:
        A :class:`~hf_textcluster.runs.train.TrainingResult` (model, trainer, metrics, output_dir, train_seconds,
        test_dataset, k_selection); for ``"auto"`` an :class:`~hf_textcluster.runs.auto.AutoTrainingResult`.

    Raises:
        ValueError: an unknown method, augmentation, config key or training argument; ``num_clusters`` missing for
            texts without labels; ``k_range`` / ``k_criterion`` without ``num_clusters="auto"``; an ``output_dir``
            holding another run's checkpoints; ``config_overrides`` with ``"auto"``.

    Example:
        >>> from hf_textcluster import train_clusterer
        >>> from hf_textcluster.data import add_augmented_views, load_text_file
        >>> train = add_augmented_views(load_text_file("tickets.csv"), "word_deletion")  # doctest: +SKIP
        >>> result = train_clusterer("sccl", train, "runs/tickets", num_clusters=12)       # doctest: +SKIP
    """
    request = TrainingRequest(
        dataset,
        output_dir,
        encoder=encoder,
        recipe=recipe,
        augmentation=augmentation,
        num_clusters=ClusterCountRequest.parse(num_clusters, k_range, k_criterion),  # before any data is read
        data_dir=data_dir,
        seed=seed,
        training_overrides=training_overrides,
        resume=resume,
        evaluate=evaluate,
        save=save,
        test_size=test_size,
        split_seed=split_seed,
        input_file=input_file,
        overwrite=overwrite,
        keep_checkpoints=keep_checkpoints,
        name_clusters=name_clusters,
        keep_signals=keep_signals,
        time_budget=time_budget,
    )
    if method != "auto":
        if keep_signals or time_budget is not None or signals is not None:
            raise ValueError(
                "`keep_signals` (--keep-signals), `time_budget` (--time-budget) and `signals` (--signals) apply to "
                f"the default method, auto; drop them to train {method} alone."
            )
        return train_method(request, method, config_overrides, verbose)
    if config_overrides:
        raise ValueError(
            "`config_overrides` (--config) configures one method; `auto` trains several with their own. Train one "
            "method (--method sccl, ...) to override its configuration."
        )
    return train_auto(request, signals=DEFAULT_SIGNALS if signals is None else signals)
