"""SCCL configuration (Zhang et al., "Supporting Clustering with Contrastive Learning", NAACL 2021)."""

from __future__ import annotations

from ...modeling.configuration_utils import NON_NEGATIVE_NUMBER, POSITIVE_NUMBER, SIZE, TextClusteringConfig


class SCCLConfig(TextClusteringConfig):
    r"""
    Configuration of [`SCCLModel`]: an encoder, a contrast head g (Linear-ReLU-Linear to ``contrast_dim``) and
    K centroids with a Student's t soft assignment.

    Args:
        contrast_dim (`int`): output size of the contrast head (128 in the paper).
        alpha (`float`): degrees of freedom of the Student's t kernel, Eq. 3 (1; 10 for Biomedical).
        temperature (`float`): τ of the instance contrastive loss, Eq. 1 (0.5).
        eta (`float`): η, the weight of the instance contrastive loss in Eq. 7 (10).
        cluster_loss_weight (`float`): weight of the clustering loss KL(P‖Q) (1 in the paper; the authors' code
            uses 0.5 in its "virtual" dropout-only augmentation mode).
    """

    model_type = "sccl"

    contrast_dim: int = 128
    alpha: float = 1.0
    temperature: float = 0.5
    eta: float = 10.0
    cluster_loss_weight: float = 1.0

    _parameter_constraints = {
        **TextClusteringConfig._parameter_constraints,
        "contrast_dim": SIZE,
        **dict.fromkeys(("alpha", "temperature"), POSITIVE_NUMBER),
        **dict.fromkeys(("eta", "cluster_loss_weight"), NON_NEGATIVE_NUMBER),
    }
