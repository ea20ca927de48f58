"""DECMLMTrainer: the joint objective of DEC-MLM, Eq. 1: L = L_m (masked LM) + L_c (KL(P‖Q), Eq. 2-5).

The target P is refreshed once per epoch over the whole training set, from unmasked inputs (Sec. 2.2: "we update
the target distribution P ... per epoch rather than per batch ... without masking any token"); each batch looks
its rows' targets up by their ``index``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
from transformers.utils import logging

from ...timing import phase
from ...training.callbacks import MethodCallback
from ...training.collator import TextViewsCollator
from ...training.distributed import gather, global_mean
from ...training.losses import dec_kl_loss, dec_target_distribution
from ...training.targets import batch_targets, set_targets, targets_computed_at
from ...training.trainer import ClusteringTrainer
from .losses_decmlm import encode_masked, masked_lm_loss

logger = logging.get_logger(__name__)

IGNORE_INDEX = -100


def mask_tokens(
    input_ids: torch.Tensor,
    maskable: torch.Tensor,
    mask_token_id: int,
    replacement_ids: torch.Tensor,
    probability: float = 0.1,
    mask_fraction: float = 0.8,
    random_fraction: float = 0.1,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking: select each ``maskable`` token with ``probability``; of the selected, replace
    ``mask_fraction`` by the mask token, ``random_fraction`` by a random id from ``replacement_ids`` and keep the
    rest. Returns ``(masked_input_ids, labels)``; labels are the original ids at selected positions, -100 elsewhere.
    """
    draw = torch.rand(input_ids.shape, generator=generator)
    selected = (draw < probability) & maskable.bool()
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, IGNORE_INDEX))
    action = torch.rand(input_ids.shape, generator=generator)
    to_mask = selected & (action < mask_fraction)
    to_random = selected & (action >= mask_fraction) & (action < mask_fraction + random_fraction)
    masked = input_ids.clone()
    masked[to_mask] = mask_token_id
    picks = torch.randint(len(replacement_ids), input_ids.shape, generator=generator)
    masked[to_random] = replacement_ids[picks[to_random]].to(masked.dtype)
    return masked, labels


