"""ClusterBERT configuration ("ClusterBERT: Multi-stage fine-tuning of transformers for deep text clustering")."""

from __future__ import annotations

from numbers import Real

from ...modeling.configuration_utils import SHARE, SIZE, TextClusteringConfig
from ...modeling.validation import Interval, Options


class ClusterBERTConfig(TextClusteringConfig):
    r"""
    Configuration of [`ClusterBERTModel`]: an encoder whose pooled sentence embedding z (CLS in the paper) feeds a
    linear clustering head with softmax (Eq. 2). The denoising decoder of stage 1 (TSDAE) is a training-time part,
    not in the served model.

    Args:
        deletion_ratio (`float`): the share of words deleted from a text to make its noised input x̃ (TSDAE's 0.6).
        stage1_fraction (`float`): the share of the training steps spent on domain adaptation (L_rec only, Eq. 1).
            0 skips it (the "no domain adaptation" comparison).
        stage2_fraction (`float`): the share spent on clustering against k-means targets (Eq. 3-4). The rest is the
            hardening stage (Eq. 5). Must be > 0: hardening needs a trained head.
        clustering_rounds (`int`): how many times stage 2 computes its targets Q by k-means on the embeddings of all
            training texts (at evenly spaced steps; the paper re-clusters 1-2 times).
        hardening_rounds (`int`): how many times stage 3 recomputes Q by Eq. 5 from the head's predictions on the
            un-noised texts (the paper: once per epoch, 2 epochs).
        clustering_weight (`float`): λ of Eq. 4 in stage 2 (0.8); 1 drops the reconstruction loss (the paper's
            ablation).
        hardening_weight (`float`): λ of Eq. 4 in stage 3 (0.75).
        head_init (`str`): how the clustering head starts at each k-means round: ``"random"`` (the paper: it learns
            Q from scratch) or ``"kmeans"`` (its logits start as -‖z - c_k‖² + ‖z‖² of the round's k-means centres,
            so the head predicts the k-means clusters from the first step: a choice of ours for short budgets).
        keep_decoder (`bool`): also save the trained denoising decoder (a ``*ForCausalLM`` folder, ``decoder/``
            beside the model) for further training; the served model never contains it.
    """

    model_type = "clusterbert"

    pooling: str = "cls"
    deletion_ratio: float = 0.6
    stage1_fraction: float = 0.25
    stage2_fraction: float = 0.5
    clustering_rounds: int = 2
    hardening_rounds: int = 2
    clustering_weight: float = 0.8
    hardening_weight: float = 0.75
    head_init: str = "random"
    keep_decoder: bool = False

    _parameter_constraints = {
        **TextClusteringConfig._parameter_constraints,
        **dict.fromkeys(("clustering_rounds", "hardening_rounds"), SIZE),
        **dict.fromkeys(("deletion_ratio", "stage1_fraction"), SHARE),
        "stage2_fraction": Interval(Real, 0, 1, closed="neither"),  # hardening sharpens a head that stage 2 trained
        **dict.fromkeys(("clustering_weight", "hardening_weight"), Interval(Real, 0, 1)),
        "head_init": Options("random", "kmeans"),
    }

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        if self.stage1_fraction + self.stage2_fraction > 1:
            raise ValueError(
                f"`stage1_fraction` + `stage2_fraction` must be at most 1, got "
                f"{self.stage1_fraction} + {self.stage2_fraction}."
            )
