"""The steps of a training run after ``trainer.train()``: choose what the model serves, calibrate it and check its
clusters (:func:`finish_training`), score it, name its clusters, and write the run folder (the model,
``training_run.json``, the trainer's log history), removing the checkpoints it no longer needs."""

from __future__ import annotations

import os
import shutil
import time

from transformers.utils import logging

from ..choosing.serving import serve_chosen_partition
from ..data import benchmark_corpus
from ..representation import ClusterNames, assign_texts, name_clusters
from ..representation.summary import assign_embeddings
from ..reuse import reusing_results
from ..timing import phase
from .folder import RunFolder

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


def name_trained_clusters(model, trainer, train_dataset, seed: int) -> ClusterNames | None:
    """The clusters' names on the training texts (a seeded sample of at most 10,000), once the served partition was
    chosen: predict, the pipeline, the report and the card then answer names. Every training text's cluster and
    confidence (``ClusterNames.assignments``, saved by :func:`save_run`) give the summary saved with the model (sizes,
    mean confidence, keywords and representative texts: ``model.cluster_info()``); they come from the encoding pass of
    :func:`finish_training` when it made one (``trainer.train_assignments``), else from a pass of their own. None
    before k-means initialised the clusters, and in every process but the main one."""
    if not (model.config.centroids_initialized and trainer.is_world_process_zero()):
        return None
    texts = list(train_dataset["text"])
    assignments = getattr(trainer, "train_assignments", None)  # from finish_training's pass, when it made one
    if assignments is None or len(assignments.clusters) != len(texts):
        assignments = assign_texts(model, texts, batch_size=trainer.encode_batch_size, precision=trainer.precision)
    return name_clusters(
        model,
        texts,
        random_state=seed,
        batch_size=trainer.encode_batch_size,
        precision=trainer.precision,
        assignments=assignments,
    )


def save_run(
    output_dir: str,
    model,
    trainer,
    train_dataset,
    test_dataset,
    record: dict,
    keep_checkpoints: bool,
    assignments=None,
) -> None:
    """Save the model, ``training_run.json`` (from ``record``), the training texts' clusters (``assignments``:
    :data:`~hf_textcluster.runs.folder.ASSIGNMENTS_FILE`, when known) and the trainer's log history into
    ``output_dir``; then remove the checkpoints unless ``keep_checkpoints``. Called in the main process only."""
    model.save_pretrained(output_dir)
    _write_training_run(output_dir, model, trainer, train_dataset, test_dataset, record)
    if assignments is not None:
        RunFolder(output_dir).write_assignments(assignments)
    # the log history (losses, health checks) stays beside the model for `plot`, whatever happens to checkpoints
    trainer.state.save_to_json(os.path.join(output_dir, "trainer_state.json"))
    if not keep_checkpoints:  # the model is saved: checkpoints only served to resume this run
        remove_checkpoints(output_dir)


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
    """``training_run.json``: what ``card`` / ``push`` and the benchmark read back (see
    :func:`~hf_textcluster.runs.folder.read_training_run`)."""
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
        "seconds": record["seconds"],
    }
    RunFolder(output_dir).write_training_run(run_info)
