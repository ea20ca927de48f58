"""``train --method auto``: several training signals, every read-out of each, a consensus, one label-free choice.

Which objective and which read-out of it is best differs from corpus to corpus, and only labels tell for sure.
``auto`` does not guess. First it saves a complete model that serves the BERTopic way
(:mod:`~hf_textcluster.runs.first_save`), in about that way's own time; then within one budget it trains each signal
of ``signals`` (by default :data:`~hf_textcluster.runs.signals.DEFAULT_SIGNALS`) and gathers as candidates

- the partitions of the objectives trained on the pretrained encoder's cached embeddings
  (:data:`~hf_textcluster.runs.signals.CACHED_SIGNALS`, :mod:`~hf_textcluster.choosing.cached`; the default, seconds
  on a CPU): ``pretrained/scan`` (SCAN's head) and ``adapter/head``, ``adapter/kmeans``, ``adapter/umap_kmeans``;
- for each fine-tuning signal of :data:`SIGNALS` named (each trained as a normal run in ``signals/<name>``), every
  partition its trained model offers (:func:`~hf_textcluster.choosing.serving.candidate_partitions`: its head,
  k-means and UMAP k-means on its embeddings, each refined or not), named ``<signal>/<candidate>``;
- k-means and UMAP k-means on the *pretrained* encoder's embeddings (``pretrained/kmeans``,
  ``pretrained/umap_kmeans``: what a user gets in seconds without training);
- ``consensus``: the cluster ensemble of all of them (:func:`~hf_textcluster.choosing.consensus.consensus_partition`).

A label-free criterion (:data:`~hf_textcluster.choosing.candidate_choice.DEFAULT_AUTO_CRITERION`: a held-out
neighbour vote in a lexical space of the texts, which shaped no candidate, among the candidates the others support)
chooses one, guarded (the BERTopic way stays unless the pick beats it in every held-out view), and ONE model serves
it: the model saved first for the BERTopic way, the signal that made a fine-tuned candidate, the pretrained encoder
with a linear head for a cached objective's candidate (SCAN's own head, or one distilled on the pretrained
embeddings: :func:`~hf_textcluster.choosing.linear_heads.distil_partition`), or for the consensus and
``pretrained/kmeans`` the fine-tuned signal whose linear head on its embeddings reproduces that partition most
faithfully (the pretrained encoder's when none was fine-tuned). Ctrl-C or ``time_budget`` keeps the model saved
first, and the signals' checkpoints to resume from; a finished run removes ``signals/`` unless ``keep_signals``. The
result is a normal saved clusterer in ``output_dir`` (loadable with ``AutoModel``, the pipeline or remote code);
every candidate's partition of the training texts is kept beside it
(:data:`~hf_textcluster.runs.saving.CANDIDATES_FILE`, one integer per text each), with their values of the
criterion (and of its parts) in ``training_run.json``, so ``evaluate --model`` can score them and ``refine --serve
NAME`` can switch to one.

The schedule depends on the number of texts only (:data:`AUTO_SCHEDULE`); never on the corpus' name or its labels,
which are only scored against.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import datasets
import numpy as np
from transformers.utils import logging

from ..choosing.auto_k import ClusterCountRequest
from ..choosing.candidate_choice import DEFAULT_AUTO_CRITERION, GUARD_CRITERIA, candidate_criteria, choose_candidate
from ..choosing.criteria import PARTS, PRETRAINED
from ..modeling.validation import validate_parameters
from ..models import get_method
from ..representation.summary import assign_embeddings
from ..reuse import embed, reusing_results
from ..timing import phase, recording_phases
from ..training.arguments import ClusteringTrainingArguments
from ..training.callbacks import StopOnInterruptCallback
from ..training.trainer import ClusteringTrainer
from .after_training import name_trained_clusters
from .auto_record import auto_record, save_auto_run
from .estimate import RunEstimate, encoding_speed, estimate_auto
from .first_save import (
    FirstModel,
    TrainingStopped,
    calibrate_and_name,
    encoding_options,
    save_first_model,
    unfinished,
)
from .gather_candidates import CachedCandidates, cached_candidates, gather_candidates, serve_candidate
from .recipes import load_recipe
from .record import AutoRun
from .request import TrainingRequest
from .schedule import plan_schedule
from .signals import CACHED, CACHED_SIGNALS, DEFAULT_SIGNALS, SIGNALS, SIGNALS_DIR
from .train import TrainingResult, held_out_count, prepare_dataset, split_held_out, train_method
from .trainer_setup import build_training_arguments

logger = logging.get_logger(__name__)

__all__ = [
    "AUTO_SCHEDULE",
    "AutoTrainingResult",
    "SignalsChoice",
    "choose_from_signals",
    "train_auto",
]


# Each signal's schedule, a recipe ``schedule`` block (runs.schedule.plan_schedule): 8 passes over the texts within
# [100, the signal's recipe's max_steps, or 300 for a recipe that counts epochs]. A few thousand texts or more get the
# recipe's steps, a small corpus about eight passes.
AUTO_SCHEDULE = {"epochs": 8, "min_steps": 100, "cap": 300, "partial_batches": True}


@dataclass
class AutoTrainingResult(TrainingResult):
    """What :func:`train_auto` returns (the fields of :class:`~hf_textcluster.runs.train.TrainingResult`, and
    the candidates; ``schedule`` is None: each signal has its own).

    Attributes:
        model: the serving model (saved in ``output_dir``).
        trainer: the Trainer of the serving signal.
        metrics: ACC / NMI / ARI of what the model serves (empty without labels), and the training seconds.
        output_dir: where the model, ``training_run.json``,
            :data:`~hf_textcluster.runs.saving.CANDIDATES_FILE` and ``signals/`` are.
        train_seconds: wall-clock seconds of training, all signals together.
        test_dataset: the held-out texts (``test_size``), never trained on.
        k_selection: with ``num_clusters="auto"``, how K was chosen.
        candidates: candidate name -> its partition of the training texts.
        served_labels: the training texts' clusters as the saved model serves them.
        auto: what ``training_run.json`` records under ``"auto"`` (signals, candidates' criteria, the choice).
        train_dataset: the texts every signal trained on (with their labels when the dataset had them).
        cluster_names: the served clusters' names (saved as ``config.id2label``), keywords and sizes on the
            training texts; None with ``name_clusters=False``.
    """

    candidates: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    served_labels: np.ndarray | None = field(default=None, repr=False)
    auto: AutoRun = field(default_factory=AutoRun)
    train_dataset: datasets.Dataset | None = field(default=None, repr=False)


def train_auto(request: TrainingRequest) -> AutoTrainingResult:
    """Train every signal of ``request.signals``, gather their candidates and a consensus, choose one without labels,
    save the model that serves it. ``train_clusterer("auto", ...)`` calls this.

    Args:
        request: the run's options, as for :func:`~hf_textcluster.runs.api.train_clusterer`. Every signal trains on
            the same texts (a benchmark's are read once, with the contrastive signal's augmented views); a
            fine-tuning signal as a normal run in ``signals/<name>`` (with its checkpoints: an interrupted ``auto``
            resumes them; ``recipe`` is each signal's). ``output_dir`` gets the model saved first, then the serving
            model when the choice replaces it, ``training_run.json`` and
            :data:`~hf_textcluster.runs.saving.CANDIDATES_FILE`.
            ``training_overrides`` apply to every signal: ``max_steps`` replaces :data:`AUTO_SCHEDULE`; ``serve`` is
            ``"auto"`` (the choice) or a candidate name to serve instead. ``name_clusters`` names the served
            clusters; the signals' own models are neither named nor calibrated (what they serve is chosen afterwards).
            The choice's criterion is :data:`~hf_textcluster.choosing.candidate_choice.DEFAULT_AUTO_CRITERION`: only it
            (and what it is made of) is computed and recorded with the candidates.

    Returns:
        An :class:`AutoTrainingResult`.

    Raises:
        ValueError: an unknown served candidate, or what ``train_clusterer`` raises.

    Example:
        >>> from hf_textcluster import train_clusterer
        >>> result = train_clusterer("auto", "stackoverflow", "runs/auto-so")   # doctest: +SKIP
        >>> result.auto.choice.served                                          # doctest: +SKIP
        'adapter/umap_kmeans'
    """
    signals = request.signals or DEFAULT_SIGNALS  # checked by the request
    cached, signals = tuple(s for s in signals if s in CACHED_SIGNALS), tuple(s for s in signals if s in SIGNALS)
    criterion = DEFAULT_AUTO_CRITERION
    output_dir, seed = request.output_dir, request.seed
    overrides = dict(request.training_overrides or {})
    serve = overrides.pop("serve", "auto")
    # the served model is calibrated once, after the choice: the signals' runs skip it
    calibration = overrides.pop("calibration_sample_size", ClusteringTrainingArguments.calibration_sample_size)
    validate_parameters({"calibration_sample_size": calibration}, ClusteringTrainingArguments._parameter_constraints)
    request.check_output_dir(resuming=unfinished(output_dir))
    started = time.perf_counter()
    deadline = time.monotonic() + request.time_budget if request.time_budget else None
    with recording_phases() as seconds:
        with phase("data"):
            shared = _shared_dataset(request, signals)
        # the pretrained candidates and the signals' k-means starts: one encoding pass and one k-means of those texts
        with reusing_results():
            with phase("first_save"):  # its model class: the first fine-tuning signal's, or SCCL's
                (train_texts, held_out), method = _split(request, shared), SIGNALS[(*signals, *SIGNALS)[0]].method
                first = save_first_model(request, train_texts, method, overrides, calibration, started)
            if request.save:
                logger.warning(
                    f"Saved the clusterer ({first.describe()}) to {output_dir} in {first.seconds:.0f}s; training now "
                    "for better clusters, which replace it only when a label-free check confirms them. Ctrl-C keeps it."
                )
            request = replace(request, num_clusters=ClusterCountRequest.parse(first.model.config.num_clusters))
            with phase("estimate"):
                estimate = _estimate(request, shared, signals, cached, overrides, first.model)
            on = " on the pretrained encoder's cached embeddings (the encoder is not fine-tuned)" if not signals else ""
            logger.warning(
                f"Training {' and '.join((*cached, *signals))}{on}, then choosing among their candidates: "
                f"{estimate.describe()}."
            )
            texts, encoding = list(train_texts["text"]), encoding_options(overrides)
            try:
                with StopOnInterruptCallback.stopping_at(deadline):
                    made = cached_candidates(first, texts, cached, seed, encoding, deadline) if cached else None
                    results = _train_signals(request, shared, signals, overrides)
            except KeyboardInterrupt as err:
                raise TrainingStopped.after(first, request, deadline, err) from None
            start = time.perf_counter()
            chosen = choose_from_signals(
                results, request.encoder, texts, seed=seed, criterion=criterion, serve=serve, first=first, cached=made
            )
            # the serving model's embeddings of the texts were computed for its candidates: reused, not encoded again
            if chosen.serving_signal in results:
                with phase("calibrate"):
                    _calibrate(results[chosen.serving_signal], texts, seed, calibration)
            elif chosen.serving_signal == CACHED:  # the pretrained encoder serves another partition: again
                with phase("calibrate"):
                    embeddings = embed(first.model, texts, show_progress_bar=False, **encoding)
                    names = calibrate_and_name(first.model, texts, embeddings, request, calibration, encoding)
        choose_seconds = time.perf_counter() - start
        timed = {"choose": choose_seconds, "estimate": estimate.seconds}
        record = auto_record(results, chosen, criterion if serve == "auto" else None, texts, timed, made)
        train_seconds = sum(r.train_seconds for r in results.values()) + sum(made.seconds.values() if made else ())
        if chosen.serving_signal in results:
            trainer = results[chosen.serving_signal].trainer
        else:
            trainer = (
                results[signals[0]].trainer
                if signals
                else _pretrained_trainer(request, first, train_texts, held_out, overrides)
            )
        if chosen.serving_signal == PRETRAINED:  # the first saved model stays: calibrated and named already
            model, cluster_names = first.model, first.cluster_names
        elif chosen.serving_signal == CACHED:  # the first saved model, serving a cached objective's candidate
            model, cluster_names = first.model, names
        else:
            model = results[chosen.serving_signal].model
            with phase("name"):
                cluster_names = name_trained_clusters(model, trainer, trainer.train_dataset, request)
        metrics = {"train_seconds": round(train_seconds, 2), "choose_seconds": round(choose_seconds, 2)}
        if request.evaluate:
            with phase("evaluate"):
                metrics.update(_evaluate(trainer, model))
        if request.save:
            named = cluster_names.assignments if cluster_names is not None else None
            assignments = named.clusters if named is not None else chosen.served_labels
            keep = request.keep_signals or request.keep_checkpoints  # the signals' folders, else removed
            with phase("save"):
                saved = None if chosen.serving_signal == PRETRAINED else model
                record = save_auto_run(request, saved, chosen, record, metrics, assignments, seconds, started, keep)
            if not keep:  # resuming needs them no more
                shutil.rmtree(os.path.join(output_dir, SIGNALS_DIR), ignore_errors=True)
    return AutoTrainingResult(
        model=model,
        trainer=trainer,
        metrics=metrics,
        output_dir=output_dir,
        train_seconds=train_seconds,
        test_dataset=held_out,
        k_selection=first.k_selection,
        candidates=chosen.candidates,
        served_labels=chosen.served_labels,
        auto=record,
        cluster_names=cluster_names,
        train_dataset=results[signals[0]].trainer.train_dataset if signals else train_texts,
    )


@dataclass
class SignalsChoice:
    """What :func:`choose_from_signals` found and did.

    Attributes:
        candidates: candidate name -> its partition of the texts.
        how: for a trained signal's own candidate: (signal, read-out, what serving it takes).
        features: each source's space (the signals' and the pretrained encoder's) the candidates were made in.
        criteria: criterion (and its parts) -> candidate -> value.
        served: the candidate served.
        serving_signal: the signal whose model now serves it (``"pretrained"``: the first saved model).
        served_labels: the texts' clusters as that model now serves them.
        agreement: the share of texts the serving head keeps in their cluster of ``served`` (1 for the signal's own).
        pick: the candidate the criterion ranked highest (``served`` unless the do-no-harm guard kept the
            pretrained encoder's UMAP k-means partition; the one asked for with ``serve``).
    """

    candidates: dict[str, np.ndarray]
    how: dict[str, tuple]
    features: dict[str, np.ndarray]
    criteria: dict[str, dict[str, float]]
    served: str
    serving_signal: str
    served_labels: np.ndarray
    agreement: float
    pick: str


def choose_from_signals(
    results: Mapping,
    encoder: str | None,
    texts: Sequence[str],
    *,
    seed: int,
    criterion: str,
    serve: str = "auto",
    first: FirstModel | None = None,
    cached: CachedCandidates | None = None,
) -> SignalsChoice:
    """Gather every candidate of the trained signals (``results``: signal -> an object with the signal's ``model``
    and ``trainer``), the pretrained encoder's and their consensus; rank them by ``criterion`` (and its parts); make
    the signal that serves the chosen one serve it (its model changed in place). The step of :func:`train_auto`
    between training and calibration; the benchmark runs it again on a kept run's signal models.

    Args:
        results: signal name -> its training result (``model``; ``trainer.encode_batch_size``, ``trainer.precision``).
        encoder: the pretrained encoder the signals started from (None: the default encoder).
        texts: the texts the signals trained on.
        seed: of k-means, UMAP, the consensus, the criterion and the serving heads.
        criterion: one of :data:`AUTO_CRITERIA`.
        serve: ``"auto"`` (the choice) or a candidate name.
        first: the model :func:`~hf_textcluster.runs.first_save.save_first_model` saved: its pretrained candidates
            are taken, not made again, and when the BERTopic way is served it stays the served model
            (``serving_signal`` ``"pretrained"``); a cached objective's candidate is served by it with a linear head
            (``serving_signal`` ``"cached"``).
        cached: the cached objectives' candidates (:func:`~hf_textcluster.runs.gather_candidates.cached_candidates`;
            needs ``first``).

    Returns:
        A :class:`SignalsChoice`.

    Raises:
        ValueError: ``serve`` names no candidate of these signals.

    Example:
        >>> chosen = choose_from_signals(results, None, texts, seed=0, criterion="agreement")  # doctest: +SKIP
        >>> chosen.served, chosen.serving_signal                                         # doctest: +SKIP
        ('self_training/kmeans', 'self_training')
    """
    with phase("candidates"):
        pretrained = (first.candidates, first.features) if first is not None else None
        candidates, how, features = gather_candidates(results, encoder, texts, seed, pretrained, cached)
    wanted = list(dict.fromkeys([criterion, *PARTS.get(criterion, ()), *GUARD_CRITERIA]))
    with phase("criteria"):
        criteria = candidate_criteria(candidates, features, texts=texts, criteria=wanted, random_state=seed)
    served, pick = choose_candidate(criteria, criterion, serve, candidates)
    with phase("serve"):
        if first is not None and served == first.served:  # the first saved model serves it already
            serving_signal, served_labels, agreement = PRETRAINED, first.labels, 1.0
        else:
            serving_signal, served_labels, agreement = serve_candidate(
                results, how, features, candidates, served, seed, first, cached
            )
    return SignalsChoice(candidates, how, features, criteria, served, serving_signal, served_labels, agreement, pick)


def _shared_dataset(request: TrainingRequest, signals) -> datasets.Dataset:
    """The texts every signal trains on, read once: a benchmark with the contrastive signal's augmented views."""
    views = request.augmentation
    if views == "recipe":  # a benchmark's: the recipe's views of the first signal that trains on views
        methods = [SIGNALS[s].method for s in signals if get_method(SIGNALS[s].method).uses_augmented_views]
        views = (
            load_recipe(methods[0], request.recipe).get("augmentation") if methods and request.dataset_name else None
        )
    return prepare_dataset(request.dataset, views, data_dir=request.data_dir, seed=request.seed)


def _estimate(request: TrainingRequest, shared, signals, cached, overrides: dict, model) -> RunEstimate:
    """The whole run's estimate (:mod:`~hf_textcluster.runs.estimate`): each fine-tuning signal's schedule on the
    texts it will train on, the cached objectives (``cached``), and the pretrained encoder's speed (``model``: the
    first saved model's) on a sample of them."""
    num_texts = len(shared) - (held_out_count(request.test_size, len(shared)) if request.test_size else 0)
    steps = {}
    for name in signals:
        plan = {**load_recipe(SIGNALS[name].method, request.recipe), "schedule": dict(AUTO_SCHEDULE)}
        schedule = plan_schedule(plan, num_texts, overrides)
        count = schedule.max_steps or math.ceil((schedule.epochs or 1) * num_texts / schedule.batch_size)
        steps[name] = (count, schedule.batch_size)
    speed = encoding_speed(model, list(shared["text"]), seed=request.seed, **encoding_options(overrides))
    frozen_share = overrides.get("frozen_layers", 0) / model.encoder.config.num_hidden_layers
    return estimate_auto(num_texts, steps, speed, frozen_share, cached=cached)


def _split(request: TrainingRequest, shared: datasets.Dataset) -> tuple[datasets.Dataset, datasets.Dataset | None]:
    """(the texts every signal trains on, the held-out texts): ``shared`` split as each signal's run splits it."""
    if request.test_size is None:
        return shared, None
    return split_held_out(shared, request.test_size, seed=request.split_seed)


def _pretrained_trainer(request: TrainingRequest, first: FirstModel, train_texts, held_out, overrides: dict):
    """A trainer of the first saved model that trains nothing: it evaluates the served model (on the held-out texts,
    else the training texts) and says the run's precision, when no encoder was fine-tuned."""
    args = build_training_arguments(request.output_dir, {}, overrides, seed=request.seed)
    evaluated = held_out if held_out is not None else train_texts
    return ClusteringTrainer(model=first.model, args=args, train_dataset=train_texts, eval_dataset=evaluated)


def _evaluate(trainer, model) -> dict:
    """The trainer's evaluation of ``model`` (the served one: a signal's, or the first saved model)."""
    trained, trainer.model = trainer.model, model
    try:
        return trainer.evaluate()
    finally:
        trainer.model = trained


def _train_signals(request: TrainingRequest, shared, signals, overrides: dict) -> dict:
    """Each signal trained as a normal run in ``signals/<name>`` on :data:`AUTO_SCHEDULE` (its head served, neither
    calibrated nor named: the choice is made after)."""
    results = {}
    for name in signals:
        signal = SIGNALS[name]
        signal_request = replace(
            request,
            method=signal.method,
            config_overrides=dict(signal.config),
            keep_signals=False,
            time_budget=None,
            signals=None,
            dataset=shared,
            output_dir=os.path.join(request.output_dir, SIGNALS_DIR, name),
            augmentation="recipe",
            training_overrides={**overrides, "serve": "head", "calibration_sample_size": 0},
            evaluate=False,
            input_file=None,
            name_clusters=False,
        )
        with phase(name):
            results[name] = train_method(signal_request, schedule=AUTO_SCHEDULE)
        # the next signals use the K the first one settled on (chosen once, from the same texts)
        request = replace(request, num_clusters=ClusterCountRequest.parse(results[name].model.config.num_clusters))
    return results


def _calibrate(result, texts: Sequence[str], seed: int, sample_size: int) -> None:
    """Calibrate the serving model on a seeded sample of ``sample_size`` texts (0: not at all, as for one method),
    from its embeddings of ``texts`` (within a reusing_results block, those its candidates were made from)."""
    if not sample_size:
        return
    trainer, model = result.trainer, result.model
    encoding = trainer.encode_options
    embeddings = embed(model, texts, show_progress_bar=False, **encoding)
    model.calibrate(texts, sample_size=sample_size, random_state=seed, embeddings=embeddings, **encoding)
    trainer.train_assignments = assign_embeddings(model, embeddings)  # for naming: no pass of its own
