"""ClusteringTrainer: the Trainer shared by all clusterers (text collation, two learning rates, k-means
initialisation before the first step, clustering evaluation from the head and from k-means on embeddings)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from transformers import Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from transformers.utils import logging

from ..choosing.serving import apply_partition, check_serve, serve_partition
from ..distributed import sharded_passes
from ..evaluation.metrics import load_clustering_metric
from ..modeling.kmeans import DEFAULT_KMEANS_MAX_SAMPLES, KMEANS_INITS, fit_kmeans
from ..modeling.modeling_utils import DEFAULT_ENCODE_BATCH_SIZE
from ..modeling.precision import autocast_dtype, cpu_capability, native_bf16
from ..modeling.validation import check_num_clusters, clip_text
from .progress import install_progress_callbacks

logger = logging.get_logger(__name__)


# The encoding passes' batch on a GPU: MiniLM-sized encoders on 32-token texts keep a GPU busy from about here.
GPU_ENCODE_BATCH_SIZE = 1024


@dataclass
class ClusteringTrainingArguments(TrainingArguments):
    """``TrainingArguments`` plus what clustering training needs. ``remove_unused_columns`` defaults to False:
    the datasets hold raw text columns that the collator tokenizes. ``bf16=None`` (the default) chooses bf16
    autocast only where the hardware runs it natively.

    Attributes:
        head_learning_rate: learning rate of the heads and centroids (default: 100 x ``learning_rate``, as in SCCL).
        kmeans_n_init: k-means restarts (initialisation and evaluation).
        kmeans_max_samples: k-means centres are fitted on a seeded sample of at most this many texts, then every
            text is assigned to its nearest centre (``None``: all texts).
        kmeans_init: how the initialisation's k-means starts: ``"best"`` (default: the lower inertia of k-means++ and
            a run started from the UMAP clusters), ``"k-means++"`` (the papers') or ``"umap"`` (see
            :func:`~hf_textcluster.modeling.kmeans.fit_kmeans`).
        eval_kmeans: also evaluate k-means on the learned embeddings (the SCCL paper's protocol).
        pad_to_max_length: pad every batch to ``max_length`` instead of its longest text.
        encode_batch_size: batch size of the encoding passes (default 128 on a CPU, 1024 on a GPU).
        health_check_steps: check the clusters every this many steps (default: ~10 checks per run; 0: never).
        health_sample_size: how many training texts (a seeded sample) the cluster checks predict.
        calibration_sample_size: training texts the model's confidence is calibrated on at the end (0: do not).
        serve: what the trained model serves: ``"auto"`` (default: the label-free choice of
            :mod:`~hf_textcluster.choosing.serving` among its head, k-means and UMAP k-means on its embeddings, each
            refined or not), ``"head"`` (the paper's output) or another candidate by name.
        early_stopping_tol: stop when fewer than this share of the checked texts changed cluster since the
            previous check (DEC's criterion, e.g. 0.001; off by default).

    Example:
        >>> args = ClusteringTrainingArguments(output_dir="runs/sccl", max_steps=300, per_device_train_batch_size=64,
        ...                                    learning_rate=1e-5, head_learning_rate=1e-3)  # doctest: +SKIP
    """

    head_learning_rate: float | None = field(
        default=None,
        metadata={"help": "Learning rate of the heads and centroids (default: 100 x learning_rate, as in SCCL)."},
    )
    kmeans_n_init: int = field(default=10, metadata={"help": "k-means restarts (initialisation and evaluation)."})
    kmeans_max_samples: int | None = field(
        default=DEFAULT_KMEANS_MAX_SAMPLES,
        metadata={
            "help": "k-means centres are fitted on a seeded sample of at most this many texts, then every text "
            "is assigned to its nearest centre (bounded time on large corpora; None: all texts)."
        },
    )
    kmeans_init: str = field(
        default="best",
        metadata={
            "help": "How the initialisation's k-means starts: 'best' (the lower inertia of k-means++ and of a "
            "run started from the clusters of k-means on a UMAP reduction; k-means++ alone without umap-learn), "
            "'k-means++' (the papers') or 'umap' (the UMAP clusters' nearest means, no Lloyd's iterations)."
        },
    )
    eval_kmeans: bool = field(
        default=True, metadata={"help": "Also evaluate k-means on the learned embeddings (the SCCL paper's protocol)."}
    )
    pad_to_max_length: bool = field(
        default=False, metadata={"help": "Pad every batch to max_length instead of the longest text (dynamic)."}
    )
    remove_unused_columns: bool = field(default=False, metadata={"help": "Keep raw text columns for the collator."})
    bf16: bool | None = field(
        default=None,
        metadata={
            "help": "bf16 autocast. Default (None) = auto: on where the device runs bf16 natively (a GPU with "
            "bf16, a CPU with AVX-512-BF16 / AMX), off elsewhere (emulated bf16 is 9-30x slower)."
        },
    )
    encode_batch_size: int | None = field(
        default=None,
        metadata={
            "help": "Batch size of the encoding passes (k-means initialisation, targets, evaluation). Default: "
            f"{DEFAULT_ENCODE_BATCH_SIZE} on a CPU, {GPU_ENCODE_BATCH_SIZE} on a GPU."
        },
    )
    health_check_steps: int | None = field(
        default=None,
        metadata={
            "help": "Check the clusters every this many steps (default: ~10 checks per run): the head's "
            "agreement with the initial k-means, the cluster sizes, how many texts changed cluster. 0: never."
        },
    )
    health_sample_size: int = field(
        default=1000, metadata={"help": "How many training texts (a seeded sample) the cluster checks predict."}
    )
    calibration_sample_size: int = field(
        default=10_000,
        metadata={
            "help": "At the end of training, calibrate the model's confidence and outlier distances on a seeded "
            "sample of this many training texts (one encoding pass; see `model.calibrate`). 0: do not."
        },
    )
    serve: str = field(
        default="auto",
        metadata={
            "help": "What the trained model serves: 'auto' (default: the best of its head, k-means and UMAP "
            "k-means on its embeddings, each refined by iterative classification or not, chosen by an internal "
            "criterion, no labels) or one of them by name ('head' keeps the paper's output). See "
            "choosing.serving."
        },
    )
    early_stopping_tol: float | None = field(
        default=None,
        metadata={
            "help": "Stop when fewer than this share of the checked texts changed cluster since the previous "
            "check (DEC's criterion; e.g. 0.001). No labels are used. Default: off."
        },
    )

    def __post_init__(self):
        on_gpu = torch.cuda.is_available() and not self.use_cpu
        if self.bf16 is None:
            self.bf16 = not self.fp16 and native_bf16("cuda" if on_gpu else "cpu")
            self.precision_source = "auto"
        else:
            self.precision_source = "forced"
        if not on_gpu and (self.bf16 or not torch.backends.mps.is_available()):  # an Apple GPU keeps its default
            # TrainingArguments refuses bf16 without a GPU unless told it runs on the CPU, and only then does accelerate
            # count the processes of a CPU `accelerate launch` (gloo)
            self.use_cpu = True
            self.dataloader_pin_memory = False  # pinned host memory only speeds up copies to a GPU
        if self.encode_batch_size is None:  # inference passes: a GPU keeps busy only with far larger batches
            self.encode_batch_size = GPU_ENCODE_BATCH_SIZE if on_gpu else DEFAULT_ENCODE_BATCH_SIZE
        if self.kmeans_init not in KMEANS_INITS:
            raise ValueError(f"`kmeans_init` must be one of {KMEANS_INITS}, got {self.kmeans_init!r}.")
        if (
            isinstance(self.encode_batch_size, bool)
            or not isinstance(self.encode_batch_size, int)
            or self.encode_batch_size < 1
        ):
            raise ValueError(f"`encode_batch_size` must be a positive integer, got {self.encode_batch_size!r}.")
        if self.health_check_steps is not None and (
            not isinstance(self.health_check_steps, int) or self.health_check_steps < 0
        ):
            raise ValueError(
                f"`health_check_steps` must be a whole number >= 0 (0: no checks), got {self.health_check_steps!r}."
            )
        if not isinstance(self.health_sample_size, int) or self.health_sample_size < 2:
            raise ValueError(f"`health_sample_size` must be an integer >= 2, got {self.health_sample_size!r}.")
        if (
            isinstance(self.calibration_sample_size, bool)
            or not isinstance(self.calibration_sample_size, int)
            or self.calibration_sample_size < 0
            or self.calibration_sample_size == 1
        ):
            raise ValueError(
                "`calibration_sample_size` must be 0 (no calibration) or an integer >= 2, got "
                f"{self.calibration_sample_size!r}."
            )
        check_serve(self.serve)
        if self.early_stopping_tol is not None and not 0 < self.early_stopping_tol < 1:
            raise ValueError(
                f"`early_stopping_tol` must be in (0, 1) (a share of texts), got {self.early_stopping_tol!r}."
            )
        super().__post_init__()


def warn_if_truncated(
    texts: Sequence[str], tokenizer, max_length: int, sample_size: int = 5000, seed: int = 0
) -> float:
    """Warn when training texts are longer than ``max_length`` tokens (they are cut); returns the share cut, measured
    on a seeded sample of at most ``sample_size`` texts (tokenizing a million texts only to warn would take minutes)."""
    n = len(texts)
    rows = range(n) if n <= sample_size else np.random.default_rng(seed).choice(n, size=sample_size, replace=False)
    lengths = np.asarray(
        [
            len(ids)
            for ids in tokenizer([clip_text(texts[int(i)], max_length) for i in rows], truncation=False)["input_ids"]
        ]
    )
    share = float((lengths > max_length).mean()) if len(lengths) else 0.0
    if share > 0:
        # a warning from 1% of the texts on (short-text corpora have a few long outliers), a note below that
        (logger.warning if share >= 0.01 else logger.info)(
            f"{100 * share:.1f}% of the training texts{' (in a sample of %d)' % len(lengths) if n > sample_size else ''} "
            f"are longer than max_length={max_length} tokens and are truncated to it (the longest has {lengths.max()} "
            f"tokens, the median {int(np.median(lengths))}). If their ends matter, raise it (--config max_length=N, "
            "at most the encoder's position limit; longer is slower) or split long documents into passages."
        )
    return share


_LOGGED_PRECISIONS: set[str] = set()


def _log_precision_once(description: str) -> None:
    if description not in _LOGGED_PRECISIONS:
        _LOGGED_PRECISIONS.add(description)
        logger.warning(f"Training precision: {description}.")


class TextViewsCollator:
    """Tokenizes one or more text columns of a batch of rows into ``{prefix}input_ids`` / ``{prefix}attention_mask``.

    All views are tokenized in one call and padded to one common length, so a trainer can run them through the
    encoder as one concatenated batch. ``index`` (row positions in the dataset) is passed through when present. With
    ``word_ids``, ``{prefix}word_ids`` gives each token's word number in its text (-1 for special and padding tokens),
    for noise that deletes whole words.
    """

    def __init__(
        self, tokenizer, max_length: int, views: dict[str, str], pad_to_max_length: bool = False, word_ids: bool = False
    ):
        if word_ids and not getattr(tokenizer, "is_fast", False):
            raise ValueError(
                "Word-level noise needs a fast tokenizer (`tokenizer.is_fast`): load the encoder's "
                "tokenizer with `AutoTokenizer.from_pretrained(..., use_fast=True)`."
            )
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.views = views  # output prefix -> dataset column
        self.pad_to_max_length = pad_to_max_length
        self.word_ids = word_ids

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        texts = []
        for column in self.views.values():
            texts.extend(clip_text(row[column], self.max_length) for row in rows)
        encoded = self.tokenizer(
            texts,
            padding="max_length" if self.pad_to_max_length else True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        batch: dict[str, torch.Tensor] = {}
        n = len(rows)
        for view_index, prefix in enumerate(self.views):
            for key, value in encoded.items():
                batch[f"{prefix}{key}"] = value[view_index * n : (view_index + 1) * n]
            if self.word_ids:
                batch[f"{prefix}word_ids"] = torch.tensor(
                    [[-1 if w is None else w for w in encoded.word_ids(view_index * n + i)] for i in range(n)],
                    dtype=torch.long,
                )
        if "index" in rows[0]:
            batch["index"] = torch.tensor([row["index"] for row in rows], dtype=torch.long)
        return batch


def stage_starts(total_steps: int, fractions: Sequence[float]) -> list[int]:
    """The first step of each stage after the first, for stages that take ``fractions`` of ``total_steps`` in turn
    (the last stage gets the rest). A stage with a non-zero fraction gets at least one step while the stages after it
    still have one each."""
    starts, step = [], 0
    for i, fraction in enumerate(fractions):
        length = math.floor(fraction * total_steps)
        if fraction > 0 and length == 0 and total_steps > step + len(fractions) - i:
            length = 1
        step += length
        starts.append(step)
    return starts


CHECKPOINT_ARRAY_PREFIX = "hf_textcluster_"


# Written last into each checkpoint, after the weights, optimizer, RNG states and the method's own files: it lists those
# files, so that a checkpoint a crash cut off before its end is recognised as incomplete.
CHECKPOINT_MANIFEST = f"{CHECKPOINT_ARRAY_PREFIX}checkpoint.json"


def _checkpoint_problem(folder: str) -> str | None:
    """Why ``folder`` (a ``checkpoint-N``) cannot be resumed from, or None when it is complete."""
    for name in ("config.json", "model.safetensors", "trainer_state.json"):
        if not os.path.isfile(os.path.join(folder, name)):
            return f"it has no {name}"
    try:
        with open(os.path.join(folder, "trainer_state.json")) as f:
            json.load(f)
    except (OSError, ValueError):
        return "its trainer_state.json is cut off"
    manifest = os.path.join(folder, CHECKPOINT_MANIFEST)
    if os.path.isfile(manifest):  # checkpoints written before the manifest existed have none
        try:
            with open(manifest) as f:
                needed = json.load(f)["files"]
        except (OSError, ValueError, KeyError, TypeError):
            return f"its {CHECKPOINT_MANIFEST} is cut off"
        missing = [name for name in needed if not os.path.isfile(os.path.join(folder, name))]
        if missing:
            return f"it lacks {', '.join(missing)}"
    return None


def last_complete_checkpoint(output_dir: str) -> str | None:
    """The newest ``checkpoint-N`` of ``output_dir`` that holds everything a resumed run needs (weights, trainer
    state, and the method's own files listed in its manifest). A newer one that a crash cut off is skipped with a
    warning naming it and the checkpoint used instead."""
    if not os.path.isdir(output_dir):
        return None
    folders = sorted(
        (
            d
            for d in os.listdir(output_dir)
            if d.startswith(f"{PREFIX_CHECKPOINT_DIR}-")
            and d.split("-")[-1].isdigit()
            and os.path.isdir(os.path.join(output_dir, d))
        ),
        key=lambda d: int(d.split("-")[-1]),
        reverse=True,
    )
    skipped = []
    for name in folders:
        folder = os.path.join(output_dir, name)
        problem = _checkpoint_problem(folder)
        if problem is None:
            if skipped:
                logger.warning(
                    f"Skipping the incomplete checkpoint{'s' if len(skipped) > 1 else ''} "
                    f"{'; '.join(skipped)} (interrupted while saving); resuming from {folder} instead."
                )
            return folder
        skipped.append(f"{folder} ({problem})")
    if skipped:
        logger.warning(
            f"No complete checkpoint in {output_dir}: skipping {'; '.join(skipped)} (interrupted while saving)."
        )
    return None


TRAINING_MODULES_FILE = f"{CHECKPOINT_ARRAY_PREFIX}training_modules.safetensors"


class ClusterHealthCallback(TrainerCallback):
    """Every ``health_check_steps``, predicts a seeded sample of training texts with the head and logs
    ``health_agreement`` (NMI with the initial k-means on the same texts), ``health_size_entropy`` (entropy of the
    cluster sizes / log K; 1 = equal sizes), ``health_clusters_used`` and ``health_changed`` (share of the texts whose
    cluster changed since the previous check). Warns once when the clusters collapse (fewer than half of them used,
    the size entropy below 3/4 of the k-means start's, or agreement below 0.3) and, with ``early_stopping_tol``,
    stops when fewer texts than that changed cluster. No labels are used."""

    def __init__(self, trainer: ClusteringTrainer):
        self._trainer = weakref.ref(trainer)
        self.sample: np.ndarray | None = None
        self.previous: np.ndarray | None = None
        self.warned = False

    def interval(self, args, state) -> int:
        steps = getattr(args, "health_check_steps", None)
        return max(1, (state.max_steps or 0) // 10) if steps is None else steps

    def on_step_end(self, args, state, control, **kwargs):
        trainer = self._trainer()
        interval = self.interval(args, state)
        if trainer is None or not interval or state.global_step % interval or trainer.train_dataset is None:
            return
        model = trainer.model
        if not model.config.centroids_initialized or getattr(trainer, "initial_kmeans_labels", None) is None:
            return  # the head is not trained yet (a first stage without it) or there is no k-means start
        texts = trainer.train_dataset["text"]
        if self.sample is None:
            size = min(getattr(args, "health_sample_size", 1000), len(texts))
            self.sample = np.sort(np.random.default_rng(args.seed).choice(len(texts), size=size, replace=False))
        predicted = trainer.head_predictions([texts[int(i)] for i in self.sample])
        entry = {
            "step": state.global_step,
            **cluster_health(predicted, trainer.initial_kmeans_labels[self.sample], model.config.num_clusters),
        }
        if self.previous is not None:
            entry["changed"] = float((predicted != self.previous).mean())
        self.previous = predicted
        trainer.health_history.append(entry)
        # shown with the next loss log (logging from inside on_step_end would swallow the Trainer's own log)
        trainer._pending_logs.update({f"health_{k}": round(v, 4) for k, v in entry.items() if k != "step"})
        start = cluster_health(
            trainer.initial_kmeans_labels[self.sample],
            trainer.initial_kmeans_labels[self.sample],
            model.config.num_clusters,
        )
        k = model.config.num_clusters
        collapsed = (
            entry["clusters_used"] < k / 2
            or entry["size_entropy"] < 0.75 * start["size_entropy"]
            or entry["agreement"] < 0.3
        )
        if collapsed and not self.warned:
            self.warned = True
            logger.warning(
                f"The clusters may be collapsing at step {state.global_step}: on {len(self.sample)} training texts the "
                f"head uses {int(entry['clusters_used'])} of {k} clusters, size entropy {entry['size_entropy']:.2f} (k-means "
                f"start {start['size_entropy']:.2f}), agreement with the initial k-means NMI {entry['agreement']:.2f}. "
                "The trained head may end below plain k-means: compare it with k-means on the trained embeddings, and "
                "consider fewer steps, a lower head learning rate or --early_stopping_tol."
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


class _StopOnSignalCallback(TrainerCallback):
    """After SIGINT / SIGTERM (Ctrl-C, a scheduler's kill), finish the current step, save a checkpoint and stop."""

    def __init__(self):
        self.received: int | None = None

    def on_step_end(self, args, state, control, **kwargs):
        if self.received is not None:
            control.should_save = True
            control.should_training_stop = True
        if state.max_steps and state.global_step >= state.max_steps and args.save_strategy == "steps":
            # the last step is always a checkpoint: a run killed during the final calibration, or started again
            # once finished, resumes there instead of training again
            control.should_save = True


class ClusteringTrainer(Trainer):
    """Base trainer of all clusterers. Subclasses set ``views`` (prefix -> text column) and implement
    ``compute_loss``, recording each loss term with ``self.record_loss_terms`` so they show up in the logs."""

    views: dict[str, str] = {"": "text"}
    # Whether batches carry each token's word number (``{prefix}word_ids``), for word-level noise in the step.
    word_ids: bool = False
    # compute_loss returns a per-batch mean: the Trainer must divide it under gradient accumulation.
    loss_is_scaled_for_ga = False

    def __init__(
        self, model=None, args: TrainingArguments | None = None, data_collator=None, init_embeddings=None, **kwargs
    ):
        # `init_embeddings` (N x d, one row per training text, e.g. computed to choose K): the k-means
        # initialisation before step 1 starts from them instead of a second encoding pass (used once).
        self.init_embeddings = init_embeddings
        if args is None:
            args = ClusteringTrainingArguments(output_dir="tmp_trainer")
        if args.remove_unused_columns:
            raise ValueError(
                "`remove_unused_columns=True` would drop the raw text columns the collator tokenizes; "
                "use `ClusteringTrainingArguments` (it defaults to False) or pass `remove_unused_columns=False`."
            )
        kwargs.setdefault("processing_class", getattr(model, "tokenizer", None))
        if kwargs["processing_class"] is None:
            raise ValueError("The model has no tokenizer: pass `processing_class=` (the encoder's tokenizer).")
        # The clustering config records its tokenizer's special tokens (Trainer would otherwise align them itself
        # and warn on every run that it did).
        for name in ("pad_token_id", "bos_token_id", "eos_token_id"):
            if getattr(kwargs["processing_class"], name, None) is not None:
                setattr(model.config, name, getattr(kwargs["processing_class"], name))
        for name in ("train_dataset", "eval_dataset"):
            dataset = kwargs.get(name)
            if dataset is not None and hasattr(dataset, "column_names") and "text" not in dataset.column_names:
                raise ValueError(f"`{name}` needs a 'text' column; it has {dataset.column_names}.")
        dataset = kwargs.get("train_dataset")
        if dataset is not None and hasattr(dataset, "column_names"):
            missing = [c for c in self.views.values() if c not in dataset.column_names]
            if missing:
                raise ValueError(
                    f"{type(self).__name__} trains on the columns {list(self.views.values())}, but `train_dataset` "
                    f"lacks {missing}. Add augmented views with `hf_textcluster.data.add_augmented_views(dataset, ...)` "
                    "or load a benchmark with `augmentation=...`."
                )
        if data_collator is None:
            data_collator = TextViewsCollator(
                kwargs["processing_class"],
                model.config.max_length,
                self.views,
                pad_to_max_length=getattr(args, "pad_to_max_length", False),
                word_ids=self.word_ids,
            )
        if dataset is not None and hasattr(dataset, "column_names"):
            warn_if_truncated(dataset["text"], kwargs["processing_class"], model.config.max_length)
        super().__init__(model=model, args=args, data_collator=data_collator, **kwargs)
        self._loss_terms: dict[str, list[float]] = {}
        self._stop_on_signal = _StopOnSignalCallback()
        self.add_callback(self._stop_on_signal)
        self.health_history: list[dict] = []
        self._pending_logs: dict[str, float] = {}
        self.add_callback(ClusterHealthCallback(self))
        install_progress_callbacks(self)  # loss terms by name, and an estimate of the time, not raw log dicts
        _log_precision_once(self.precision_description())

    @property
    def precision(self) -> str:
        """``"bf16"``, ``"fp16"`` or ``"fp32"``: the precision of training and of every encoding pass."""
        return "bf16" if self.args.bf16 else ("fp16" if self.args.fp16 else "fp32")

    def precision_description(self) -> str:
        """The precision and why it was chosen, for logs, ``training_run.json`` and model cards."""
        source = getattr(self.args, "precision_source", "forced")
        device = "GPU" if self.args.device.type == "cuda" else f"CPU {cpu_capability()}"
        return f"{self.precision} ({source}; {device})"

    @property
    def encode_batch_size(self) -> int:
        return getattr(self.args, "encode_batch_size", DEFAULT_ENCODE_BATCH_SIZE)

    calibration_seconds: float = 0.0  # the end-of-training calibration's share of `train()`'s time
    serving_choice: dict | None = None  # what serve_chosen_partition chose, for training_run.json

    # ----- loss bookkeeping ----------------------------------------------------------------------------------
    def record_loss_terms(self, **terms: torch.Tensor) -> None:
        if self.model.training:
            for name, value in terms.items():
                self._loss_terms.setdefault(name, []).append(float(value.detach()))

    def log(self, logs: dict[str, float], *args, **kwargs) -> None:
        if "loss" in logs and self._loss_terms:
            for name, values in self._loss_terms.items():
                logs[f"loss_{name}"] = round(float(np.mean(values)), 6)
            self._loss_terms = {}
        if "loss" in logs and self._pending_logs:
            logs.update(self._pending_logs)
            self._pending_logs = {}
        super().log(logs, *args, **kwargs)

    @staticmethod
    def encode_views(model, inputs: dict[str, torch.Tensor], prefixes: Sequence[str]) -> list[torch.Tensor]:
        """Run several tokenized views through the encoder as one batch; returns one embedding tensor per view."""
        input_ids = torch.cat([inputs[f"{p}input_ids"] for p in prefixes])
        attention_mask = torch.cat([inputs[f"{p}attention_mask"] for p in prefixes])
        token_type_ids = None
        if f"{prefixes[0]}token_type_ids" in inputs:
            token_type_ids = torch.cat([inputs[f"{p}token_type_ids"] for p in prefixes])
        embeddings = model.encode(input_ids, attention_mask, token_type_ids)
        return list(embeddings.chunk(len(prefixes)))

    # ----- stages (methods trained in stages within one run) -------------------------------------------------------
    # Config fields holding the share of the steps of each stage but the last (e.g. ("stage1_fraction", ...)).
    stage_fractions: tuple[str, ...] = ()

    def stage_bounds(self) -> tuple[int, ...]:
        """The first step of each stage after the first, for this run's ``max_steps`` (see ``stage_starts``)."""
        total = max(int(self.state.max_steps or self.args.max_steps or 0), 1)
        return tuple(stage_starts(total, [getattr(self.model.config, name) for name in self.stage_fractions]))

    def stage(self, step: int) -> int:
        """The stage (1, 2, ...) of the optimizer step that starts at ``global_step == step``."""
        return 1 + sum(step >= start for start in self.stage_bounds())

    # ----- training state beyond the weights --------------------------------------------------------------------
    def checkpoint_arrays(self) -> dict[str, np.ndarray]:
        """What a resumed run needs besides weights, optimizer and RNG states (targets, pseudo-labels), by name; saved
        as ``hf_textcluster_<name>.npy`` in each checkpoint and handed to ``restore_checkpoint_arrays`` on resume."""
        return {}

    def restore_checkpoint_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Take back what ``checkpoint_arrays`` saved (called before a resumed run's first step)."""

    def training_modules(self) -> dict[str, torch.nn.Module]:
        """Modules that train with the model but are not part of the served model (e.g. a denoising decoder), by
        name. Their parameters join the optimizer (where ``is_encoder_parameter("<name>.<param>")`` says) and their
        own tensors (those not shared with the model) go into every checkpoint, so a resumed run gets them back."""
        return {}

    def _training_module_parameters(self) -> list[tuple[str, torch.nn.Parameter]]:
        in_model = {id(p) for p in self.model.parameters()}
        return [
            (f"{name}.{param_name}", param)
            for name, module in self.training_modules().items()
            for param_name, param in module.named_parameters()
            if id(param) not in in_model
        ]

    def training_module_state(self) -> dict[str, torch.Tensor]:
        """The training modules' own tensors (parameters and buffers not shared with the model), by qualified name."""
        in_model = {t.data_ptr() for t in self.model.state_dict().values()}
        state = {}
        for name, module in self.training_modules().items():
            for key, tensor in module.state_dict().items():
                if tensor.data_ptr() not in in_model and f"{name}.{key}" not in state:
                    state[f"{name}.{key}"] = tensor.detach().cpu().contiguous()
        # tensors tied inside a module (a decoder's output layer and input embeddings) are stored once
        seen, unique = set(), {}
        for key, tensor in state.items():
            if tensor.data_ptr() not in seen:
                seen.add(tensor.data_ptr())
                unique[key] = tensor
        return unique

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False):
        super().save_model(output_dir, _internal_call=_internal_call)
        folder = output_dir or self.args.output_dir
        if _internal_call and os.path.basename(os.path.normpath(folder)).startswith(f"{PREFIX_CHECKPOINT_DIR}-"):
            self._save_resume_files(folder)

    def _save_resume_files(self, folder: str) -> None:
        """The method's own files (``checkpoint_arrays``, the training modules) and the manifest naming them, written
        while the Trainer saves a checkpoint: before its ``trainer_state.json`` and before older checkpoints are
        rotated away, so a checkpoint that looks complete is complete (each file atomically: a temporary file, then a
        rename)."""
        if not self.args.should_save:
            return
        written = []
        arrays = dict(self.checkpoint_arrays())
        if getattr(self, "initial_kmeans_labels", None) is not None:  # the health checks' reference, after a resume too
            arrays.setdefault("initial_kmeans_labels", np.asarray(self.initial_kmeans_labels))
        for name, array in arrays.items():
            path = os.path.join(folder, f"{CHECKPOINT_ARRAY_PREFIX}{name}.npy")
            with open(path + ".tmp", "wb") as f:
                np.save(f, np.asarray(array))
            os.replace(path + ".tmp", path)
            written.append(os.path.basename(path))
        if self.training_modules():
            from safetensors.torch import save_file

            path = os.path.join(folder, TRAINING_MODULES_FILE)
            save_file(self.training_module_state(), path + ".tmp")
            os.replace(path + ".tmp", path)
            written.append(TRAINING_MODULES_FILE)
        path = os.path.join(folder, CHECKPOINT_MANIFEST)
        with open(path + ".tmp", "w") as f:
            json.dump({"files": written}, f)
        os.replace(path + ".tmp", path)

    def _run_epoch(self, *args, **kwargs):
        # A run resumed from its last step (a finished run started again, or one killed during the final
        # calibration) trains no further step: the Trainer would otherwise train one more before it checks.
        if self.state.max_steps and self.state.global_step >= self.state.max_steps:
            self.control.should_training_stop = True
            return None
        return super()._run_epoch(*args, **kwargs)

    def _restore_from_checkpoint_folder(self, checkpoint: str) -> None:
        arrays = {
            name[len(CHECKPOINT_ARRAY_PREFIX) : -len(".npy")]: np.load(os.path.join(checkpoint, name))
            for name in sorted(os.listdir(checkpoint))
            if name.startswith(CHECKPOINT_ARRAY_PREFIX) and name.endswith(".npy")
        }
        if "initial_kmeans_labels" in arrays:
            self.initial_kmeans_labels = arrays.pop("initial_kmeans_labels")
        if arrays:
            self.restore_checkpoint_arrays(arrays)
        modules_file = os.path.join(checkpoint, TRAINING_MODULES_FILE)
        if self.training_modules():
            if not os.path.isfile(modules_file):
                raise ValueError(
                    f"{checkpoint} lacks {TRAINING_MODULES_FILE} (the {', '.join(self.training_modules())} "
                    "this method trains besides the model): resume with --no-resume to start over."
                )
            from safetensors.torch import load_file

            saved = load_file(modules_file)
            for name, module in self.training_modules().items():
                own = {k[len(name) + 1 :]: v for k, v in saved.items() if k.startswith(f"{name}.")}
                state = module.state_dict()
                with torch.no_grad():
                    for key, value in own.items():
                        state[key].copy_(value)

    def head_predictions(self, texts: Sequence[str]) -> np.ndarray:
        """The head's clusters of ``texts`` mid-training (eval mode), for the cluster health checks."""
        return self.model.predict(
            texts, batch_size=self.encode_batch_size, show_progress_bar=False, precision=self.precision
        )

    # ----- whole-dataset passes (targets, pseudo-labels) ------------------------------------------------------
    @classmethod
    def with_index_column(cls, dataset, purpose: str):
        """``dataset`` with an ``index`` column of row positions 0..N-1 (the collator passes it on), which a method
        uses ``purpose`` (e.g. "to look up each row's pseudo-label")."""
        if dataset is None or not hasattr(dataset, "column_names") or not hasattr(dataset, "add_column"):
            return dataset
        if "index" in dataset.column_names:
            if not np.array_equal(np.asarray(dataset["index"]), np.arange(len(dataset))):
                raise ValueError(
                    f"`train_dataset` has an 'index' column that is not the row position 0..N-1; {cls.__name__} uses "
                    f"'index' {purpose}. Remove or rename that column."
                )
            return dataset
        return dataset.add_column("index", list(range(len(dataset))))

    def embed_train_texts(self) -> np.ndarray:
        """The pooled embeddings of every training text (one inference pass, dropout off), on every process; with
        several processes each encodes its share of the texts (see ``sharded_passes``)."""
        with self.sharded_passes():
            return self.model.embed(
                self.train_dataset["text"],
                batch_size=self.encode_batch_size,
                show_progress_bar=not self.args.disable_tqdm,
                precision=self.precision,
            )

    _main_only = False  # True while share_from_main computes on the main process alone

    def sharded_passes(self):
        """A context in which the model's encoding passes (``embed``, ``predict``, ``calibrate``) are split between the
        processes and gathered to each (:func:`hf_textcluster.distributed.sharded_passes`): every process must make
        the same calls. Nothing changes in one process or inside ``share_from_main``'s computation."""
        if self.num_processes == 1 or self._main_only:
            return contextlib.nullcontext(self.model)
        return sharded_passes(self.model, self.accelerator.state)

    def on_device(self, tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
        """``tensor`` (a per-row array the steps look up: targets, pseudo-labels) on ``device``, copied once per tensor:
        a lookup on the GPU then needs no copy to the host and back in every step."""
        if tensor.device == torch.device(device):
            return tensor
        cached = getattr(self, "_device_copy", None)
        if cached is None or cached[0] is not tensor or cached[1].device != torch.device(device):
            self._device_copy = cached = (tensor, tensor.to(device))
        return cached[1]

    # ----- optimisation --------------------------------------------------------------------------------------
    def create_optimizer(self, model=None):
        """Two learning rates: ``learning_rate`` for the encoder, ``head_learning_rate`` for heads and centroids."""
        opt_model = self.model if model is None else model
        if self.optimizer is None:
            head_lr = getattr(self.args, "head_learning_rate", None) or self.args.learning_rate * 100
            encoder_params, head_params = [], []
            for name, param in [*opt_model.named_parameters(), *self._training_module_parameters()]:
                if param.requires_grad:
                    (encoder_params if self.is_encoder_parameter(name) else head_params).append(param)
            groups = [
                {"params": encoder_params, "lr": self.args.learning_rate, "weight_decay": self.args.weight_decay},
                {"params": head_params, "lr": head_lr, "weight_decay": 0.0},
            ]
            optimizer_cls, optimizer_kwargs = self.get_optimizer_cls_and_kwargs(self.args, opt_model)
            optimizer_kwargs.pop("lr", None)
            self.optimizer = optimizer_cls([g for g in groups if g["params"]], **optimizer_kwargs)
            own = [param for _, param in self._training_module_parameters()]
            if own:  # the Trainer zeroes the model's gradients only: without this, these would sum over all steps
                self.optimizer.register_step_post_hook(lambda *_: [setattr(p, "grad", None) for p in own])
        return self.optimizer

    def _clip_grad_norm(self, model):
        # The training modules' own parameters are clipped with the model's, as one norm (sentence-transformers
        # clips its whole loss model, a TSDAE decoder included); the Trainer alone would clip the model's only.
        own = [param for _, param in self._training_module_parameters()]
        if not own or self._has_mixed_mesh_grads(model):
            return super()._clip_grad_norm(model)
        return self.accelerator.clip_grad_norm_([*model.parameters(), *own], self.args.max_grad_norm)

    def is_encoder_parameter(self, name: str) -> bool:
        """Whether the parameter ``name`` trains at ``learning_rate`` (the encoder) rather than ``head_learning_rate``."""
        return name.startswith("encoder.")

    # ----- cluster initialisation ----------------------------------------------------------------------------
    def kmeans(self, features: np.ndarray):
        """k-means (seeded, the run's restarts and sample size) on one row per training text: a fitted ``KMeans`` (on a
        GPU, the torch k-means there: :func:`~hf_textcluster.modeling.kmeans.torch_kmeans`)."""
        if self.args.device.type == "cuda" and isinstance(features, np.ndarray):
            features = torch.from_numpy(features).to(self.args.device)
        kmeans = self.share_from_main(
            lambda: fit_kmeans(
                features,
                self.model.config.num_clusters,
                n_init=getattr(self.args, "kmeans_n_init", 10),
                random_state=self.args.seed,
                max_samples=getattr(self.args, "kmeans_max_samples", DEFAULT_KMEANS_MAX_SAMPLES),
                init=getattr(self.args, "kmeans_init", "best"),
            )
        )
        self._log_kmeans_start(getattr(kmeans, "start_", None))
        return kmeans

    def _log_kmeans_start(self, start: str | None) -> None:
        """Say once per run which start the k-means came from (``kmeans_init="best"`` chooses it by inertia)."""
        if start is not None and not getattr(self, "_kmeans_start_logged", False):
            self._kmeans_start_logged = True
            logger.info(f"k-means (kmeans_init={getattr(self.args, 'kmeans_init', 'best')!r}) started from {start}.")

    def initialize_clusters(self, embeddings: np.ndarray | None = None) -> None:
        """k-means on the embeddings of the training texts; the model's cluster head starts from its centres (for
        methods whose head has ``init_from_kmeans``; others fit their head in their own trainer).

        ``embeddings`` (N x d, one row per training text) skips the encoding pass when a subclass already has them."""
        if not self.model.uses_kmeans_init:
            return
        if self.train_dataset is None:
            raise ValueError("Pass a `train_dataset`: its texts initialise the clusters.")
        check_num_clusters(self.model.config.num_clusters, len(self.train_dataset))  # before the encoding pass
        start = time.perf_counter()
        embeddings = self.embed_train_texts() if embeddings is None else embeddings

        def fit():
            labels = self.model.initialize_clusters(
                embeddings=embeddings,
                random_state=self.args.seed,
                n_init=getattr(self.args, "kmeans_n_init", 10),
                max_samples=getattr(self.args, "kmeans_max_samples", DEFAULT_KMEANS_MAX_SAMPLES),
                kmeans_init=getattr(self.args, "kmeans_init", "best"),
            )
            return labels, self.model.cluster_head.state_dict()

        # Kept so that callers can score plain k-means on the same encoder, measured in the same run.
        self.initial_kmeans_labels, head_state = self.share_from_main(fit)
        self._log_kmeans_start(getattr(self.model, "kmeans_start_", None))  # on the main process, where it ran
        if not self.accelerator.is_main_process:
            self.model.cluster_head.load_state_dict(head_state)
            self.model.config.centroids_initialized = True
        logger.info(
            f"Initialised {self.model.config.num_clusters} clusters by k-means in {time.perf_counter() - start:.1f}s."
        )

    def autocast_smart_context_manager(self, cache_enabled: bool | None = True):
        # Accelerate applies bf16/fp16 autocast by wrapping `model.forward`; our losses call `model.encode` and the
        # heads directly, so without this the "mixed precision" run would silently stay in fp32.
        dtype = autocast_dtype(self.precision, self.args.device)
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.args.device.type, dtype=dtype, cache_enabled=cache_enabled)

    # ----- several processes (accelerate launch / torchrun) -------------------------------------------------------
    @property
    def num_processes(self) -> int:
        return self.accelerator.num_processes

    def gather(self, *tensors: torch.Tensor):
        """The global batch: each tensor (one row per text) concatenated over the processes in rank order; the tensor
        itself in a single process. A tensor that needs gradients goes through ``torch.distributed.nn``'s all-gather,
        whose backward sums what every process computes for this process's rows: when every process computes the
        same global loss from the gathered rows, the averaged gradient is the single-process one."""
        if self.num_processes == 1:
            return tensors[0] if len(tensors) == 1 else tensors
        import torch.distributed as dist
        from torch.distributed.nn.functional import all_gather

        gathered = []
        for tensor in tensors:
            if tensor.requires_grad:
                with warnings.catch_warnings():  # deprecated for a private API (torch 2.13); still the public one
                    warnings.simplefilter("ignore", FutureWarning)
                    parts = all_gather(tensor)
            else:
                parts = [torch.empty_like(tensor) for _ in range(self.num_processes)]
                dist.all_gather(parts, tensor.contiguous())
            gathered.append(torch.cat(list(parts)))
        return gathered[0] if len(gathered) == 1 else tuple(gathered)

    def global_mean(self, local_mean: torch.Tensor, count) -> torch.Tensor:
        """A mean over the global batch's items from this process's mean over its ``count`` items (e.g. a per-token
        loss over this process's tokens): every process sees the global mean, and the averaged gradient is the
        single-process one. ``local_mean`` itself in a single process."""
        if self.num_processes == 1:
            return local_mean
        import torch.distributed as dist

        total = local_mean * count
        stats = torch.stack([total.detach().float(), torch.as_tensor(count, dtype=torch.float32, device=total.device)])
        dist.all_reduce(stats)
        scaled = total * self.num_processes  # the gradient average divides by the number of processes
        return (scaled - scaled.detach() + stats[0]) / stats[1].clamp_min(1)

    def share_from_main(self, compute):
        """``compute()`` on the main process only, its (picklable) result sent to the others: whole-corpus passes
        (embeddings, k-means, word vectors) are computed once however many processes train."""
        if self.num_processes == 1:
            return compute()
        from accelerate.utils import broadcast_object_list

        box = [None]
        if self.accelerator.is_main_process:
            self._main_only = True  # an encoding pass inside runs here alone, not split between the processes
            try:
                box = [("ok", compute())]
            except Exception as err:  # the others must not wait forever for a result that will not come
                box = [("error", err)]
                broadcast_object_list(box, from_process=0)
                raise
            finally:
                self._main_only = False
        broadcast_object_list(box, from_process=0)
        status, value = box[0]
        if status == "error":
            raise RuntimeError(f"The main process failed computing a shared result: {value!r}")
        return value

    def _average_gradients(self) -> None:
        """The mean of every process's gradients (one flat all-reduce). Done here rather than by DDP: the methods call
        the model's parts (encode, heads, training modules) instead of its forward, which DDP's hooks rely on."""
        import torch.distributed as dist

        params = [
            p for _, p in [*self.model.named_parameters(), *self._training_module_parameters()] if p.grad is not None
        ]
        if not params:
            return
        flat = torch.cat([p.grad.reshape(-1).float() for p in params])
        dist.all_reduce(flat)
        flat /= self.num_processes
        offset = 0
        for p in params:
            p.grad.copy_(flat[offset : offset + p.grad.numel()].view_as(p.grad))
            offset += p.grad.numel()

    def training_step(self, model, inputs, num_items_in_batch=None):
        # The unwrapped model: see _average_gradients.
        loss = super().training_step(self.accelerator.unwrap_model(model), inputs, num_items_in_batch)
        if self.num_processes > 1:
            self._average_gradients()
        if not torch.isfinite(loss).all():
            terms = {name: values[-1] for name, values in self._loss_terms.items() if values}
            raise FloatingPointError(
                f"The loss became {float(loss)} at step {self.state.global_step + 1} (terms: {terms}): training "
                "diverged. Lower the learning rate (`learning_rate` / `head_learning_rate`) and retrain; checkpoints "
                "already written are kept, the diverged weights are not saved."
            )
        return loss

    def _check_some_steps(self) -> None:
        """A run that would train no step at all is an error, not a saved k-means initialisation."""
        dataset, args = self.train_dataset, self.args
        if dataset is None or not hasattr(dataset, "__len__") or args.max_steps == 0:
            return
        batch = args.per_device_train_batch_size * max(1, args.n_gpu)
        if args.dataloader_drop_last and len(dataset) < batch:
            raise ValueError(
                f"`train_dataset` has {len(dataset)} rows but `per_device_train_batch_size` is {batch} with "
                f"`dataloader_drop_last=True`: not one full batch, so nothing would be trained. Lower the batch size "
                f"(e.g. --per_device_train_batch_size {max(2, len(dataset) // 2)}) or pass --dataloader_drop_last false."
            )

    def train(self, resume_from_checkpoint: str | bool | None = None, **kwargs):
        self._check_some_steps()
        if getattr(self.model.config, "refined_head_dim", 0):
            # the losses train the method's head: a refined head in front of it would take its gradients instead
            logger.warning(
                f"The model serves its {self.model.config.served_partition} partition; training continues "
                f"the method's own head, and what it serves is set again at the end (serve="
                f"{self.args.serve!r})."
            )
            self.model.serve_method_head()
        with self._signals_stop_training():
            self._train_with_resume(resume_from_checkpoint, **kwargs)
            if self._stop_on_signal.received is not None:
                raise KeyboardInterrupt(
                    f"Interrupted at step {self.state.global_step}: a checkpoint is saved in {self.args.output_dir}; "
                    "run the same command again to resume from it."
                )
        self.serve_chosen_partition()
        self.calibrate_model()
        self.check_final_health()
        return self._train_output

    final_health: dict | None = None  # check_final_health's record

    def check_final_health(self) -> dict | None:
        """The trained model's clusters of a seeded sample of ``health_sample_size`` training texts, as it serves
        them, once training has ended: every method, whatever its stages (a check during training may have run
        before a head existed, or on a head mode other than the served one). Warns when the clusters collapsed (fewer
        than half of them used, or one holding 90% of the texts). Off with ``health_check_steps=0``."""
        if (
            getattr(self.args, "health_check_steps", None) == 0
            or self.train_dataset is None
            or not self.model.config.centroids_initialized
            or not self.accelerator.is_main_process
        ):
            return None
        texts = self.train_dataset["text"]
        size = min(getattr(self.args, "health_sample_size", 1000), len(texts))
        rows = np.sort(np.random.default_rng(self.args.seed).choice(len(texts), size=size, replace=False))
        predicted = self.model.predict(
            [texts[int(i)] for i in rows],
            batch_size=self.encode_batch_size,
            show_progress_bar=False,
            precision=self.precision,
        )
        k = self.model.config.num_clusters
        counts = np.bincount(predicted, minlength=k)
        self.final_health = {"clusters_used": int((counts > 0).sum()), "largest_share": float(counts.max() / size)}
        if self.final_health["clusters_used"] < k / 2 or self.final_health["largest_share"] >= 0.9:
            logger.warning(
                f"The trained model puts {100 * self.final_health['largest_share']:.0f}% of {size} training texts (a "
                f"seeded sample) in one cluster and uses {self.final_health['clusters_used']} of its {k} clusters: "
                "its clusters collapsed. Compare it with k-means on its embeddings (`hf-textcluster recluster`), or "
                "train again with more steps, a lower head learning rate or another seed."
            )
        return self.final_health

    def serve_chosen_partition(self) -> None:
        """Make the trained model serve the partition ``args.serve`` asks for (by default the label-free choice among
        its candidate partitions, see :mod:`~hf_textcluster.choosing.serving`), chosen once on the main process from
        the training texts' embeddings (encoded by every process). Recorded in ``serving_choice`` (``training_run.json``)."""
        serve = self.args.serve
        if serve == "head" or self.train_dataset is None or not self.model.config.centroids_initialized:
            return
        start = time.perf_counter()
        embeddings = self.embed_train_texts()  # every process encodes its share; the choice is made once

        def choose():
            choice = serve_partition(self.model, embeddings, serve=serve, random_state=self.args.seed)
            return choice.to_dict(), choice.serving

        record, serving = self.share_from_main(choose)
        if not self.accelerator.is_main_process:
            apply_partition(self.model, record["served"], serving)
        self.serving_choice = {**record, "seconds": round(time.perf_counter() - start, 2)}
        logger.info(
            f"Serving the {record['served']} partition (criterion {record['criterion']}: "
            f"{record['scores']}), chosen in {self.serving_choice['seconds']:.1f}s."
        )

    def calibrate_model(self) -> None:
        """Calibrate the trained model's confidence and outlier distances on a seeded sample of
        ``calibration_sample_size`` training texts (``model.calibrate``), so that every saved model carries them."""
        size = getattr(self.args, "calibration_sample_size", 10_000)
        if not size or self.train_dataset is None or not self.model.config.centroids_initialized:
            return
        start = time.perf_counter()

        with self.sharded_passes():  # every process encodes its share and fits the same calibration from all of it
            self.model.calibrate(
                self.train_dataset["text"],
                sample_size=size,
                random_state=self.args.seed,
                batch_size=self.encode_batch_size,
                show_progress_bar=False,
                precision=self.precision,
            )
        # kept apart, so that training times stay comparable with runs from before calibration
        self.calibration_seconds = time.perf_counter() - start
        logger.info(
            f"Calibrated the confidence and outlier distances on {self.model.config.num_calibration_texts} "
            f"training texts in {self.calibration_seconds:.1f}s."
        )

    @contextlib.contextmanager
    def _signals_stop_training(self):
        """The first SIGINT / SIGTERM stops training after the current step, with a checkpoint; a second one stops at
        once. (Only in the main thread, where Python delivers signals.)"""
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self._stop_on_signal.received = None

        def handler(signum, frame):
            if self._stop_on_signal.received is not None:
                raise KeyboardInterrupt
            self._stop_on_signal.received = signum
            logger.warning("Stopping after this step and saving a checkpoint (interrupt again to stop at once).")

        previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)

    def _train_with_resume(self, resume_from_checkpoint, **kwargs):
        # A resumed run restores trained centroids from its checkpoint; a fresh run fits them first.
        if resume_from_checkpoint:
            checkpoint = resume_from_checkpoint
            if checkpoint is True:
                checkpoint = last_complete_checkpoint(self.args.output_dir)
                if checkpoint is None:
                    raise ValueError(
                        f"resume_from_checkpoint=True, but {self.args.output_dir} holds no complete "
                        "checkpoint to resume from. Pass resume_from_checkpoint=None to start over."
                    )
            if checkpoint and os.path.isfile(os.path.join(checkpoint, "config.json")):
                with open(os.path.join(checkpoint, "config.json")) as f:
                    saved = json.load(f).get("centroids_initialized", False)
                # The Trainer restores the weights only; the flag travels in the checkpoint's config.
                self.model.config.centroids_initialized = self.model.config.centroids_initialized or saved
            if checkpoint and os.path.isdir(checkpoint):
                self._restore_from_checkpoint_folder(checkpoint)
        elif not self.model.config.centroids_initialized:
            embeddings, self.init_embeddings = self.init_embeddings, None
            self.initialize_clusters(embeddings)
        self._train_output = super().train(
            resume_from_checkpoint=checkpoint if resume_from_checkpoint else resume_from_checkpoint, **kwargs
        )

    # ----- evaluation ----------------------------------------------------------------------------------------
    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval") -> dict[str, float]:
        """ACC/NMI/ARI/purity of the cluster head's argmax and (``eval_kmeans``) of k-means on the embeddings."""
        dataset = eval_dataset if eval_dataset is not None else self.eval_dataset
        if dataset is None:
            raise ValueError("Pass an `eval_dataset` (with a 'text' column, and 'label' for ACC/NMI).")
        start = time.perf_counter()
        metrics = evaluate_clusterer(
            self.model,
            dataset["text"],
            dataset["label"] if "label" in dataset.column_names else None,
            batch_size=self.encode_batch_size,
            kmeans=getattr(self.args, "eval_kmeans", True),
            n_init=getattr(self.args, "kmeans_n_init", 10),
            random_state=self.args.seed,
            show_progress_bar=not self.args.disable_tqdm,
            precision=self.precision,
        )
        metrics = {f"{metric_key_prefix}_{k}": v for k, v in metrics.items()}
        metrics[f"{metric_key_prefix}_runtime"] = round(time.perf_counter() - start, 4)
        self.log(metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics


def evaluate_clusterer(
    model,
    texts: Sequence[str],
    labels: Sequence[int] | None = None,
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    kmeans: bool = True,
    n_init: int = 10,
    random_state: int | None = 0,
    show_progress_bar: bool | None = None,
    precision: str | torch.dtype | None = "auto",
    kmeans_max_samples: int | None = DEFAULT_KMEANS_MAX_SAMPLES,
    umap_kmeans: bool = False,
) -> dict[str, float]:
    """Clustering quality of a clusterer on ``texts``: from its head (``acc``, ``nmi``, ...) and, with ``kmeans``,
    from k-means on its embeddings (``kmeans_acc``, ...) and, for a head working in a space of its own (DEC-CRL,
    AECL), from k-means in that space (``latent_kmeans_acc``, ...). ``umap_kmeans`` (with ``kmeans``; needs
    umap-learn, minutes on a large corpus): also ``umap_kmeans_*``, the nearest of the means of the clusters k-means
    finds on a UMAP reduction of the embeddings (what ``recluster --kmeans-init umap`` serves, but for DEC-CRL, which
    re-clusters in its latent space). Without labels, only the number of used clusters."""
    embeddings = model.embed(texts, batch_size=batch_size, show_progress_bar=show_progress_bar, precision=precision)
    was_training = model.training
    model.eval()  # a head with dropout (AECL's) must not drop units while it is scored
    try:
        with torch.no_grad():
            inputs = torch.from_numpy(embeddings).to(model.device)
            probs = model.cluster_probabilities(inputs)
            # the head's own space, only when it is scored below
            features = model.cluster_features(inputs).float().cpu().numpy() if kmeans and labels is not None else None
    finally:
        model.train(was_training)
    head_pred = probs.argmax(dim=-1).cpu().numpy()
    metrics: dict[str, float] = {"clusters_used": float(len(np.unique(head_pred)))}
    if labels is None:
        return metrics
    scorer = load_clustering_metric()  # the package's `evaluate` metric: ACC / NMI / ARI / purity
    metrics.update(scorer.compute(predictions=head_pred, references=labels))
    if kmeans:

        def add_kmeans_scores(prefix, points, init="k-means++"):
            km = fit_kmeans(
                points,
                model.config.num_clusters,
                n_init=n_init,
                random_state=random_state,
                max_samples=kmeans_max_samples,
                init=init,
            )
            scores = scorer.compute(predictions=km.labels_, references=labels)
            metrics.update({f"{prefix}_{key}": value for key, value in scores.items()})

        add_kmeans_scores("kmeans", embeddings)
        # a head in a space of its own (DEC-CRL's FC_e, AECL's projector) gets k-means there too: for DEC-CRL that
        # is what `recluster` serves
        if features.shape != embeddings.shape or not np.array_equal(features, embeddings):  # not the identity
            add_kmeans_scores("latent_kmeans", features)
        if umap_kmeans:
            add_kmeans_scores("umap_kmeans", embeddings, init="umap")
    return metrics
