"""The clusterer the default ``train`` saves first, before training anything: the BERTopic way (UMAP -> k-means on the
pretrained encoder's embeddings), served by a linear head on those embeddings, calibrated and named.

It takes about the BERTopic way's own time (one encoding pass, UMAP and k-means, a logistic regression), so a user
has a complete model within a minute; :func:`~hf_textcluster.runs.auto.train_auto` then trains for better clusters
and replaces it only when the label-free choice and its guard confirm a trained candidate. Its two partitions
(``pretrained/kmeans`` and ``pretrained/umap_kmeans``) are the pretrained candidates of that choice: computed once.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace

import datasets
import numpy as np
import torch

from ..choosing.candidate_choice import BERTOPIC_WAY
from ..choosing.criteria import PRETRAINED
from ..choosing.serving import apply_partition, candidate_partitions, partition_features
from ..editing.clusters import init_clusters_from_kmeans, initialize_clusters
from ..encoders import resolve_encoder
from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..models import get_method
from ..models.building import from_encoder_pretrained
from ..representation import ClusterNames, name_clusters
from ..representation.ctfidf import set_keyword_vectorizer
from ..representation.summary import assign_embeddings
from ..reuse import embed
from ..training.collator import READING_LENGTHS, reading_length
from .cluster_count import EMBEDDING_CONFIG_KEYS, check_cluster_count, choose_k
from .folder import RunFolder
from .recipes import load_recipe
from .record import AutoRun, RunRecord, Stopped, texts_sha1
from .request import TrainingRequest
from .saving import SERVED_KEY, SIGNALS_DIR, save_model_folder, write_record
from .signals import PRETRAINED_CANDIDATES, describe_partition

__all__ = ["FirstModel", "TrainingStopped", "calibrate_and_name", "save_first_model", "unfinished"]


@dataclass
class FirstModel:
    """What :func:`save_first_model` made and saved.

    Attributes:
        model: the pretrained encoder's model, serving ``served``, calibrated and named.
        served: the partition it serves (``pretrained/umap_kmeans``; ``pretrained/kmeans`` when UMAP could not run).
        labels: the training texts' clusters as it serves them (``served``'s partition: its head's argmax).
        candidates: the pretrained candidates (``pretrained/kmeans``, ``pretrained/umap_kmeans``).
        features: the pretrained encoder's space they were made in.
        k_selection: with ``num_clusters="auto"``, how K was chosen (on the pretrained embeddings).
        cluster_names: the served clusters' names, or None with ``name_clusters=False``.
        seconds: from the start of the run to the saved model.
    """

    model: object
    served: str
    labels: np.ndarray
    candidates: dict[str, np.ndarray]
    features: np.ndarray
    k_selection: dict | None
    cluster_names: ClusterNames | None
    seconds: float

    def describe(self) -> str:
        """The partition it serves, in words."""
        return describe_partition(self.served)


def encoding_options(overrides: dict) -> dict:
    """The batch size and precision of the encoding passes the signals' training will take, before any Trainer
    exists: ``train --precision`` sets bf16 / fp16, else the hardware decides (``"auto"``)."""
    bf16 = overrides.get("bf16")
    precision = "bf16" if bf16 else "fp16" if overrides.get("fp16") else "fp32" if bf16 is False else "auto"
    return {"batch_size": overrides.get("encode_batch_size") or DEFAULT_ENCODE_BATCH_SIZE, "precision": precision}


def save_first_model(
    request: TrainingRequest,
    train_dataset: datasets.Dataset,
    method: str,
    overrides: dict,
    calibration: int,
    started: float,
) -> FirstModel:
    """Fit the BERTopic way on the pretrained encoder's embeddings of ``train_dataset``'s texts, make a ``method``
    model (its head: the pretrained k-means centres) serve it, calibrate it on ``calibration`` texts, name its
    clusters, and save it in ``request.output_dir`` with its candidates and run record (unless ``save=False``).

    Args:
        request: the run's options (encoder, K, seed, what to save).
        train_dataset: the texts every signal will train on (held-out texts removed).
        method: the method whose model class and pooling the served model takes (the first signal's).
        overrides: the run's training overrides (``encode_batch_size`` and the precision are read).
        calibration: the calibration sample's size (0: not calibrated).
        started: ``time.perf_counter()`` at the start of the run, for ``seconds``.

    Returns:
        A :class:`FirstModel`.
    """
    texts, seed = list(train_dataset["text"]), request.seed
    config = load_recipe(method, request.recipe)["config"]
    pooling = {k: config[k] for k in EMBEDDING_CONFIG_KEYS if k in config}
    count = check_cluster_count(request.num_clusters, train_dataset)
    model_class = get_method(method).model_class
    device = "cuda" if torch.cuda.is_available() else "cpu"
    k = count.k_min if count.is_auto else count.num_clusters
    model = from_encoder_pretrained(model_class, request.encoder, num_clusters=k, **pooling).to(device)
    # long texts (news, abstracts) are read whole, short ones to 32 tokens: the texts decide
    pooling["max_length"] = model.config.max_length = reading_length(
        texts, model.tokenizer, _encoder_limit(request.encoder, model.config), seed=seed
    )
    encoding = encoding_options(overrides)
    embeddings = embed(model, texts, show_progress_bar=False, **encoding)
    features = partition_features(model, embeddings)
    k_selection = None
    if count.is_auto:  # chosen once, on the pretrained embeddings; every signal trains this K
        k_selection = choose_k(count, features, seed)
        model = from_encoder_pretrained(
            model_class, request.encoder, num_clusters=k_selection["num_clusters"], **pooling
        ).to(device)
    partitions, how = candidate_partitions(
        model, embeddings, candidates=PRETRAINED_CANDIDATES, random_state=seed, features=features
    )
    # the head an untrained model of the method starts from: the k-means centres on these embeddings
    if "kmeans" in how:
        init_clusters_from_kmeans(model, how["kmeans"])
    else:
        initialize_clusters(model, embeddings=embeddings, random_state=seed)
    if "umap_kmeans" in how:
        served, fit = BERTOPIC_WAY, how["umap_kmeans"]
        apply_partition(model, served, fit)
        labels = fit.labels
    else:  # too few texts for UMAP
        served, labels = f"{PRETRAINED}/kmeans", partitions["kmeans"]
        model.config.served_partition = served
    names = calibrate_and_name(model, texts, embeddings, request, calibration, encoding)
    candidates = {f"{PRETRAINED}/{name}": labels for name, labels in partitions.items()}
    first = FirstModel(model, served, labels, candidates, features, k_selection, names, 0.0)
    if request.save:
        _save(request, first, texts, method, started)
    first.seconds = time.perf_counter() - started
    return first


def _encoder_limit(encoder, config) -> int:
    """The most tokens ``encoder`` reads: its sentence-transformers ``max_seq_length``, else its positions."""
    return (
        resolve_encoder(encoder).max_length
        or getattr(config.encoder, "max_position_embeddings", None)
        or READING_LENGTHS[0]
    )


def calibrate_and_name(model, texts, embeddings, request: TrainingRequest, calibration: int, encoding: dict):
    """Calibrate the pretrained encoder's ``model`` on ``calibration`` of ``texts`` (0: not at all) and name the
    clusters it serves (None unless ``request.name_clusters``), both from its ``embeddings`` of the texts: what it
    serves changed (the first save, or a cached objective's candidate served by it). With ``request.outliers`` the
    model flags outliers (-1 in the named assignments)."""
    seed = request.seed
    model.config.flag_outliers = request.outliers
    if calibration:
        model.calibrate(texts, sample_size=calibration, random_state=seed, embeddings=embeddings, **encoding)
    set_keyword_vectorizer(model.config, request.keywords)  # what every later command counts keywords with
    if not request.name_clusters:
        return None
    assignments = assign_embeddings(model, embeddings)
    return name_clusters(model, texts, random_state=seed, assignments=assignments, **encoding)


def unfinished(output_dir: str) -> bool:
    """Whether ``output_dir`` holds a default run that saved its first model and has not finished training (its
    signals' folder is there, and its record has no choice yet): running it again resumes it."""
    auto = (RunFolder(output_dir).read_record() or RunRecord()).auto or {}
    return os.path.isdir(os.path.join(output_dir, SIGNALS_DIR)) and "choice" not in auto


def _save(request: TrainingRequest, first: FirstModel, texts, method: str, started: float) -> None:
    """The model, its candidates, the training texts' clusters and ``training_run.json`` (last: with the seconds
    from the start of the run to the saved model) in ``request.output_dir``, all at once
    (:func:`~hf_textcluster.runs.saving.save_model_folder`); and the signals' folder, which makes the run one to
    resume (:func:`unfinished`) until it has finished."""
    out = request.output_dir
    os.makedirs(os.path.join(out, SIGNALS_DIR), exist_ok=True)
    digest = {"num_train_texts": len(texts), "texts_sha1": texts_sha1(texts)}
    names = first.cluster_names

    def run() -> RunRecord:
        seconds = round(time.perf_counter() - started, 1)
        history = [{"served": first.served, "seconds": seconds, "by": "first save"}]
        return RunRecord(
            method=method,
            **request.record(),
            encoder=first.model.config.name_or_path,
            k_selection=first.k_selection or None,
            serving={"served": first.served, "criterion": None, "scores": {}},
            auto={**digest, "first_save_seconds": seconds, "served_history": history},
            metrics={},
        )

    save_model_folder(
        out,
        model=first.model,
        run=run,
        assignments=names.assignments.clusters if names is not None else first.labels,
        candidates=({**first.candidates, SERVED_KEY: first.labels}, digest),
    )


class TrainingStopped(KeyboardInterrupt):
    """Training stopped (Ctrl-C, or ``time_budget`` spent) after the first model was saved: it stays the served model,
    and running the same command again resumes training from the signals' checkpoints. ``budget_spent``: stopped by
    the time budget (not an interrupt)."""

    def __init__(self, message: str, budget_spent: bool):
        super().__init__(message)
        self.budget_spent = budget_spent

    @classmethod
    def after(cls, first: FirstModel, request: TrainingRequest, deadline: float | None, err) -> TrainingStopped:
        """The stop of a run whose training raised ``err``, recorded in its ``training_run.json``."""
        budget_spent = deadline is not None and time.monotonic() >= deadline
        why = f"The time budget ({request.time_budget:g}s) is spent" if budget_spent else "Interrupted"
        kept = "nothing is saved (save=False)"
        if request.save:
            kept = f"{request.output_dir} keeps the clusterer saved first ({first.describe()})"
            folder = RunFolder(request.output_dir)
            run = folder.read_record() or RunRecord()
            run.auto = replace(run.auto or AutoRun(), stopped=Stopped("time budget" if budget_spent else "interrupt"))
            write_record(folder.path, run)
        detail = str(err).replace("Interrupted at step", "Training stopped at step") or "Training stopped at once"
        return cls(f"{why}: {kept}. {detail}", budget_spent)
