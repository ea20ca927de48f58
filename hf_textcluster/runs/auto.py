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

A label-free criterion (:data:`DEFAULT_AUTO_CRITERION`) chooses one, and ONE model serves it: the signal that made it,
or for the consensus and the pretrained candidates, the trained signal whose linear head on its embeddings reproduces
that partition most faithfully (the head fitted as refinement fits one, with no rounds). The result is a normal saved
clusterer in ``output_dir`` (loadable with ``AutoModel``, the pipeline or remote code); every candidate's partition of
the training texts is kept beside it (:data:`CANDIDATES_FILE`, one integer per text each), with the criterion values
in ``training_run.json``, so ``evaluate --model`` can score them and ``refine --serve NAME`` can switch to one.

The schedule depends on the number of texts only (:func:`auto_steps`); never on the corpus' name or its labels, which
are only scored against.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import datasets
import numpy as np
from sklearn.metrics import adjusted_rand_score

from ..choosing.consensus import average_nmi, consensus_partition
from ..choosing.refinement import refine_partition
from ..choosing.selection import score_partitions
from ..choosing.serving import CANDIDATES, ServingChoice, apply_partition, candidate_partitions, partition_features
from ..modeling.modeling_utils import TextClusteringPreTrainedModel
from ..models import get_method
from ..runs.folder import check_may_replace_model
from .recipes import load_recipe

__all__ = [
    "SIGNALS",
    "CANDIDATES_FILE",
    "candidate_criteria",
    "AUTO_CRITERIA",
    "DEFAULT_AUTO_CRITERION",
    "AutoTrainingResult",
    "auto_steps",
    "train_auto",
    "read_candidates",
    "serve_kept_candidate",
]


class Signal(NamedTuple):
    """A training signal ``auto`` trains: a registered method with config overrides."""

    method: str
    config: dict
    description: str


