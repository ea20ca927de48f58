"""The trainer's callbacks: label-free cluster health checks during training, the checkpoints' time, and stopping
cleanly on an interrupt (SIGINT, SIGTERM); ``MethodCallback``, the base of a method's own callbacks."""

from __future__ import annotations

import contextlib
import time
import weakref

import numpy as np
from transformers import TrainerCallback
from transformers.utils import logging

from ..timing import add_seconds, phase

logger = logging.get_logger(__name__)


class MethodCallback(TrainerCallback):
    """A callback that acts on the trainer that adds it (the health checks; a method's targets and stages, named in
    ``ClusteringTrainer.method_callbacks``), through a weak reference (``self._trainer()``, None once the trainer is
    gone), since the trainer holds its callbacks."""

    def __init__(self, trainer):  # any ClusteringTrainer subclass: its callback reads that subclass's attributes
        self._trainer = weakref.ref(trainer)


def final_health_check(trainer) -> dict | None:
    """The trainer's ``check_final_health``: its served clusters of a seeded sample of ``health_sample_size`` training
    texts, kept as ``trainer.final_health``, with a warning when they collapsed (fewer than half of them used, or one
    holding 90% of the texts); None where it does not run (``health_check_steps=0``, no texts, no clusters yet, a
    process other than the main one)."""
    args, model = trainer.args, trainer.model
    if (
        getattr(args, "health_check_steps", None) == 0
        or trainer.train_dataset is None
        or not model.config.centroids_initialized
        or not trainer.accelerator.is_main_process
    ):
        return None
    _, texts = trainer.sample_train_texts(getattr(args, "health_sample_size", 1000))
    size, k = len(texts), model.config.num_clusters
    counts = np.bincount(model.predict(texts, show_progress_bar=False, **trainer.encode_options), minlength=k)
    health = {"clusters_used": int((counts > 0).sum()), "largest_share": float(counts.max() / size)}
    trainer.final_health = health
    if health["clusters_used"] < k / 2 or health["largest_share"] >= 0.9:
        logger.warning(
            f"The trained model puts {100 * health['largest_share']:.0f}% of {size} training texts (a seeded sample) "
            f"in one cluster and uses {health['clusters_used']} of its {k} clusters: its clusters collapsed. Compare "
            "it with k-means on its embeddings (`hf-textcluster recluster`), or train again with more steps, a lower "
            "head learning rate or another seed."
        )
    return health