@dataclass(eq=False, kw_only=True)
class MaskedLMCollator(TextViewsCollator):
    """Tokenizes the ``text`` column (``input_ids``, ``attention_mask``, ``index``); ``add_masks`` adds a masked copy
    for the masked-LM loss: ``mlm_input_ids`` and ``mlm_labels`` (BERT 80/10/10 masking of ``probability`` of the
    tokens; special and padding tokens are never selected; with ``probability=0`` nothing). The trainer masks in the
    training step, not while collating: the Trainer collates the next batch ahead of time, so masks drawn while
    collating would not follow the RNG state a checkpoint saves (resume would differ)."""

    probability: float = 0.1
    mask_fraction: float = 0.8
    random_fraction: float = 0.1
    vocab_size: int | None = None
    generator: torch.Generator | None = None

    def __post_init__(self):
        super().__post_init__()
        tokenizer = self.tokenizer
        self.special_ids = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        if self.probability > 0 and tokenizer.mask_token_id is None:
            raise ValueError(
                f"The tokenizer ({type(tokenizer).__name__}) has no mask token, which the masked-LM loss needs; use "
                "an encoder with a masked-LM vocabulary or set `mlm_loss_weight=0`."
            )
        candidates = torch.arange(min(len(tokenizer), self.vocab_size) if self.vocab_size else len(tokenizer))
        self.replacement_ids = candidates[~torch.isin(candidates, self.special_ids)]

    def add_masks(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Add ``mlm_input_ids`` / ``mlm_labels`` to a tokenized batch (in place; also returned)."""
        if self.probability > 0:
            input_ids, device = batch["input_ids"].cpu(), batch["input_ids"].device
            maskable = batch["attention_mask"].cpu().bool() & ~torch.isin(input_ids, self.special_ids)
            masked, labels = mask_tokens(
                input_ids,
                maskable,
                self.tokenizer.mask_token_id,
                self.replacement_ids,
                self.probability,
                self.mask_fraction,
                self.random_fraction,
                self.generator,
            )
            batch["mlm_input_ids"], batch["mlm_labels"] = masked.to(device), labels.to(device)
        return batch


class DECTargetsCallback(MethodCallback):
    """Refreshes P when an epoch begins, or every ``config.target_refresh_steps`` optimizer steps when set. P is not
    refreshed where it was computed at this very step: by the k-means initialisation pass before step 1, or by a
    refresh at an epoch boundary that is also a step boundary; a run resumed inside an epoch keeps the P its
    checkpoint holds (computed when that epoch began)."""

    def on_epoch_begin(self, args, state, control, **kwargs):
        trainer = self._trainer()
        stale = trainer.targets_at is None or trainer.targets_at[1] < math.floor(state.epoch + 1e-9)
        per_epoch = trainer.model.config.target_refresh_steps is None and stale
        if (trainer.targets is None or per_epoch) and not targets_computed_at(trainer, state.global_step):
            trainer.refresh_targets()

    def on_step_begin(self, args, state, control, **kwargs):
        trainer, step = self._trainer(), state.global_step
        interval = trainer.model.config.target_refresh_steps
        if interval is not None and step % interval == 0 and not targets_computed_at(trainer, step):
            trainer.refresh_targets()

    def on_train_end(self, args, state, control, **kwargs):
        # the weights moved on: a later train() must not reuse P as "computed at step 0"
        self._trainer().targets_at = None


class DECMLMTrainer(ClusteringTrainer):
    """Trains a [`DECMLMModel`] on rows ``{text}`` (no augmented views).

    Loss = ``mlm_loss_weight`` · L_m + ``cluster_loss_weight`` · KL(P‖Q). The centroids come from k-means on the
    initial embeddings (before the first step). Learning rates: ``learning_rate`` for the encoder (and for the MLM
    head when it started pretrained), ``head_learning_rate`` for the centroids (and for an untrained MLM head). Each
    step runs the encoder once on the masked batch: the token states feed the MLM head at the masked positions and
    their mean pool gives Q. P is not computed per batch: a callback (``DECTargetsCallback``) recomputes it over all N
    training rows from unmasked inputs at every epoch start (``self.targets``, N x K, row i = the dataset's row i),
    and each batch looks up its rows by ``index`` (a column added here when the dataset has none);
    ``config.target_refresh_steps`` refreshes every that many steps instead. With
    ``mlm_loss_weight=0`` nothing is masked and the MLM head never runs.
    """

    views = {"": "text"}
    targets_name = "dec_targets"
    method_callbacks = (DECTargetsCallback,)
    target_refreshes = 0

    def make_collator(self, tokenizer, model, args):
        config = model.config
        return MaskedLMCollator(
            tokenizer=tokenizer,
            max_length=config.max_length,
            probability=config.mlm_probability if config.mlm_loss_weight > 0 else 0.0,
            mask_fraction=config.mlm_mask_fraction,
            random_fraction=config.mlm_random_fraction,
            vocab_size=config.encoder.vocab_size,
            pad_to_max_length=getattr(args, "pad_to_max_length", False),
        )

    def is_encoder_parameter(self, name: str) -> bool:
        # A pretrained MLM head is fine-tuned with the encoder (the paper: one learning rate); an untrained one
        # (an encoder checkpoint without MLM head) learns at the heads' rate, like the centroids.
        if name.startswith("mlm_head."):
            return bool(self.model.config.mlm_head_pretrained)
        return super().is_encoder_parameter(name)

    # ----- the target distribution P ------------------------------------------------------------------------
    def _set_targets(self, embeddings: np.ndarray) -> None:
        set_targets(self, dec_target_distribution(self.cluster_probabilities(embeddings)).float())  # Eq. 5, f_j over N
        self.target_refreshes += 1

    def refresh_targets(self) -> None:
        """Recompute P over the whole training set from unmasked inputs (dropout off)."""
        start = time.perf_counter()
        with phase("targets"):
            self._set_targets(self.embed_train_texts())
        logger.info(f"Refreshed the DEC targets of {len(self.targets)} rows in {time.perf_counter() - start:.1f}s.")

    def initialize_clusters(self, embeddings: np.ndarray | None = None) -> None:
        # One encoding pass serves both k-means and the first epoch's targets.
        if (
            embeddings is None
            and self.train_dataset is not None
            and len(self.train_dataset) >= self.model.config.num_clusters
        ):
            embeddings = self.embed_train_texts()
        super().initialize_clusters(embeddings=embeddings)
        self._set_targets(embeddings)

    # ----- the loss ------------------------------------------------------------------------------------------
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        config = model.config
        p = batch_targets(self, inputs, model.device)
        attention_mask = inputs["attention_mask"]
        token_type_ids = inputs.get("token_type_ids")
        terms = {}
        if config.mlm_loss_weight > 0:
            if "mlm_input_ids" not in inputs:
                if not isinstance(self.data_collator, MaskedLMCollator):
                    raise ValueError(
                        "The batch has no 'mlm_input_ids'/'mlm_labels': use the trainer's MaskedLMCollator."
                    )
                self.data_collator.add_masks(inputs)
            embeddings, logits, labels = encode_masked(
                model, inputs["mlm_input_ids"], attention_mask, inputs["mlm_labels"], token_type_ids
            )
            terms["mlm"] = global_mean(self, masked_lm_loss(logits, labels), (labels != IGNORE_INDEX).sum())
        else:  # the "w/o masked LM loss" ablation: unmasked inputs, no MLM head
            embeddings = model.encode(inputs["input_ids"], attention_mask, token_type_ids)
        embeddings = gather(self, embeddings)
        q = model.cluster_probabilities(embeddings)
        terms["cluster_kl"] = dec_kl_loss(p, q)
        loss = config.cluster_loss_weight * terms["cluster_kl"]
        if "mlm" in terms:
            loss = config.mlm_loss_weight * terms["mlm"] + loss
        self.record_loss_terms(**terms)
        return (loss, {"cluster_probs": q, "embeddings": embeddings}) if return_outputs else loss