SIGNALS: dict[str, Signal] = {
    "contrastive": Signal(
        "sccl", {}, "SCCL: instance contrast of two augmented views and DEC self-training (Zhang et al. 2021)"
    ),
    "self_training": Signal(
        "decmlm",
        {"mlm_loss_weight": 0.0},
        "DEC self-training on the encoder, DEC-MLM without its masked-LM term (Huang et al. 2020's ablation)",
    ),
}
PRETRAINED = "pretrained"
CONSENSUS = "consensus"
SIGNALS_DIR = "signals"
CANDIDATES_FILE = "candidates.safetensors"
SERVED_KEY = "served"  # the training texts' clusters as the saved model serves them, beside the candidates
PRETRAINED_CANDIDATES = ("kmeans", "umap_kmeans")
# Label-free criteria computed for every candidate; the choice uses DEFAULT_AUTO_CRITERION.
# - "agreement": ANMI (Strehl & Ghosh 2002), a candidate's mean NMI with every other candidate; it needs no embedding
#   space, so candidates made in different models' spaces are compared on equal terms;
# - "agreement_independent": the same against candidates of *other* sources only (a signal's six read-outs do not
#   vote for each other; the consensus, made of all, votes for none);
# - "agreement_ari": the first with the adjusted Rand index;
# - the registry's "separability", "knn_holdout" (scored on texts that did not shape the vote) and "silhouette",
#   each in the space the candidate was made in (the consensus: the mean over the trained signals' spaces).
POOL_CRITERIA = ("agreement", "agreement_independent", "agreement_ari")
SPACE_CRITERIA = ("separability", "knn_holdout", "silhouette")
AUTO_CRITERIA = POOL_CRITERIA + SPACE_CRITERIA
DEFAULT_AUTO_CRITERION = "agreement"

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
        output_dir: where the model, ``training_run.json``, :data:`CANDIDATES_FILE` and ``signals/`` are.
        train_seconds: wall-clock seconds of training, all signals together.
        test_dataset: the held-out texts (``test_size``), never trained on.
        k_selection: with ``num_clusters="auto"``, how K was chosen.
        candidates: candidate name -> its partition of the training texts.
        served_labels: the training texts' clusters as the saved model serves them.
        auto: what ``training_run.json`` records under ``"auto"`` (signals, candidates' criteria, the choice).
        train_dataset: the texts every signal trained on (with their labels when the dataset had them).
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


def _texts_sha1(texts: Sequence[str]) -> str:
    digest = hashlib.sha1()
    for text in texts:
        digest.update(text.encode("utf-8", "replace") + b"\0")
    return digest.hexdigest()


def _check_signals(signals: Sequence[str]) -> tuple[str, ...]:
    names = tuple(signals)
    unknown = [s for s in names if s not in SIGNALS]
    if not names or unknown or len(set(names)) != len(names):
        raise ValueError(f"`signals` must name distinct signals of {', '.join(SIGNALS)}; got {list(signals)!r}.")
    return names


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
    signals: Sequence[str] = tuple(SIGNALS),
    criterion: str = DEFAULT_AUTO_CRITERION,
) -> AutoTrainingResult:
    """Train every signal of ``signals``, gather their candidates and a consensus, choose one without labels, save
    the model that serves it. ``train_clusterer("auto", ...)`` calls this; the arguments are its own.

    Args:
        dataset: a benchmark name or a ``datasets.Dataset`` with a ``text`` column (an optional ``label`` column is
            only scored against). Every signal trains on the same texts: a benchmark's are read once, with the
            contrastive signal's augmented views.
        output_dir: the serving model, ``training_run.json``, :data:`CANDIDATES_FILE`, and ``signals/<name>`` (each
            signal's own run, with its checkpoints: an interrupted ``auto`` resumes them).
        **others**: ``encoder``, ``recipe``, ``augmentation``, ``num_clusters``, ``k_range``, ``k_criterion``,
            ``data_dir``, ``seed``, ``resume``, ``evaluate``, ``save``, ``test_size``, ``split_seed``, ``input_file``
            and ``overwrite`` as for :func:`~hf_textcluster.runs.train.train_clusterer` (``recipe`` is each
            signal's).
        config_overrides: not accepted (each signal has its own configuration; train one method for those).
        training_overrides: ``ClusteringTrainingArguments`` fields for every signal; ``max_steps`` replaces
            :func:`auto_steps`; ``serve`` is ``"auto"`` (the choice) or a candidate name to serve instead.
        signals: which of :data:`SIGNALS` to train (default: all).
        criterion: the label-free criterion of the choice, one of :data:`AUTO_CRITERIA`.

    Returns:
        An :class:`AutoTrainingResult`.

    Raises:
        ValueError: config overrides, an unknown signal, criterion or served candidate, or what
            ``train_clusterer`` raises.

    Example:
        >>> from hf_textcluster import train_clusterer
        >>> result = train_clusterer("auto", "stackoverflow", "runs/auto-so")   # doctest: +SKIP
        >>> result.auto["choice"]["served"]                                    # doctest: +SKIP
        'consensus'
    """
    from .train import prepare_dataset, read_training_run, train_clusterer  # auto trains each signal through it

    signals = _check_signals(signals)
    if config_overrides:
        raise ValueError(
            "`config_overrides` (--config) configures one method; `auto` trains several with their own. Train one "
            "method (--method sccl, ...) to override its configuration."
        )
    if criterion not in AUTO_CRITERIA:
        raise ValueError(f"`criterion` must be one of {', '.join(AUTO_CRITERIA)}; got {criterion!r}.")
    overrides = dict(training_overrides or {})
    serve = overrides.pop("serve", "auto")
    signals_root = os.path.join(output_dir, SIGNALS_DIR)
    if save and not (resume and os.path.isdir(signals_root)):
        check_may_replace_model(output_dir, overwrite=overwrite, argument="output_dir (--output-dir)", command="train")

    # The texts every signal trains on, read once: a benchmark with the contrastive signal's augmented views.
    dataset_name = dataset if isinstance(dataset, str) else None
    view_methods = [SIGNALS[s].method for s in signals if get_method(SIGNALS[s].method).uses_augmented_views]
    views = augmentation
    if augmentation == "recipe":
        views = (
            load_recipe(view_methods[0], recipe, None).get("augmentation") if view_methods and dataset_name else None
        )
    shared = prepare_dataset(dataset, views, data_dir=data_dir, seed=seed)

    results = {}
    request = num_clusters
    k_kwargs = {"k_range": k_range, "k_criterion": k_criterion}
    for name in signals:
        signal = SIGNALS[name]
        plan = load_recipe(signal.method, recipe, None)["training"]
        n_train = len(shared) - (_held_out_count(test_size, len(shared)) if test_size is not None else 0)
        steps = overrides.get("max_steps") or auto_steps(
            n_train, plan.get("per_device_train_batch_size", 64), plan.get("max_steps", 300)
        )
        results[name] = train_clusterer(
            signal.method,
            shared,
            os.path.join(signals_root, name),
            encoder=encoder,
            recipe=recipe,
            augmentation="recipe",
            num_clusters=request,
            data_dir=data_dir,
            seed=seed,
            config_overrides=dict(signal.config),
            training_overrides={**overrides, "max_steps": steps, "serve": "head"},
            resume=resume,
            evaluate=False,
            save=save,
            test_size=test_size,
            split_seed=split_seed,
            overwrite=overwrite,
            **k_kwargs,
        )
        # the next signals use the K the first one settled on (chosen once, from the same texts)
        request, k_kwargs = results[name].model.config.num_clusters, {}

    first = results[signals[0]]
    train_dataset = first.trainer.train_dataset
    texts = list(train_dataset["text"])
    num_clusters_chosen = first.model.config.num_clusters
    start = time.perf_counter()
    candidates, how, features = {}, {}, {}
    for name, result in results.items():
        trainer = result.trainer
        embeddings = result.model.embed(
            texts, batch_size=trainer.encode_batch_size, show_progress_bar=False, precision=trainer.precision
        )
        features[name] = partition_features(result.model, embeddings)
        partitions, serving = candidate_partitions(result.model, embeddings, candidates=CANDIDATES, random_state=seed)
        for base, labels in partitions.items():
            candidates[f"{name}/{base}"] = labels
            how[f"{name}/{base}"] = (name, base, serving[base])
    pretrained, features[PRETRAINED] = _pretrained_candidates(
        first.model, encoder, texts, num_clusters_chosen, first.trainer, seed
    )
    candidates.update(pretrained)
    candidates[CONSENSUS] = consensus_partition(dict(candidates), num_clusters_chosen, random_state=seed)

    # Label-free criteria of every candidate; the choice takes the highest of `criterion`.
    criteria = candidate_criteria(candidates, features, random_state=seed)
    if serve == "auto":
        best = max(criteria[criterion].values())
        served = next(n for n, v in criteria[criterion].items() if v == best)  # ties: the first listed
    elif serve in candidates:
        served = serve
    else:
        raise ValueError(
            f"`serve`={serve!r} is not a candidate of this run; pass 'auto' or one of {', '.join(candidates)}."
        )

    serving_signal, served_labels, agreement = _serve(results, how, features, candidates, served, seed)
    model, trainer = results[serving_signal].model, results[serving_signal].trainer
    model.calibrate(
        texts,
        sample_size=getattr(trainer.args, "calibration_sample_size", 10_000) or None,
        random_state=seed,
        batch_size=trainer.encode_batch_size,
        show_progress_bar=False,
        precision=trainer.precision,
    )
    choose_seconds = time.perf_counter() - start
    train_seconds = sum(r.train_seconds for r in results.values())
    metrics = {"train_seconds": round(train_seconds, 2), "choose_seconds": round(choose_seconds, 2)}
    if evaluate:
        metrics.update(trainer.evaluate())
    record = {
        "signals": {
            name: {
                "method": SIGNALS[name].method,
                "config": SIGNALS[name].config,
                "description": SIGNALS[name].description,
                "folder": os.path.join(SIGNALS_DIR, name),
                "steps": int(r.trainer.state.global_step),
                "batch_size": int(r.trainer.args.per_device_train_batch_size),
                "train_seconds": round(r.train_seconds, 2),
            }
            for name, r in results.items()
        },
        "criteria": list(AUTO_CRITERIA),
        "candidates": {name: {c: round(float(criteria[c][name]), 6) for c in AUTO_CRITERIA} for name in candidates},
        "choice": {
            "served": served,
            "criterion": criterion if serve == "auto" else None,
            "serving_signal": serving_signal,
            "head_agreement": round(float(agreement), 4),
            "rule": "the signal that made the candidate; for the consensus and the pretrained candidates, the trained "
            "signal whose linear head reproduces it most faithfully",
        },
        "num_train_texts": len(texts),
        "texts_sha1": _texts_sha1(texts),
        "choose_seconds": round(choose_seconds, 2),
    }
    if save:
        model.save_pretrained(output_dir)
        save_candidates(output_dir, {**candidates, SERVED_KEY: served_labels}, record)
        run_info = read_training_run(os.path.join(signals_root, serving_signal)) or {}
        run_info.update(
            {
                "method": SIGNALS[serving_signal].method,
                "auto": record,
                "dataset": dataset_name,
                **({"input": dict(input_file)} if input_file and not dataset_name else {}),
                "recipe": recipe,
                "seed": seed,
                "serving": {
                    "served": served,
                    "criterion": record["choice"]["criterion"],
                    "scores": {n: v[criterion] for n, v in record["candidates"].items()},
                },
                "config_overrides": dict(SIGNALS[serving_signal].config),
                "training_overrides": training_overrides or {},
                "metrics": metrics,
            }
        )
        with open(os.path.join(output_dir, "training_run.json"), "w") as f:
            json.dump(run_info, f, indent=2)
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
        train_dataset=train_dataset,
    )


