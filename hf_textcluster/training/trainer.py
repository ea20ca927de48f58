"""ClusteringTrainer: the Trainer shared by all clusterers (two learning rates, k-means initialisation before the first
step, the loss terms in the logs, clustering evaluation). Its parts are functions of the trainer or callbacks it adds,
beside it: ``arguments``, ``collator``, ``targets``, ``checkpoints``, ``callbacks``, ``distributed``,
``initialization`` and ``evaluation``.

``train()`` trains. The steps after it are public: :func:`~hf_textcluster.runs.api.train_clusterer` calls them in
this order (``finish_training(trainer)`` in ``runs.after_training`` runs the three), and so can a user of the trainer::

    trainer.train()
    serve_chosen_partition(trainer)  # hf_textcluster.choosing.serving: what the model serves (``args.serve``)
    trainer.calibrate_model()  # the confidence and outlier distances
    trainer.check_final_health()  # warns when the trained clusters collapsed
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from transformers import Trainer, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from transformers.utils import logging

from ..distributed import sharded_passes
from ..editing.clusters import serve_method_head
from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..modeling.hardware import cpu_capability
from ..modeling.precision import autocast_dtype
from ..modeling.serialization import apply_umask
from ..reuse import embed
from ..timing import phase
from .arguments import ClusteringTrainingArguments
from .callbacks import CheckpointTimeCallback, ClusterHealthCallback, StopOnInterruptCallback, final_health_check
from .checkpoints import restore_resume_files, resume_checkpoint, save_resume_files, training_module_parameters
from .collator import TextViewsCollator, check_text_columns, warn_if_truncated
from .distributed import average_gradients
from .evaluation import evaluate_clusterer
from .initialization import freeze_lower_layers, kmeans_start
from .progress import install_progress_callbacks
from .targets import with_index_column

__all__ = ["ClusteringTrainer", "stage_starts"]

logger = logging.get_logger(__name__)


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


class ClusteringTrainer(Trainer):
    """Base trainer of all clusterers. Subclasses set ``views`` (prefix -> text column) and implement
    ``compute_loss``, recording each loss term with ``self.record_loss_terms`` so they show up in the logs. What a
    method does at the Trainer's events (refreshing its targets, switching its stages) is a ``TrainerCallback``
    named in ``method_callbacks``, built with the trainer."""

    views: dict[str, str] = {"": "text"}
    method_callbacks: tuple[type, ...] = ()
    # A method with per-row targets (``targets``) names them: their file's name; the trainer then adds an ``index``
    # column to its ``train_dataset``. ``targets_at``: the step and epoch whose weights computed them (None: unknown).
    targets_name = ""
    targets: torch.Tensor | None = None
    targets_at: tuple[int, int] | None = None
    initial_kmeans_labels: np.ndarray | None = None  # the k-means start's clusters, the health checks' reference
    main_only = False  # True while distributed.share_from_main computes on the main process alone
    # Whether batches carry each token's word number (``{prefix}word_ids``), for word-level noise in the step.
    word_ids: bool = False
    # compute_loss returns a per-batch mean: the Trainer must divide it under gradient accumulation.
    loss_is_scaled_for_ga = False

    def __init__(
        self,
        model=None,
        args: TrainingArguments | None = None,
        data_collator=None,
        init_embeddings=None,
        train_dataset=None,
        **kwargs,
    ):
        # `init_embeddings` (N x d, one row per training text, e.g. computed to choose K): the k-means
        # initialisation before step 1 starts from them instead of a second encoding pass (used once).
        self.init_embeddings = init_embeddings
        args = ClusteringTrainingArguments(output_dir="tmp_trainer") if args is None else args
        if args.remove_unused_columns:
            raise ValueError(
                "`remove_unused_columns=True` would drop the raw text columns the collator tokenizes; "
                "use `ClusteringTrainingArguments` (it defaults to False) or pass `remove_unused_columns=False`."
            )
        tokenizer = kwargs.setdefault("processing_class", getattr(model, "tokenizer", None))
        if tokenizer is None:
            raise ValueError("The model has no tokenizer: pass `processing_class=` (the encoder's tokenizer).")
        # The clustering config records its tokenizer's special tokens (Trainer would otherwise align them itself
        # and warn on every run that it did).
        for name in ("pad_token_id", "bos_token_id", "eos_token_id"):
            if getattr(tokenizer, name, None) is not None:
                setattr(model.config, name, getattr(tokenizer, name))
        if self.targets_name:
            train_dataset = with_index_column(train_dataset, type(self).__name__)
        check_text_columns(type(self).__name__, self.views, train_dataset, kwargs.get("eval_dataset"))
        if data_collator is None:
            data_collator = self.make_collator(tokenizer, model, args)
        if hasattr(train_dataset, "column_names"):
            warn_if_truncated(train_dataset["text"], tokenizer, model.config.max_length)
        super().__init__(model=model, args=args, data_collator=data_collator, train_dataset=train_dataset, **kwargs)
        freeze_lower_layers(model.encoder, getattr(args, "frozen_layers", 0))
        self._loss_terms: dict[str, list[float]] = {}
        self._stop_on_interrupt = StopOnInterruptCallback()
        self.add_callback(self._stop_on_interrupt)
        self.health_history: list[dict] = []
        self._pending_logs: dict[str, float] = {}
        self.add_callback(ClusterHealthCallback(self))
        install_progress_callbacks(self)  # loss terms by name, and an estimate of the time, not raw log dicts
        for callback in self.method_callbacks:
            self.add_callback(callback(self))
        self.add_callback(CheckpointTimeCallback())  # last: after every callback that may ask for a checkpoint
        logger.warning_once(f"Training precision: {self.precision_description()}.")

    def make_collator(self, tokenizer, model, args):
        """The collator of the method's batches (its ``views``, tokenized), when none is passed."""
        return TextViewsCollator(
            tokenizer,
            model.config.max_length,
            self.views,
            pad_to_max_length=getattr(args, "pad_to_max_length", False),
            word_ids=self.word_ids,
        )

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
    def encode_options(self) -> dict:
        """The batch size and precision of every encoding pass (``embed``, ``predict``, ``calibrate``)."""
        batch_size = getattr(self.args, "encode_batch_size", DEFAULT_ENCODE_BATCH_SIZE)
        return {"batch_size": batch_size, "precision": self.precision}

    calibration_seconds: float = 0.0  # the end-of-training calibration's share of `train()`'s time
    serving_choice: dict | None = None  # what choosing.serving.serve_chosen_partition chose (training_run.json)
    served_labels: np.ndarray | None = None  # and the training texts' served clusters (main process; for naming)

    # ----- loss bookkeeping ----------------------------------------------------------------------------------
    def record_loss_terms(self, **terms: torch.Tensor) -> None:
        if self.model.training:
            for name, value in terms.items():
                self._loss_terms.setdefault(name, []).append(float(value.detach()))

    def log(self, logs: dict[str, float], *args, **kwargs) -> None:
        if "loss" in logs:
            logs.update({f"loss_{name}": round(float(np.mean(v)), 6) for name, v in self._loss_terms.items()})
            logs.update(self._pending_logs)
            self._loss_terms, self._pending_logs = {}, {}
        super().log(logs, *args, **kwargs)

    @staticmethod
    def encode_views(model, inputs: dict[str, torch.Tensor], prefixes: Sequence[str]) -> list[torch.Tensor]:
        """Run several tokenized views through the encoder as one batch; returns one embedding tensor per view."""
        keys = [k for k in ("input_ids", "attention_mask", "token_type_ids") if f"{prefixes[0]}{k}" in inputs]
        joined = {k: torch.cat([inputs[f"{p}{k}"] for p in prefixes]) for k in keys}
        return list(model.encode(**joined).chunk(len(prefixes)))

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

    # ----- per-row targets (looked up over the global batch, saved with each checkpoint) ---------------------------
    def checkpoint_arrays(self) -> dict[str, np.ndarray]:
        """What a resumed run needs besides weights, optimizer and RNG states (the targets, and the k-means start as the
        health checks' reference), by name; saved as ``hf_textcluster_<name>.npy`` in each checkpoint and handed to
        ``restore_checkpoint_arrays`` on resume."""
        arrays = {} if self.initial_kmeans_labels is None else {"initial_kmeans_labels": self.initial_kmeans_labels}
        if self.targets is not None:
            arrays[self.targets_name] = self.targets.cpu().numpy()
            arrays[f"{self.targets_name}_at"] = np.asarray(self.targets_at or (-1, -1))
        return arrays

    def restore_checkpoint_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Take back what ``checkpoint_arrays`` saved (called before a resumed run's first step)."""
        self.initial_kmeans_labels = arrays.get("initial_kmeans_labels", self.initial_kmeans_labels)
        if self.targets_name in arrays:  # as the interrupted run had them, not recomputed from the restored weights
            step, epoch = (int(v) for v in arrays.get(f"{self.targets_name}_at", (-1, -1)))
            self.targets = torch.from_numpy(arrays[self.targets_name])
            self.targets_at = None if step < 0 else (step, epoch)

    def training_modules(self) -> dict[str, torch.nn.Module]:
        """Modules that train with the model but are not served (a denoising decoder), by name: their parameters join
        the optimizer (as ``is_encoder_parameter("<name>.<param>")`` says), their own tensors every checkpoint."""
        return {}

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False):
        super().save_model(output_dir, _internal_call=_internal_call)
        folder = output_dir or self.args.output_dir
        if _internal_call and os.path.basename(os.path.normpath(folder)).startswith(f"{PREFIX_CHECKPOINT_DIR}-"):
            save_resume_files(self, folder)
            if self.args.should_save:
                apply_umask(folder)  # the weights were written private (0600), as transformers writes them

    @torch.no_grad()
    def cluster_probabilities(self, embeddings: np.ndarray) -> torch.Tensor:
        """The head's soft assignments of ``embeddings`` (one row per text), on the model's device."""
        model: Any = self.model
        return model.cluster_probabilities(torch.from_numpy(embeddings).to(model.device))

    def head_predictions(self, texts: Sequence[str]) -> np.ndarray:
        """The head's clusters of ``texts`` mid-training (eval mode), for the cluster health checks."""
        return self.model.predict(texts, show_progress_bar=False, **self.encode_options)

    # ----- whole-dataset passes (targets, pseudo-labels) ------------------------------------------------------
    def sample_train_texts(self, size: int) -> tuple[np.ndarray, list[str]]:
        """A seeded sample of at most ``size`` training texts, in dataset order: their rows and the texts."""
        dataset: Any = self.train_dataset
        texts = dataset["text"]
        rows = np.sort(np.random.default_rng(self.args.seed).choice(len(texts), min(size, len(texts)), replace=False))
        return rows, [texts[int(i)] for i in rows]

    def embed_train_texts(self) -> np.ndarray:
        """The pooled embeddings of every training text (one inference pass, dropout off), on every process; with
        several processes each encodes its share of the texts (see ``sharded_passes``)."""
        if self.train_dataset is None:
            raise ValueError(f"Pass a `train_dataset`: {type(self).__name__} computes its clusters from all its texts.")
        with self.sharded_passes():
            return embed(
                self.model,
                self.train_dataset["text"],
                show_progress_bar=not self.args.disable_tqdm,
                **self.encode_options,
            )

    def sharded_passes(self):
        """Within it, encoding passes are split between the processes (all make the same calls); see ``main_only``."""
        if self.accelerator.num_processes == 1 or self.main_only:
            return contextlib.nullcontext(self.model)
        return sharded_passes(self.model, self.accelerator.state)

    def initialize_clusters(self, embeddings: np.ndarray | None = None) -> None:
        """The clusters before step 1 (``initialization.kmeans_start``, from ``embeddings`` when given)."""
        kmeans_start(self, embeddings)

    # ----- optimisation --------------------------------------------------------------------------------------
    def create_optimizer(self, model=None):
        """Two learning rates: ``learning_rate`` for the encoder, ``head_learning_rate`` for heads and centroids."""
        opt_model: Any = self.model if model is None else model
        if self.optimizer is None:
            # A method builds its training modules (ClusterBERT's decoder) in __init__, beside the model as it was
            # then. Where the model moved since (by hand, or placed by FSDP (v1), which makes the optimizer
            # afterwards), the parameters they share with it moved too, their own tensors (cross-attention, position
            # buffers) did not.
            for module in self.training_modules().values():
                module.to(next(opt_model.parameters()).device)
            head_lr = getattr(self.args, "head_learning_rate", None) or self.args.learning_rate * 100
            encoder_params, head_params = [], []
            for name, param in [*opt_model.named_parameters(), *training_module_parameters(self)]:
                if param.requires_grad:
                    (encoder_params if self.is_encoder_parameter(name) else head_params).append(param)
            groups = [
                {"params": encoder_params, "lr": self.args.learning_rate, "weight_decay": self.args.weight_decay},
                {"params": head_params, "lr": head_lr, "weight_decay": 0.0},
            ]
            optimizer_cls, optimizer_kwargs = self.get_optimizer_cls_and_kwargs(self.args, opt_model)
            optimizer_kwargs.pop("lr", None)
            self.optimizer = optimizer_cls([g for g in groups if g["params"]], **optimizer_kwargs)
            own = [param for _, param in training_module_parameters(self)]
            if own:  # the Trainer zeroes the model's gradients only: without this, these would sum over all steps
                self.optimizer.register_step_post_hook(lambda *_: [setattr(p, "grad", None) for p in own])
        return self.optimizer

    def _clip_grad_norm(self, model):
        # The training modules' own parameters are clipped with the model's, as one norm (as sentence-transformers
        # clips its whole loss model). Private, kept on purpose: no public hook runs between the last backward and the
        # clipping, and a callback clipping afterwards would clip twice; tests/training/test_trainer_hooks.py fails
        # if the name goes.
        own = [param for _, param in training_module_parameters(self)]
        if not own or self._has_mixed_mesh_grads(model):
            return super()._clip_grad_norm(model)
        return self.accelerator.clip_grad_norm_([*model.parameters(), *own], self.args.max_grad_norm)

    def is_encoder_parameter(self, name: str) -> bool:
        """Whether the parameter ``name`` trains at ``learning_rate`` (the encoder) or ``head_learning_rate``."""
        return name.startswith("encoder.")

    def autocast_smart_context_manager(self, cache_enabled: bool | None = True):
        # Accelerate applies bf16/fp16 autocast by wrapping `model.forward`; our losses call `model.encode` and the
        # heads directly, so without this the "mixed precision" run would silently stay in fp32.
        dtype = autocast_dtype(self.precision, self.args.device)
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.args.device.type, dtype=dtype, cache_enabled=cache_enabled)

    def training_step(self, model, inputs, num_items_in_batch=None):
        # The unwrapped model: the gradients are averaged below, not by DDP (see distributed.average_gradients).
        loss = super().training_step(self.accelerator.unwrap_model(model), inputs, num_items_in_batch)
        if self.accelerator.num_processes > 1:
            average_gradients(self)
        if not torch.isfinite(loss).all():
            terms = {name: values[-1] for name, values in self._loss_terms.items() if values}
            raise FloatingPointError(
                f"The loss became {float(loss)} at step {self.state.global_step + 1} (terms: {terms}): training "
                "diverged. Lower the learning rate (`learning_rate` / `head_learning_rate`) and retrain; checkpoints "
                "already written are kept, the diverged weights are not saved."
            )
        return loss

    def train(self, resume_from_checkpoint: str | bool | None = None, **kwargs):
        """Train (the Trainer's loop), resuming from ``resume_from_checkpoint`` (``True``: the newest complete one);
        a fresh run fits the clusters by k-means first. Training only: the steps after it (what to serve,
        calibration, the final health check) are called next, see the module's docstring."""
        dataset, args = self.train_dataset, self.args
        # a run that would train no step at all is an error, not a saved k-means initialisation
        batch = args.per_device_train_batch_size * max(1, args.n_gpu)
        if hasattr(dataset, "__len__") and args.max_steps != 0 and args.dataloader_drop_last and len(dataset) < batch:
            raise ValueError(
                f"`train_dataset` has {len(dataset)} rows but `per_device_train_batch_size` is {batch} with "
                f"`dataloader_drop_last=True`: not one full batch, so nothing would be trained. Lower the batch size "
                f"(e.g. --per-device-train-batch-size {max(2, len(dataset) // 2)}) or pass --dataloader-drop-last "
                f"false."
            )
        if getattr(self.model.config, "refined_head_dim", 0):
            # the losses train the method's head: a refined head in front of it would take its gradients instead
            logger.warning(
                f"The model serves its {self.model.config.served_partition} partition; training continues "
                f"the method's own head, and what it serves is set again at the end (serve="
                f"{self.args.serve!r})."
            )
            serve_method_head(self.model)
        checkpoint = resume_checkpoint(self, resume_from_checkpoint)
        with self._stop_on_interrupt.handling_signals():
            # A resumed run restores trained centroids from its checkpoint; a fresh run fits them first.
            if checkpoint and os.path.isdir(checkpoint):
                restore_resume_files(self, checkpoint)
            elif not checkpoint and not self.model.config.centroids_initialized:
                embeddings, self.init_embeddings = self.init_embeddings, None
                with phase("init"):
                    self.initialize_clusters(embeddings)
            output = super().train(resume_from_checkpoint=checkpoint, **kwargs)
            if self._stop_on_interrupt.received is not None:
                raise KeyboardInterrupt(
                    f"Interrupted at step {self.state.global_step}: a checkpoint is saved in {self.args.output_dir}; "
                    "run the same command again to resume from it."
                )
        return output

    def restore_config(self, saved: dict) -> None:
        """Take from a resumed checkpoint's config what the Trainer does not restore (it restores the weights only),
        before the weights load."""
        self.model.config.centroids_initialized = self.model.config.centroids_initialized or saved.get(
            "centroids_initialized", False
        )

    def _run_epoch(self, *args, **kwargs):
        # A run resumed from its last step (a finished run started again, or one killed during the final
        # calibration) trains no further step: the Trainer would otherwise train one more before it checks.
        # Private, kept on purpose: no public hook runs between the start of an epoch and its first step (callbacks'
        # `should_training_stop` is read only after a step); tests/training/test_trainer_hooks.py fails if it goes.
        if self.state.max_steps and self.state.global_step >= self.state.max_steps:
            self.control.should_training_stop = True
            return None
        return super()._run_epoch(*args, **kwargs)

    # ----- after training: public steps train_clusterer calls in turn ------------------------------------------
    final_health: dict | None = None  # check_final_health's record

    def calibrate_model(self, embeddings: np.ndarray | None = None) -> None:
        """Calibrate the trained model's confidence and outlier distances on a seeded sample of
        ``calibration_sample_size`` training texts (``model.calibrate``), so that every saved model carries them.
        Call it after ``train()`` and after choosing what the model serves (the calibration is of what it serves).
        ``embeddings``: the trained model's ``embed_train_texts()``, when the caller has them (choosing what to serve
        computed them): the sample's rows are taken from them instead of encoding it again."""
        size = getattr(self.args, "calibration_sample_size", 10_000)
        if not size or self.train_dataset is None or not self.model.config.centroids_initialized:
            return
        start = time.perf_counter()

        with self.sharded_passes():  # every process encodes its share and fits the same calibration from all of it
            self.model.calibrate(
                self.train_dataset["text"],
                sample_size=size,
                random_state=self.args.seed,
                show_progress_bar=False,
                embeddings=embeddings,
                **self.encode_options,
            )
        # kept apart from training's time: it grows with the sample, not with the steps
        self.calibration_seconds = time.perf_counter() - start
        logger.info(
            f"Calibrated the confidence and outlier distances on {self.model.config.num_calibration_texts} "
            f"training texts in {self.calibration_seconds:.1f}s."
        )

    def check_final_health(self) -> dict | None:
        """The trained model's clusters of a seeded sample of ``health_sample_size`` training texts, as it serves
        them, once training has ended: every method, whatever its stages (a check during training may have run
        before a head existed, or on a head mode other than the served one). Warns when the clusters collapsed (fewer
        than half of them used, or one holding 90% of the texts). Off with ``health_check_steps=0``."""
        return final_health_check(self)

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
            kmeans=getattr(self.args, "eval_kmeans", True),
            n_init=getattr(self.args, "kmeans_n_init", 10),
            random_state=self.args.seed,
            show_progress_bar=not self.args.disable_tqdm,
            **self.encode_options,
        )
        metrics = {f"{metric_key_prefix}_{k}": v for k, v in metrics.items()}
        metrics[f"{metric_key_prefix}_runtime"] = round(time.perf_counter() - start, 4)
        self.log(metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics
