"""ClusteringTrainingArguments: ``TrainingArguments`` plus what clustering training needs, checked once."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from transformers import TrainingArguments

from ..editing.kmeans import DEFAULT_KMEANS_MAX_SAMPLES, KMEANS_INITS
from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..modeling.input_checks import SERVE_CHOICES
from ..modeling.precision import native_bf16
from ..modeling.validation import Interval, Options, validate_parameters


def _option(default, help: str):
    """A dataclass field with the help text ``HfArgumentParser`` (the CLI's ``train --help``) shows."""
    return field(default=default, metadata={"help": help})


# The encoding passes' batch on a GPU: MiniLM-sized encoders on 32-token texts keep a GPU busy from about here.
GPU_ENCODE_BATCH_SIZE = 1024
# Fields whose `hf-textcluster train` option has the name every command gives the same thing (not the field's own).
OPTION_NAMES = {"calibration_sample_size": "calibration-sample", "encode_batch_size": "batch-size"}


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
            :func:`~hf_textcluster.editing.kmeans.fit_kmeans`).
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
        frozen_layers: the encoder's embeddings and its lowest ``frozen_layers`` transformer layers are not trained
            (no gradient reaches them: each step's backward pass stops above them); 0 trains every layer.

    Example:
        >>> args = ClusteringTrainingArguments(output_dir="runs/sccl", max_steps=300, per_device_train_batch_size=64,
        ...                                    learning_rate=1e-5, head_learning_rate=1e-3)  # doctest: +SKIP
    """

    head_learning_rate: float | None = _option(
        None, "Learning rate of the heads and centroids (default: 100 x learning_rate, as in SCCL)."
    )
    kmeans_n_init: int = _option(10, "k-means restarts (initialisation and evaluation).")
    kmeans_max_samples: int | None = _option(
        DEFAULT_KMEANS_MAX_SAMPLES,
        "k-means centres are fitted on a seeded sample of at most this many texts, then every text "
        "is assigned to its nearest centre (bounded time on large corpora; None: all texts).",
    )
    kmeans_init: str = _option(
        "best",
        "How the initialisation's k-means starts: 'best' (the lower inertia of k-means++ and of a "
        "run started from the clusters of k-means on a UMAP reduction; k-means++ alone, with a warning, if "
        "umap-learn is missing), "
        "'k-means++' (the papers') or 'umap' (the UMAP clusters' nearest means, no Lloyd's iterations).",
    )
    eval_kmeans: bool = _option(True, "Also evaluate k-means on the learned embeddings (the SCCL paper's protocol).")
    pad_to_max_length: bool = _option(False, "Pad every batch to max_length instead of the longest text (dynamic).")
    remove_unused_columns: bool = _option(False, "Keep raw text columns for the collator.")
    bf16: bool | None = _option(
        None,
        "bf16 autocast. Default (None) = auto: on where the device runs bf16 natively (a GPU with "
        "bf16, a CPU with AVX-512-BF16 / AMX), off elsewhere (emulated bf16 is 9-30x slower).",
    )
    encode_batch_size: int | None = _option(
        None,
        "Batch size of the encoding passes (k-means initialisation, targets, evaluation). Default: "
        f"{DEFAULT_ENCODE_BATCH_SIZE} on a CPU, {GPU_ENCODE_BATCH_SIZE} on a GPU.",
    )
    health_check_steps: int | None = _option(
        None,
        "Check the clusters every this many steps (default: ~10 checks per run): the head's "
        "agreement with the initial k-means, the cluster sizes, how many texts changed cluster. 0: never.",
    )
    health_sample_size: int = _option(1000, "How many training texts (a seeded sample) the cluster checks predict.")
    calibration_sample_size: int = _option(
        10_000,
        "At the end of training, calibrate the model's confidence and outlier distances on a seeded "
        "sample of this many training texts (taken from the pass that chose the served partition; with --serve "
        "head, one encoding pass; see `model.calibrate`). 0: do not.",
    )
    serve: str = _option(
        "auto",
        "What the trained model serves: 'auto' (default: the best of its head, k-means and UMAP "
        "k-means on its embeddings, each refined by iterative classification or not, chosen by an internal "
        "criterion, no labels) or one of them by name ('head' keeps the paper's output). See "
        "choosing.serving.",
    )
    early_stopping_tol: float | None = _option(
        None,
        "Stop when fewer than this share of the checked texts changed cluster since the previous "
        "check (DEC's criterion; e.g. 0.001). No labels are used. Default: off.",
    )
    frozen_layers: int = _option(
        0,
        "Keep the encoder's embeddings and its lowest N transformer layers as pretrained (not trained): "
        "no backward pass through them, so each step costs less. Default: 0 (every layer trains).",
    )

    # The allowed values of the fields above (TrainingArguments checks its own), checked once; shown by `train --help`.
    _parameter_constraints = {
        "kmeans_n_init": Interval(int, 1, None),
        "kmeans_max_samples": [Interval(int, 1, None), None],
        "kmeans_init": Options(*KMEANS_INITS),
        "encode_batch_size": Interval(int, 1, None),
        "health_check_steps": [Interval(int, 0, None), None],
        "health_sample_size": Interval(int, 2, None),
        "calibration_sample_size": [Options(0), Interval(int, 2, None)],
        "serve": Options(*SERVE_CHOICES),
        "early_stopping_tol": [Interval(float, 0, 1, closed="neither"), None],
        "frozen_layers": Interval(int, 0, None),
    }

    def __post_init__(self):
        on_gpu = torch.cuda.is_available() and not self.use_cpu
        self.precision_source = "auto" if self.bf16 is None else "forced"
        if self.bf16 is None:
            self.bf16 = not self.fp16 and native_bf16("cuda" if on_gpu else "cpu")
        if not on_gpu and (self.bf16 or not torch.backends.mps.is_available()):  # an Apple GPU keeps its default
            # TrainingArguments refuses bf16 without a GPU unless told it runs on the CPU, and only then does accelerate
            # count the processes of a CPU `accelerate launch` (gloo)
            self.use_cpu = True
            self.dataloader_pin_memory = False  # pinned host memory only speeds up copies to a GPU
        if self.encode_batch_size is None:  # inference passes: a GPU keeps busy only with far larger batches
            self.encode_batch_size = GPU_ENCODE_BATCH_SIZE if on_gpu else DEFAULT_ENCODE_BATCH_SIZE
        validate_parameters(self, self._parameter_constraints, type(self).__name__)
        super().__post_init__()