def _held_out_count(test_size, n: int) -> int:
    return test_size if isinstance(test_size, int) else math.ceil(test_size * n)


def _source(name: str) -> str | None:
    """The source of a candidate: the signal (or ``pretrained``) before the slash; None for the consensus."""
    return name.split("/", 1)[0] if "/" in name else None


def candidate_criteria(
    candidates: Mapping[str, np.ndarray], spaces: Mapping[str, np.ndarray], *, random_state: int = 0
) -> dict[str, dict[str, float]]:
    """Every criterion of :data:`AUTO_CRITERIA` for every candidate (higher is better): criterion -> name -> value.

    Args:
        candidates: ``<source>/<read-out>`` (and ``consensus``) -> ``(N,)`` cluster ids of the same texts.
        spaces: source -> ``(N, d)`` features the source's candidates were made in (each trained signal's and
            ``pretrained``'s).
        random_state: seed of the criteria's samples and folds.

    Returns:
        ``{criterion: {candidate: value}}``.

    Example:
        >>> values = candidate_criteria(candidates, {"contrastive": x1, "pretrained": x0})   # doctest: +SKIP
    """
    values = {
        "agreement": average_nmi(candidates),
        "agreement_independent": average_nmi(candidates, source=_source),
        "agreement_ari": {
            n: float(np.mean([adjusted_rand_score(candidates[n], candidates[m]) for m in candidates if m != n]))
            for n in candidates
        },
    }
    trained = [s for s in spaces if s != PRETRAINED]
    for criterion in SPACE_CRITERIA:
        values[criterion] = {}
        for name, labels in candidates.items():
            source = _source(name)
            where = [source] if source in spaces else trained
            values[criterion][name] = float(
                np.mean(
                    [
                        score_partitions(spaces[s], {name: labels}, criterion=criterion, random_state=random_state)[
                            name
                        ]
                        for s in where
                    ]
                )
            )
    return values


