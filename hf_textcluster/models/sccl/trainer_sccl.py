"""SCCLTrainer: the joint objective of SCCL, Eq. 7 = η · Instance-CL (Eq. 1-2) + KL(P‖Q) (Eq. 4-6)."""

from __future__ import annotations

from ...training.distributed import gather
from ...training.losses import dec_kl_loss, dec_target_distribution
from ...training.trainer import ClusteringTrainer
from .losses_sccl import instance_contrastive_loss


class SCCLTrainer(ClusteringTrainer):
    """Trains an [`SCCLModel`] on rows ``{text, text_aug1, text_aug2}``.

    The clustering loss uses the original texts with the target P recomputed per batch (Eq. 4); the instance
    contrastive loss uses the 2M augmented views. The three views go through the encoder as one batch. Without
    augmentation columns, pass a dataset whose ``text_aug1``/``text_aug2`` equal ``text`` ("virtual" views:
    dropout is the only augmentation, as in the authors' code).
    """

    views = {"": "text", "aug1_": "text_aug1", "aug2_": "text_aug2"}

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        config = model.config
        original, view1, view2 = gather(self, *self.encode_views(model, inputs, ("", "aug1_", "aug2_")))
        contrastive = instance_contrastive_loss(
            model.contrast_head(view1), model.contrast_head(view2), temperature=config.temperature
        )
        q = model.cluster_probabilities(original)
        cluster = dec_kl_loss(dec_target_distribution(q), q)
        loss = config.eta * contrastive + config.cluster_loss_weight * cluster
        self.record_loss_terms(instance_cl=contrastive, cluster_kl=cluster)
        return (loss, {"cluster_probs": q, "embeddings": original}) if return_outputs else loss