class ClusterHealthCallback(MethodCallback):
    """Every ``health_check_steps``, predicts a seeded sample of training texts with the head and logs
    ``health_agreement`` (NMI with the initial k-means on the same texts), ``health_size_entropy`` (entropy of the
    cluster sizes / log K; 1 = equal sizes), ``health_clusters_used`` and ``health_changed`` (share of the texts whose
    cluster changed since the previous check). Warns once when the clusters collapse (fewer than half of them used,
    the size entropy below 3/4 of the k-means start's, or agreement below 0.3) and, with ``early_stopping_tol``,
    stops when fewer texts than that changed cluster. No labels are used."""

    sample: np.ndarray | None = None  # the checked texts' rows
    previous: np.ndarray | None = None  # their clusters at the previous check
    warned = False

    def on_step_end(self, args, state, control, **kwargs):
        trainer, interval = self._trainer(), getattr(args, "health_check_steps", None)
        interval = max(1, (state.max_steps or 0) // 10) if interval is None else interval
        if trainer is None or not interval or state.global_step % interval or trainer.train_dataset is None:
            return
        model = trainer.model
        if not model.config.centroids_initialized or trainer.initial_kmeans_labels is None:
            return  # the head is not trained yet (a first stage without it) or there is no k-means start
        with phase("health"):
            self._check(trainer, model, args, state, control)

    def _check(self, trainer, model, args, state, control) -> None:
        if self.sample is None:
            self.sample, self.texts = trainer.sample_train_texts(getattr(args, "health_sample_size", 1000))
        predicted = trainer.head_predictions(self.texts)
        k, reference = model.config.num_clusters, trainer.initial_kmeans_labels[self.sample]
        entry = {"step": state.global_step, **cluster_health(predicted, reference, k)}
        if self.previous is not None:
            entry["changed"] = float((predicted != self.previous).mean())
        self.previous = predicted
        trainer.health_history.append(entry)
        # shown with the next loss log (logging from inside on_step_end would swallow the Trainer's own log)
        trainer._pending_logs.update({f"health_{k}": round(v, 4) for k, v in entry.items() if k != "step"})
        start = cluster_health(reference, reference, k)
        collapsed = (
            entry["clusters_used"] < k / 2
            or entry["size_entropy"] < 0.75 * start["size_entropy"]
            or entry["agreement"] < 0.3
        )
        if collapsed and not self.warned:
            self.warned = True
            logger.warning(
                f"The clusters may be collapsing at step {state.global_step}: on {len(self.sample)} training texts the "
                f"head uses {int(entry['clusters_used'])} of {k} clusters, size entropy {entry['size_entropy']:.2f} "
                f"(k-means start {start['size_entropy']:.2f}), agreement with the initial k-means NMI "
                f"{entry['agreement']:.2f}. The trained head may end below plain k-means: compare it with k-means on "
                "the trained embeddings, and consider fewer steps, a lower head learning rate or --early-stopping-tol."
            )
        tol = getattr(args, "early_stopping_tol", None)
        if tol is not None and entry.get("changed", 1.0) < tol:
            logger.warning(
                f"Early stopping at step {state.global_step}: {100 * entry['changed']:.2f}% of the checked "
                f"texts changed cluster since the last check (< early_stopping_tol={tol})."
            )
            control.should_training_stop = True


def cluster_health(predicted: np.ndarray, reference: np.ndarray, num_clusters: int) -> dict[str, float]:
    """Label-free health of a clustering: NMI with ``reference`` (the initial k-means), the entropy of the cluster
    sizes over log K, and how many clusters are used."""
    from ..evaluation.metrics import normalized_mutual_info

    counts = np.bincount(np.asarray(predicted), minlength=num_clusters).astype(float)
    share = counts[counts > 0] / counts.sum()
    return {
        "agreement": float(normalized_mutual_info(reference, predicted)),
        "size_entropy": max(0.0, float(-(share * np.log(share)).sum() / np.log(num_clusters))),
        "clusters_used": float((counts > 0).sum()),
    }


class CheckpointTimeCallback(TrainerCallback):
    """Times the checkpoints as the run's ``checkpoints`` phase (:mod:`hf_textcluster.timing`): from the end of a step
    that saves to the Trainer's ``on_save``. Added after the callbacks that decide to save."""

    _start: float | None = None

    def on_step_end(self, args, state, control, **kwargs):
        self._start = time.perf_counter() if control.should_save else None

    def on_save(self, args, state, control, **kwargs):
        if self._start is not None:
            add_seconds("checkpoints", time.perf_counter() - self._start)
            self._start = None


class StopOnInterruptCallback(TrainerCallback):
    """After SIGINT / SIGTERM (Ctrl-C, a scheduler's kill), or once a time budget is spent (:meth:`stopping_at`),
    finish the current step, save a checkpoint and stop (within ``handling_signals()``)."""

    received: int | str | None = None  # the signal received, or "time budget"
    deadline: float | None = None  # time.monotonic() past which every training stops, as after Ctrl-C

    @classmethod
    @contextlib.contextmanager
    def stopping_at(cls, deadline: float | None):
        """Within the block, every training stops after the step that ends past ``deadline`` (``time.monotonic()``;
        None: never), with a checkpoint to resume from, and ``train()`` raises ``KeyboardInterrupt`` as after
        Ctrl-C."""
        cls.deadline = deadline
        try:
            yield
        finally:
            cls.deadline = None

    def on_step_end(self, args, state, control, **kwargs):
        if self.received is None and self.deadline is not None and time.monotonic() >= self.deadline:
            self.received = "time budget"
        if self.received is not None:
            control.should_save = True
            control.should_training_stop = True
        if state.max_steps and state.global_step >= state.max_steps and args.save_strategy == "steps":
            # the last step is always a checkpoint: a run killed during the final calibration, or started again
            # once finished, resumes there instead of training again
            control.should_save = True

    @contextlib.contextmanager
    def handling_signals(self):
        """The first SIGINT / SIGTERM stops training after the current step, with a checkpoint (this callback asks the
        Trainer for both); a second one stops at once. (Only in the main thread, where Python delivers signals.)"""
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self.received = None

        def handler(signum, frame):
            if self.received is not None:
                raise KeyboardInterrupt
            self.received = signum
            logger.warning("Stopping after this step and saving a checkpoint (interrupt again to stop at once).")

        previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)
