"""AECLTrainer: AECL's three training stages (Algorithm 1) as one training run.

Stage 1 (the first ``stage1_fraction`` of the steps): λ1 · L_I only (Eq. 9). Stage 2 (the next ``stage2_fraction``):
pseudo-labels from k-means on the encoder's embeddings V of all training texts, L = λ1 L_I + λ2 L_P (Eq. 14).
Stage 3: the model's own confident predictions are the pseudo-labels (Eq. 4), L = L_C + λ1 L_I + λ2 L_P + λ3 L_E1 +
λ4 L_E2 (Eq. 15). The k-means pseudo-labels are saved with every checkpoint, so a resumed run continues in the right
stage with the right labels. At the end, a reference set of training texts is stored for batch-independent serving.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from transformers.utils import logging

from ...training.callbacks import MethodCallback
from ...training.distributed import gather
from ...training.initialization import run_kmeans
from ...training.targets import batch_targets, set_targets, targets_computed_at
from ...training.trainer import ClusteringTrainer
from .losses_aecl import (
    cluster_contrastive_loss,
    marginal_entropy,
    pseudo_label_loss,
    row_entropy,
    similarity_guided_contrastive_loss,
)

logger = logging.get_logger(__name__)


def set_reference_texts(model, texts, batch_size: int = 128, precision="auto") -> None:
    """Use ``texts`` (e.g. a sample of the training texts) as an AECL ``model``'s serving reference set: the
    projections z (R x D2) of their embeddings are stored with its weights (``reference_projections``, and their
    number in ``config.num_reference_texts``)."""
    embeddings = model.embed(texts, batch_size=batch_size, precision=precision)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        z = model.cluster_features(torch.from_numpy(embeddings).to(model.device)).float()
    model.train(was_training)
    model.reference_projections = z.to(model.reference_projections.device)
    model.config.num_reference_texts = z.shape[0]


class AECLStagesCallback(MethodCallback):
    """Stage 2's k-means pseudo-labels when stage 2 starts (and every ``pseudo_label_refresh_steps`` within it; they
    go into each checkpoint), and the serving reference set when training ends."""

    def on_step_begin(self, args, state, control, **kwargs):
        trainer, step = self._trainer(), state.global_step
        if trainer.stage(step) == 1:
            return
        trainer.model.config.centroids_initialized = True  # the clustering network trains from stage 2 (or 3) on
        interval = trainer.model.config.pseudo_label_refresh_steps
        due = interval is not None and (step - trainer.stage_bounds()[0]) % interval == 0
        if trainer.stage(step) == 2 and (trainer.targets is None or due and not targets_computed_at(trainer, step)):
            trainer.refresh_targets()

    def on_train_end(self, args, state, control, **kwargs):
        trainer = self._trainer()
        if trainer.model.config.centroids_initialized:  # a seeded sample of ``reference_size`` training texts
            _, texts = trainer.sample_train_texts(trainer.model.config.reference_size)
            set_reference_texts(trainer.model, texts, **trainer.encode_options)


class AECLTrainer(ClusteringTrainer):
    """Trains an [`AECLModel`] on rows ``{text, text_aug1}``: the original X^(0) and one augmented view X^(1) (the
    authors' EDA view: ``augmentation="aecl_eda"``). Both views go through the encoder as one batch; the attention
    runs over the samples of the batch."""

    views = {"": "text", "aug1_": "text_aug1"}
    stage_fractions = ("stage1_fraction", "stage2_fraction")
    targets_name = "aecl_pseudo_labels"  # stage 2's k-means pseudo-labels of every training row
    method_callbacks = (AECLStagesCallback,)

    def __init__(self, model=None, *args, **kwargs):
        if model is not None and model.config.serving_head == "kmeans":
            logger.warning(
                "This AECL model was re-clustered (serving_head='kmeans'). Training fits the clustering "
                "network, so the model serves it again (serving_head='network'); re-cluster after training "
                "to serve k-means centres."
            )
            model.config.serving_head = "network"
        super().__init__(model, *args, **kwargs)

    # ----- pseudo-labels (AECLStagesCallback refreshes them) ----------------------------------------------------------
    def initialize_clusters(self, embeddings: np.ndarray | None = None) -> None:
        """k-means on the initial embeddings V of the training texts (the authors' code does this before epoch 1):
        ``initial_kmeans_labels`` (plain k-means, measured in the same run), and stage 2's labels if it starts at
        step 0. AECL has no centroids to initialise."""
        embeddings = self.embed_train_texts() if embeddings is None else embeddings
        self.initial_kmeans_labels = run_kmeans(self, embeddings).labels_
        if self.model.config.stage1_fraction == 0 and self.model.config.stage2_fraction > 0:  # stage 2 starts now
            set_targets(self, torch.as_tensor(self.initial_kmeans_labels, dtype=torch.long))

    def refresh_targets(self) -> None:
        """Stage 2's pseudo-labels: k-means (seeded) on the current encoder's embeddings V of all training texts."""
        start = time.perf_counter()
        set_targets(self, torch.as_tensor(run_kmeans(self, self.embed_train_texts()).labels_, dtype=torch.long))
        logger.info(
            f"AECL stage 2: k-means pseudo-labels of {len(self.targets)} rows in {time.perf_counter() - start:.1f}s."
        )

    def head_predictions(self, texts) -> np.ndarray:
        """Mid-training there is no reference set yet: each text attends to itself (``"self"``)."""
        model, was_training = self.model, self.model.training
        embeddings = torch.from_numpy(model.embed(texts, **self.encode_options))
        model.eval()
        try:
            with torch.no_grad():
                h, _ = model.attend(model.cluster_features(embeddings.to(model.device)), mode="self")
                return model.cluster_head(h).argmax(-1).cpu().numpy()
        finally:
            model.train(was_training)

    # ----- the loss ------------------------------------------------------------------------------------------------
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        config = model.config
        stage = self.stage(self.state.global_step)
        v0, v1 = gather(self, *self.encode_views(model, inputs, ("", "aug1_")))
        z0, z1 = model.cluster_features(v0), model.cluster_features(v1)
        (h0, s0), (h1, s1) = model.attention(z0), model.attention(z1)  # over the batch
        logits0, logits1 = model.cluster_head(h0).float(), model.cluster_head(h1).float()
        p0, p1 = torch.softmax(logits0, dim=-1), torch.softmax(logits1, dim=-1)
        predicted = p0.detach().argmax(dim=-1)  # Λ_i: the texts of the same predicted cluster
        guided = config.similarity_guided  # Eq. 6-9; without it the paper's "No IC" ablation
        terms = {
            "similarity_guided_cl": similarity_guided_contrastive_loss(
                z0, z1, h0, h1, s0, s1, predicted, temperature=config.instance_temperature, similarity_guided=guided
            )
        }
        loss = config.instance_loss_weight * terms["similarity_guided_cl"]
        if stage >= 2:
            if stage == 2:
                labels = batch_targets(self, inputs, p1.device)
            else:  # Eq. 4: the model's own confident predictions
                confidence = p0.detach().max(dim=-1).values
                labels = torch.where(
                    confidence >= config.confidence_threshold, predicted, torch.full_like(predicted, -1)
                )
            terms["pseudo_label"] = pseudo_label_loss(torch.log_softmax(logits1, dim=-1), labels)
            loss = loss + config.pseudo_label_loss_weight * terms["pseudo_label"]
        if stage == 3:
            terms["cluster_cl"] = cluster_contrastive_loss(p0, p1, temperature=config.cluster_temperature)
            terms["row_entropy"] = row_entropy(p0)
            terms["marginal_entropy"] = marginal_entropy(p0, p1)
            loss = (
                loss
                + terms["cluster_cl"]
                + config.row_entropy_weight * terms["row_entropy"]
                + config.marginal_entropy_weight * terms["marginal_entropy"]
            )
        self.record_loss_terms(**terms)
        return (loss, {"cluster_probs": p0, "embeddings": v0}) if return_outputs else loss
