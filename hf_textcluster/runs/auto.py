"""``train --method auto``: several training signals, every read-out of each, a consensus, one label-free choice.

Which method and which read-out of it is best differs from corpus to corpus (a contrastive signal with UMAP k-means
on its embeddings on one, self-training with k-means on another), and only labels tell for sure. ``auto`` does not
guess: within one budget it trains each of :data:`SIGNALS` as a normal run in a sub-folder (``signals/<name>``), and
gathers as candidates

- every partition each trained model offers (:func:`~hf_textcluster.choosing.serving.candidate_partitions`: its head,
  k-means and UMAP k-means on its embeddings, each refined or not), named ``<signal>/<candidate>``;
- k-means and UMAP k-means on the *pretrained* encoder's embeddings (``pretrained/kmeans``,
  ``pretrained/umap_kmeans``: what a user gets in seconds without training);
- ``consensus``: the cluster ensemble of all of them (:func:`~hf_textcluster.choosing.consensus.consensus_partition`).

A label-free criterion (:data:`~hf_textcluster.choosing.candidate_criteria.DEFAULT_AUTO_CRITERION`: a held-out
neighbour vote in a lexical space of the texts, which shaped no candidate, among the candidates the others support)
chooses one, and ONE model serves it: the signal that made it,
or for the consensus and the pretrained candidates, the trained signal whose linear head on its embeddings reproduces
that partition most faithfully (:func:`~hf_textcluster.choosing.linear_heads.distil_partition`). The result is a normal
saved clusterer in ``output_dir`` (loadable with ``AutoModel``, the pipeline or remote code); every candidate's
partition of the training texts is kept beside it (:data:`~hf_textcluster.runs.kept_candidates.CANDIDATES_FILE`, one
integer per text each), with their values of the criterion (and of its parts) in ``training_run.json``, so
``evaluate --model`` can score them and ``refine --serve NAME`` can switch to one.

The schedule depends on the number of texts only (:func:`auto_steps`); never on the corpus' name or its labels, which
are only scored against.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import datasets
import numpy as np
from transformers.utils import logging

from ..choosing.candidate_criteria import (
    AUTO_CRITERIA,
    BERTOPIC_WAY,
    DEFAULT_AUTO_CRITERION,
    GUARD_CRITERION,
    PARTS,
    candidate_criteria,
    guarded_choice,
)
from ..choosing.linear_heads import distil_partition
from ..choosing.serving import apply_partition
from ..models import get_method
from ..representation import ClusterNames
from ..representation.summary import assign_embeddings
from ..reuse import embed, reusing_results
from ..training.arguments import ClusteringTrainingArguments, check_calibration_sample_size
from .after_training import name_trained_clusters
from .auto_candidates import gather_candidates
from .auto_record import auto_record, save_auto_run
from .folder import check_may_replace_model
from .recipes import load_recipe
from .signals import SIGNALS, SIGNALS_DIR

logger = logging.get_logger(__name__)

__all__ = [
    "AutoTrainingResult",
    "SignalsChoice",
    "auto_steps",
    "choose_from_signals",
    "train_auto",
]


# The schedule: about AUTO_EPOCHS passes over the texts per signal, within [AUTO_MIN_STEPS, the recipe's steps].
AUTO_EPOCHS = 8
AUTO_MIN_STEPS = 100


def auto_steps(num_texts: int, batch_size: int, max_steps: int) -> int:
    """Optimizer steps of one signal: ``ceil(AUTO_EPOCHS * num_texts / batch_size)`` within ``[AUTO_MIN_STEPS,
    max_steps]`` (``max_steps``: the signal's ``cpu`` recipe). A few thousand texts or more get the recipe's steps;
    a small corpus gets about eight passes over it.

    Example:
        >>> auto_steps(20_000, 64, 300), auto_steps(1_000, 64, 300), auto_steps(300, 64, 300)
        (300, 125, 100)
    """
    if num_texts < 1 or batch_size < 1:
        raise ValueError(f"`num_texts` and `batch_size` must be >= 1; got {num_texts} and {batch_size}.")
    return int(min(max_steps, max(AUTO_MIN_STEPS, math.ceil(AUTO_EPOCHS * num_texts / batch_size))))


@dataclass
class AutoTrainingResult:
    """What :func:`train_auto` returns (the fields of :class:`~hf_textcluster.runs.train.TrainingResult`, and
    the candidates).

    Attributes:
        model: the serving model (saved in ``output_dir``).
        trainer: the Trainer of the serving signal.
        metrics: ACC / NMI / ARI of what the model serves (empty without labels), and the training seconds.
        output_dir: where the model, ``training_run.json``,
            :data:`~hf_textcluster.runs.kept_candidates.CANDIDATES_FILE` and ``signals/`` are.
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

    model: object
    trainer: object
    metrics: dict
    output_dir: str
    train_seconds: float
    test_dataset: datasets.Dataset | None = None
    k_selection: dict | None = None
    candidates: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    served_labels: np.ndarray | None = field(default=None, repr=False)
    auto: dict = field(default_factory=dict)
    train_dataset: datasets.Dataset | None = field(default=None, repr=False)
    cluster_names: ClusterNames | None = None


def _check_signals(signals: Sequence[str]) -> tuple[str, ...]:
    names = tuple(signals)
    unknown = [s for s in names if s not in SIGNALS]
    if not names or unknown or len(set(names)) != len(names):
        raise ValueError(f"`signals` must name distinct signals of {', '.join(SIGNALS)}; got {list(signals)!r}.")
    return names


def _check_auto_arguments(signals, config_overrides, criterion) -> tuple[str, ...]:
    names = _check_signals(signals)
    if config_overrides:
        raise ValueError(
            "`config_overrides` (--config) configures one method; `auto` trains several with their own. Train one "
            "method (--method sccl, ...) to override its configuration."
        )
    if criterion not in AUTO_CRITERIA:
        raise ValueError(f"`criterion` must be one of {', '.join(AUTO_CRITERIA)}; got {criterion!r}.")
    return names


def _check_record_criteria(criteria: Sequence[str]) -> list[str]:
    if isinstance(criteria, str) or any(c not in AUTO_CRITERIA for c in criteria):
        raise ValueError(f"`record_criteria` must be a list of {', '.join(AUTO_CRITERIA)}; got {criteria!r}.")
    return list(criteria)


def train_auto(
    dataset: str | datasets.Dataset,
    output_dir: str,
    *,
    encoder: str | None = None,
    recipe: str = "cpu",
    augmentation: str | None = "recipe",
    num_clusters=None,
    k_range=None,
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
    signals: Sequence[str] = tuple(SIGNALS),
    criterion: str = DEFAULT_AUTO_CRITERION,
    record_criteria: Sequence[str] = (),
    name_clusters: bool = True,
) -> AutoTrainingResult:
    """Train every signal of ``signals``, gather their candidates and a consensus, choose one without labels, save
    the model that serves it. ``train_clusterer("auto", ...)`` calls this; the arguments are its own.

    Args:
        dataset: a benchmark name or a ``datasets.Dataset`` with a ``text`` column (an optional ``label`` column is
            only scored against). Every signal trains on the same texts: a benchmark's are read once, with the
            contrastive signal's augmented views.
        output_dir: the serving model, ``training_run.json``,
            :data:`~hf_textcluster.runs.kept_candidates.CANDIDATES_FILE`, and ``signals/<name>`` (each signal's own
            run, with its checkpoints: an interrupted ``auto`` resumes them).
        **others**: ``encoder``, ``recipe``, ``augmentation``, ``num_clusters``, ``k_range``, ``k_criterion``,
            ``data_dir``, ``seed``, ``resume``, ``evaluate``, ``save``, ``test_size``, ``split_seed``, ``input_file``
            and ``overwrite`` as for :func:`~hf_textcluster.runs.train.train_clusterer` (``recipe`` is each
            signal's).
        keep_checkpoints: keep each signal's ``checkpoint-*`` folders (in ``signals/<name>``) after its successful
            run (by default they are removed once its model is saved).
        config_overrides: not accepted (each signal has its own configuration; train one method for those).
        training_overrides: ``ClusteringTrainingArguments`` fields for every signal; ``max_steps`` replaces
            :func:`auto_steps`; ``serve`` is ``"auto"`` (the choice) or a candidate name to serve instead.
        signals: which of :data:`SIGNALS` to train (default: all).
        criterion: the label-free criterion of the choice, one of
            :data:`~hf_textcluster.choosing.candidate_criteria.AUTO_CRITERIA`. Only it (and what it is made of) is
            computed and recorded with the candidates.
        record_criteria: other criteria to compute and record beside it, to compare criteria after the fact (the
            benchmark asks for all of them); their time is recorded apart (``extra_criteria_seconds``) and left out
            of ``choose_seconds``, which stays the time of the choice itself.
        name_clusters: name the served clusters (c-TF-IDF keywords on a sample of the training texts) as
            :func:`~hf_textcluster.runs.train.train_clusterer` does; the signals' own models are neither named nor
            calibrated (what they serve is chosen afterwards).

    Returns:
        An :class:`AutoTrainingResult`.

    Raises:
        ValueError: config overrides, an unknown signal, criterion or served candidate, or what
            ``train_clusterer`` raises.

    Example:
        >>> from hf_textcluster import train_clusterer
        >>> result = train_clusterer("auto", "stackoverflow", "runs/auto-so")   # doctest: +SKIP
        >>> result.auto["choice"]["served"]                                    # doctest: +SKIP
        'contrastive/umap_kmeans'
    """
    signals = _check_auto_arguments(signals, config_overrides, criterion)
    extra_criteria = [
        c for c in _check_record_criteria(record_criteria) if c not in (criterion, *PARTS.get(criterion, ()))
    ]
    overrides = dict(training_overrides or {})
    serve = overrides.pop("serve", "auto")
    # the served model is calibrated once, after the choice: the signals' runs skip it
    calibration = check_calibration_sample_size(
        overrides.pop("calibration_sample_size", ClusteringTrainingArguments.calibration_sample_size)
    )
    if save and not (resume and os.path.isdir(os.path.join(output_dir, SIGNALS_DIR))):
        check_may_replace_model(output_dir, overwrite=overwrite, argument="output_dir (--output-dir)", command="train")
    dataset_name = dataset if isinstance(dataset, str) else None
    shared = _shared_dataset(dataset, signals, augmentation, recipe, data_dir, seed)
    # the signals' k-means starts and the pretrained candidates: one encoding pass and one k-means of those texts
    with reusing_results():
        results = _train_signals(
            shared,
            signals,
            output_dir,
            overrides,
            dict(
                encoder=encoder,
                recipe=recipe,
                data_dir=data_dir,
                seed=seed,
                resume=resume,
                save=save,
                test_size=test_size,
                split_seed=split_seed,
                overwrite=overwrite,
                keep_checkpoints=keep_checkpoints,
            ),
            num_clusters,
            {"k_range": k_range, "k_criterion": k_criterion},
        )
        first = results[signals[0]]
        texts = list(first.trainer.train_dataset["text"])
        start = time.perf_counter()
        chosen = choose_from_signals(results, encoder, texts, seed=seed, criterion=criterion, serve=serve)
        # the serving signal's embeddings of the texts were computed for its candidates: reused, not encoded again
        _calibrate(results[chosen.serving_signal], texts, seed, calibration)
    choose_seconds = time.perf_counter() - start
    start = time.perf_counter()
    candidates, criteria, serving_signal = chosen.candidates, chosen.criteria, chosen.serving_signal
    if extra_criteria:  # for comparing criteria: not part of the choice, so not of its time
        criteria.update(
            candidate_criteria(candidates, chosen.features, texts=texts, criteria=extra_criteria, random_state=seed)
        )
    choice = {
        "served": chosen.served,
        "pick": chosen.pick,
        "criterion": criterion if serve == "auto" else None,
        "serving_signal": serving_signal,
        "agreement": chosen.agreement,
    }
    record = auto_record(results, candidates, criteria, texts, choose_seconds, choice)
    record["extra_criteria_seconds"] = round(time.perf_counter() - start, 2)
    served_labels = chosen.served_labels
    train_seconds = sum(r.train_seconds for r in results.values())
    model, trainer = results[serving_signal].model, results[serving_signal].trainer
    cluster_names = name_trained_clusters(model, trainer, trainer.train_dataset, seed) if name_clusters else None
    metrics = {"train_seconds": round(train_seconds, 2), "choose_seconds": round(choose_seconds, 2)}
    if evaluate:
        metrics.update(trainer.evaluate())
    if save:
        about = {"dataset": dataset_name, "input_file": input_file, "recipe": recipe, "seed": seed}
        named = cluster_names.assignments if cluster_names is not None else None
        assignments = named.clusters if named is not None else served_labels
        save_auto_run(
            output_dir, model, candidates, served_labels, record, about, training_overrides, metrics, assignments
        )
    return AutoTrainingResult(
        model=model,
        trainer=trainer,
        metrics=metrics,
        output_dir=output_dir,
        train_seconds=train_seconds,
        test_dataset=first.test_dataset,
        k_selection=first.k_selection,
        candidates=candidates,
        served_labels=served_labels,
        auto=record,
        cluster_names=cluster_names,
        train_dataset=first.trainer.train_dataset,
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
        serving_signal: the signal whose model now serves it.
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
    results: Mapping, encoder: str | None, texts: Sequence[str], *, seed: int, criterion: str, serve: str = "auto"
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

    Returns:
        A :class:`SignalsChoice`.

    Raises:
        ValueError: ``serve`` names no candidate of these signals.

    Example:
        >>> chosen = choose_from_signals(results, None, texts, seed=0, criterion="knn_holdout")  # doctest: +SKIP
        >>> chosen.served, chosen.serving_signal                                         # doctest: +SKIP
        ('self_training/kmeans', 'self_training')
    """
    candidates, how, features = gather_candidates(results, encoder, texts, seed)
    wanted = list(dict.fromkeys([criterion, *PARTS.get(criterion, ()), GUARD_CRITERION]))
    criteria = candidate_criteria(candidates, features, texts=texts, criteria=wanted, random_state=seed)
    served, pick = _pick(criteria, criterion, serve, candidates)
    serving_signal, served_labels, agreement = _serve(results, how, features, candidates, served, seed)
    return SignalsChoice(candidates, how, features, criteria, served, serving_signal, served_labels, agreement, pick)


def _shared_dataset(dataset, signals, augmentation, recipe: str, data_dir, seed: int) -> datasets.Dataset:
    """The texts every signal trains on, read once: a benchmark with the contrastive signal's augmented views."""
    from .train import prepare_dataset  # auto trains each signal through the one-method run

    view_methods = [SIGNALS[s].method for s in signals if get_method(SIGNALS[s].method).uses_augmented_views]
    views = augmentation
    if augmentation == "recipe":
        is_benchmark = isinstance(dataset, str)
        views = (
            load_recipe(view_methods[0], recipe, None).get("augmentation") if view_methods and is_benchmark else None
        )
    return prepare_dataset(dataset, views, data_dir=data_dir, seed=seed)


def _train_signals(shared, signals, output_dir: str, overrides: dict, common: dict, request, k_kwargs: dict) -> dict:
    """Each signal trained as a normal run in ``signals/<name>`` (its head served, neither calibrated nor named: the
    choice is made after)."""
    from .train import train_clusterer

    results = {}
    test_size = common["test_size"]
    for name in signals:
        signal = SIGNALS[name]
        plan = load_recipe(signal.method, common["recipe"], None)["training"]
        n_train = len(shared) - (_held_out_count(test_size, len(shared)) if test_size is not None else 0)
        steps = overrides.get("max_steps") or auto_steps(
            n_train, plan.get("per_device_train_batch_size", 64), plan.get("max_steps", 300)
        )
        results[name] = train_clusterer(
            signal.method,
            shared,
            os.path.join(output_dir, SIGNALS_DIR, name),
            augmentation="recipe",
            num_clusters=request,
            config_overrides=dict(signal.config),
            training_overrides={**overrides, "max_steps": steps, "serve": "head", "calibration_sample_size": 0},
            evaluate=False,
            name_clusters=False,
            **common,
            **k_kwargs,
        )
        # the next signals use the K the first one settled on (chosen once, from the same texts)
        request, k_kwargs = results[name].model.config.num_clusters, {}
    return results


def _pick(
    criteria: Mapping[str, Mapping[str, float]], criterion: str, serve: str, candidates: Mapping
) -> tuple[str, str]:
    """``(served, pick)``: for ``serve="auto"`` the highest by ``criterion``, guarded
    (:func:`~hf_textcluster.choosing.candidate_criteria.guarded_choice`); else the one asked for, twice."""
    if serve == "auto":
        served, pick = guarded_choice(criteria, criterion)
        if BERTOPIC_WAY not in candidates:
            logger.warning(f"No {BERTOPIC_WAY} candidate (UMAP failed): {pick} is served unguarded.")
        elif served != pick:
            guard = criteria[GUARD_CRITERION]
            logger.warning(
                f"Serving the pretrained encoder's UMAP k-means clusters (the BERTopic way): the best trained "
                f"candidate, {pick}, does not beat them in the held-out lexical vote ({guard[pick]:.3f} vs "
                f"{guard[BERTOPIC_WAY]:.3f})."
            )
        return served, pick
    if serve in candidates:
        return serve, serve
    raise ValueError(
        f"`serve`={serve!r} is not a candidate of this run; pass 'auto' or one of {', '.join(candidates)}."
    )


def _calibrate(result, texts: Sequence[str], seed: int, sample_size: int) -> None:
    """Calibrate the serving model on a seeded sample of ``sample_size`` texts (0: not at all, as for one method),
    from its embeddings of ``texts`` (within a reusing_results block, those its candidates were made from)."""
    if not sample_size:
        return
    trainer, model = result.trainer, result.model
    encoding = {"batch_size": trainer.encode_batch_size, "precision": trainer.precision}
    embeddings = embed(model, texts, show_progress_bar=False, **encoding)
    model.calibrate(texts, sample_size=sample_size, random_state=seed, embeddings=embeddings, **encoding)
    trainer.train_assignments = assign_embeddings(model, embeddings)  # for naming: no pass of its own


def _held_out_count(test_size, n: int) -> int:
    return test_size if isinstance(test_size, int) else math.ceil(test_size * n)


def _serve(results, how, features, candidates, served: str, seed: int) -> tuple[str, np.ndarray, float]:
    """Make one signal's model serve ``served``: (that signal, the texts' served clusters, its head's agreement)."""
    if served in how:
        signal, base, serving = how[served]
        model = results[signal].model
        apply_partition(model, base, serving)
        model.config.served_partition = served
        return signal, candidates[served], 1.0
    labels = candidates[served]
    k = next(iter(results.values())).model.config.num_clusters
    fits = {signal: distil_partition(features[signal], labels, num_clusters=k, random_state=seed) for signal in results}
    # faithfulness: the share of texts whose cluster the head keeps (1 - what distilling it changed)
    signal = max(fits, key=lambda s: (-fits[s].changed, -list(fits).index(s)))
    apply_partition(results[signal].model, served, fits[signal])
    return signal, fits[signal].labels, 1.0 - fits[signal].changed