def _pretrained_candidates(
    model, encoder, texts, num_clusters: int, trainer, seed: int
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """k-means and UMAP k-means on the pretrained encoder's embeddings (pooled and cut as the signals' models)."""
    keys = ("pooling", "normalize_embeddings", "max_length")
    embedder = TextClusteringPreTrainedModel.from_encoder_pretrained(
        encoder, num_clusters=num_clusters, **{k: getattr(model.config, k) for k in keys if hasattr(model.config, k)}
    ).to(model.device)
    embeddings = embedder.embed(
        texts, batch_size=trainer.encode_batch_size, show_progress_bar=False, precision=trainer.precision
    )
    partitions, _ = candidate_partitions(embedder, embeddings, candidates=PRETRAINED_CANDIDATES, random_state=seed)
    named = {f"{PRETRAINED}/{name}": labels for name, labels in partitions.items()}
    return named, partition_features(embedder, embeddings)


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
    fits = {
        signal: refine_partition(features[signal], labels, num_clusters=k, max_rounds=0, random_state=seed)
        for signal in results
    }
    # faithfulness: the share of texts whose cluster the head keeps (1 - what distilling it changed)
    signal = max(fits, key=lambda s: (-fits[s].changed, -list(fits).index(s)))
    apply_partition(results[signal].model, served, fits[signal])
    return signal, fits[signal].predict(features[signal]), 1.0 - fits[signal].changed


def save_candidates(output_dir: str | os.PathLike, partitions: Mapping[str, np.ndarray], record: Mapping) -> None:
    """Write every candidate's partition of the training texts (int32, one per text) to :data:`CANDIDATES_FILE`,
    with ``texts_sha1`` and ``num_train_texts`` of ``record`` in its metadata (safetensors: no pickle)."""
    from safetensors.numpy import save_file

    tensors = {name: np.ascontiguousarray(np.asarray(labels, dtype=np.int32)) for name, labels in partitions.items()}
    metadata = {"texts_sha1": str(record["texts_sha1"]), "num_train_texts": str(record["num_train_texts"])}
    path = os.path.join(output_dir, CANDIDATES_FILE)
    save_file(tensors, f"{path}.tmp", metadata=metadata)
    os.replace(f"{path}.tmp", path)


def read_candidates(model_dir: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict[str, str]] | None:
    """The candidates a run kept (:data:`CANDIDATES_FILE`): (name -> partition of its training texts, metadata with
    ``texts_sha1`` and ``num_train_texts``), or None when the folder has none.

    Example:
        >>> partitions, meta = read_candidates("runs/auto-so")    # doctest: +SKIP
        >>> sorted(partitions)[:2], meta["num_train_texts"]       # doctest: +SKIP
        (['consensus', 'contrastive/head'], '20000')
    """
    from safetensors import safe_open

    path = os.path.join(os.fspath(model_dir), CANDIDATES_FILE)
    if not os.path.isfile(path):
        return None
    with safe_open(path, framework="numpy") as f:
        metadata = dict(f.metadata() or {})
        partitions = {name: f.get_tensor(name).astype(np.int64) for name in f.keys()}  # noqa: SIM118 - a safetensors file is not iterable
    return partitions, metadata


def texts_match(texts: Sequence[str], metadata: Mapping[str, str]) -> bool:
    """Whether ``texts`` are the training texts a kept candidates file describes (same count and digest)."""
    return str(len(texts)) == metadata.get("num_train_texts") and _texts_sha1(texts) == metadata.get("texts_sha1")


def serve_kept_candidate(
    model: TextClusteringPreTrainedModel,
    model_dir: str | os.PathLike,
    texts: Sequence[str],
    name: str,
    *,
    embeddings: np.ndarray | None = None,
    random_state: int = 0,
) -> ServingChoice:
    """Make ``model`` serve candidate ``name`` that a ``train --method auto`` run kept in ``model_dir``, without
    training: a linear head on the model's embeddings fitted to that partition of ``texts`` (the run's training
    texts), as refinement fits one with no rounds.

    Args:
        model: the run's saved model (changed in place; calibrate it again afterwards).
        model_dir: the run's folder (its :data:`CANDIDATES_FILE`).
        texts: the run's training texts, in the order it trained on them.
        name: a kept candidate (see ``training_run.json``'s ``auto.candidates``).
        embeddings: ``model.embed(texts)`` when already computed.
        random_state: seed of the head's fit.

    Returns:
        A :class:`~hf_textcluster.choosing.serving.ServingChoice` (``criterion`` None: the candidate was asked for).

    Raises:
        ValueError: the folder keeps no candidates, ``name`` is not one of them, or ``texts`` are not the texts
            they partition.

    Example:
        >>> choice = serve_kept_candidate(model, "runs/auto", texts, "self_training/kmeans")   # doctest: +SKIP
    """
    kept = read_candidates(model_dir)
    if kept is None:
        raise ValueError(
            f"{os.fspath(model_dir)} keeps no candidate partitions ({CANDIDATES_FILE}): only a `train --method auto` "
            f"run keeps them; pass --serve auto or one of {', '.join(CANDIDATES)}."
        )
    partitions, metadata = kept
    partitions.pop(SERVED_KEY, None)
    if name not in partitions:
        raise ValueError(f"`serve` {name!r} is not a kept candidate; pass one of {', '.join(partitions)}.")
    if not texts_match(texts, metadata):
        raise ValueError(
            f"The kept candidates partition the run's {metadata.get('num_train_texts')} training texts; --input holds "
            f"{len(texts)} other texts. Pass the texts the run trained on, in the same order."
        )
    if embeddings is None:
        embeddings = model.embed(list(texts), show_progress_bar=False)
    features = partition_features(model, embeddings)
    fit = refine_partition(
        features, partitions[name], num_clusters=model.config.num_clusters, max_rounds=0, random_state=random_state
    )
    apply_partition(model, name, fit)
    return ServingChoice(
        served=name,
        criterion=None,
        scores={},
        labels=fit.predict(features),
        candidates={name: partitions[name]},
        serving=fit,
    )


def check_kept_candidate(model_dir: str | os.PathLike, name: str) -> None:
    """One clear error unless ``model_dir`` keeps candidate ``name`` (:data:`CANDIDATES_FILE`)."""
    kept = read_candidates(model_dir) if os.path.isdir(os.fspath(model_dir)) else None
    if kept is None:
        raise ValueError(
            f"--serve {name!r} is not one of auto, {', '.join(CANDIDATES)}, and {os.fspath(model_dir)} keeps no "
            f"candidate partitions ({CANDIDATES_FILE}, written by `train --method auto`)."
        )
    names = [n for n in kept[0] if n != SERVED_KEY]
    if name not in names:
        raise ValueError(
            f"--serve {name!r} is not a kept candidate of {os.fspath(model_dir)}; pass one of {', '.join(names)}."
        )


def keep_candidates(
    model_dir: str | os.PathLike, output_dir: str | os.PathLike, texts: Sequence[str], served_labels: np.ndarray
) -> None:
    """After the model of ``model_dir`` was made to serve another partition and saved to ``output_dir``: keep its
    candidates there too, with the served clusters of the training texts updated (dropped when ``texts`` are other
    texts, which the candidates do not partition)."""
    kept = read_candidates(model_dir)
    if kept is None:
        return
    partitions, metadata = kept
    partitions.pop(SERVED_KEY, None)
    if texts_match(texts, metadata):
        partitions[SERVED_KEY] = np.asarray(served_labels)
    save_candidates(output_dir, partitions, metadata)
