"""The steps of a training run after ``trainer.train()``: choose what the model serves, calibrate it and check its
clusters (:func:`finish_training`), score it, name its clusters, and write the run folder (the model,
``training_run.json``, the trainer's log history), removing the checkpoints it no longer needs."""

from __future__ import annotations

import os
import shutil
import time

from transformers.utils import logging

from ..choosing.serving import serve_chosen_partition
from ..representation import ClusterNames, assign_texts, name_clusters
from ..representation.ctfidf import set_keyword_vectorizer
from ..representation.summary import assign_embeddings, mark_outliers
from ..reuse import reusing_results
from ..timing import phase
from .record import RunRecord
from .saving import save_model_folder

logger = logging.get_logger(__name__)


def finish_training(trainer) -> None:
    """The steps after ``trainer.train()``, in the order :func:`~hf_textcluster.runs.api.train_clusterer` runs
    them: choose what the model serves (``args.serve``:
    :func:`~hf_textcluster.choosing.serving.serve_chosen_partition`), calibrate its confidence and outlier distances
    (``trainer.calibrate_model``), and check that its clusters did not collapse (``trainer.check_final_health``). For
    a user who trains with a method's Trainer directly. When a choice was made, its encoding pass over the training
    texts also gives calibration its sample and the training texts' clusters and confidence
    (``trainer.train_assignments``, which naming and the saved summary of the clusters read): one pass, not three.

    Args:
        trainer: a :class:`~hf_textcluster.training.trainer.ClusteringTrainer` that has trained.

    Example:
        >>> trainer = SCCLTrainer(model=model, args=args, train_dataset=train)  # doctest: +SKIP
        >>> trainer.train()  # doctest: +SKIP
        >>> finish_training(trainer)  # doctest: +SKIP
        >>> model.save_pretrained("runs/mine")  # doctest: +SKIP
    """
    trainer.train_assignments = None
    with reusing_results():  # choosing encoded the training texts: calibrating takes its sample from that pass
        chosen = serve_chosen_partition(trainer) is not None
        embeddings = trainer.embed_train_texts() if chosen else None
        trainer.calibrate_model(embeddings=embeddings)
    if embeddings is not None:  # the training texts' clusters and confidence, for naming: from the same pass
        trainer.train_assignments = assign_embeddings(trainer.model, embeddings)
    trainer.check_final_health()


def train_and_finish(trainer, last_checkpoint: str | None, evaluate: bool) -> tuple[dict, float]:
    """Train (resuming from ``last_checkpoint``) and finish (``finish_training``), then evaluate: (metrics, training
    seconds without calibration)."""
    if last_checkpoint:
        logger.warning(f"Resuming from {last_checkpoint}.")
    start = time.perf_counter()
    with phase("train"):
        trainer.train(resume_from_checkpoint=last_checkpoint)
    with phase("finish"):
        finish_training(trainer)
    train_seconds = time.perf_counter() - start - trainer.calibration_seconds
    metrics = {"train_seconds": round(train_seconds, 2)}
    if trainer.calibration_seconds:
        metrics["calibration_seconds"] = round(trainer.calibration_seconds, 2)
    if evaluate:
        with phase("evaluate"):
            metrics.update(trainer.evaluate())
    return metrics, train_seconds


def name_trained_clusters(model, trainer, train_dataset, request) -> ClusterNames | None:
    """The clusters' names on the training texts (a seeded sample of at most 10,000), once the served partition was
    chosen: predict, the pipeline, the report and the card then answer names. Every training text's cluster and
    confidence (``ClusterNames.assignments``, saved by :func:`save_run`) give the summary saved with the model (sizes,
    mean confidence, keywords and representative texts: ``Clusterer.cluster_info()``); they come from the encoding
    pass of :func:`finish_training` when it made one (``trainer.train_assignments``), else from a pass of their own.
    None unless ``request`` (a :class:`~hf_textcluster.runs.request.TrainingRequest`) asks for names, before k-means
    initialised the clusters, and in every process but the main one. With ``request.outliers``, the model flags
    outliers from now on and the outliers of the training texts are -1."""
    model.config.flag_outliers = request.outliers
    if not (request.name_clusters and model.config.centroids_initialized and trainer.is_world_process_zero()):
        return None
    set_keyword_vectorizer(model.config, request.keywords)
    texts = list(train_dataset["text"])
    encoding = trainer.encode_options
    assignments = getattr(trainer, "train_assignments", None)  # from finish_training's pass, when it made one
    if assignments is None or len(assignments.clusters) != len(texts):
        assignments = assign_texts(model, texts, **encoding)
    assignments = mark_outliers(model, assignments)  # those of finish_training's pass were made before the flag
    return name_clusters(model, texts, random_state=request.seed, assignments=assignments, **encoding)


def save_run(output_dir: str, model, trainer, run: RunRecord, keep_checkpoints: bool, assignments=None) -> None:
    """Save the model, ``training_run.json`` (``run``), the training texts' clusters (``assignments``, when known)
    and the trainer's log history (for ``plot``, whatever happens to checkpoints) into ``output_dir``, all at once
    (:func:`~hf_textcluster.runs.saving.save_model_folder`); then remove the checkpoints unless
    ``keep_checkpoints``. Called in the main process only."""
    save_model_folder(output_dir, model=model, run=run, assignments=assignments, trainer_state=trainer.state)
    if keep_checkpoints:
        return
    for name in sorted(os.listdir(output_dir)):  # the model is saved: checkpoints only served to resume this run
        path = os.path.join(output_dir, name)
        if name.startswith("checkpoint-") and name[len("checkpoint-") :].isdigit() and os.path.isdir(path):
            shutil.rmtree(path)
