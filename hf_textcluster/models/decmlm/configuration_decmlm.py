"""DEC-MLM configuration (Huang et al., "Unsupervised Fine-tuning for Text Clustering", COLING 2020)."""

from __future__ import annotations

from numbers import Real

from ...modeling.configuration_utils import NON_NEGATIVE_NUMBER, POSITIVE_NUMBER, SIZE, TextClusteringConfig
from ...modeling.validation import Interval


class DECMLMConfig(TextClusteringConfig):
    r"""
    Configuration of [`DECMLMModel`]: an encoder with a masked-LM head (decoder tied to the input word embeddings)
    and K centroids with a Student's t soft assignment. Pooling is ``"mean"`` as in the paper (``"cls"`` is its
    "w/o average pooling" ablation).

    Args:
        alpha (`float`): degrees of freedom of the Student's t kernel, Eq. 3 (1 in the paper).
        mlm_probability (`float`): share of the (non-special) tokens selected for the masked-LM loss (0.1).
        mlm_mask_fraction (`float`): of the selected tokens, the share replaced by the mask token (BERT: 0.8).
        mlm_random_fraction (`float`): of the selected tokens, the share replaced by a random token (BERT: 0.1);
            the rest is left unchanged (but still predicted).
        mlm_loss_weight (`float`): weight of L_m in Eq. 1 (1; 0 is the paper's "w/o masked LM loss" ablation, which
            also skips masking and the head).
        cluster_loss_weight (`float`): weight of L_c = KL(P‖Q), Eq. 2 (1).
        target_refresh_steps (`int`, *optional*): recompute the target P every this many optimizer steps instead of
            once per epoch (the paper). ``None`` (default) is the paper's per-epoch refresh; an interval is the
            original DEC's ``update_interval``, for runs shorter than an epoch (the CPU recipe).
        mlm_head_pretrained (`bool`): whether the masked-LM head started from pretrained weights (False when the
            encoder checkpoint had no MLM head, e.g. a sentence-transformers model: the head was trained from scratch).
    """

    model_type = "decmlm"

    alpha: float = 1.0
    mlm_probability: float = 0.1
    mlm_mask_fraction: float = 0.8
    mlm_random_fraction: float = 0.1
    mlm_loss_weight: float = 1.0
    cluster_loss_weight: float = 1.0
    target_refresh_steps: int | None = None
    mlm_head_pretrained: bool = False

    _parameter_constraints = {
        **TextClusteringConfig._parameter_constraints,
        "alpha": POSITIVE_NUMBER,
        "mlm_probability": Interval(Real, 0, 1, closed="neither"),
        **dict.fromkeys(("mlm_mask_fraction", "mlm_random_fraction"), Interval(Real, 0, 1)),
        **dict.fromkeys(("mlm_loss_weight", "cluster_loss_weight"), NON_NEGATIVE_NUMBER),
        "target_refresh_steps": [SIZE, None],  # None: once per epoch, as the paper
    }

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        if self.mlm_mask_fraction + self.mlm_random_fraction > 1:
            raise ValueError(
                f"`mlm_mask_fraction` + `mlm_random_fraction` must be <= 1 (the rest of the selected tokens stays "
                f"unchanged), got {self.mlm_mask_fraction} + {self.mlm_random_fraction}."
            )
        if self.mlm_loss_weight == 0 and self.cluster_loss_weight == 0:
            raise ValueError("`mlm_loss_weight` and `cluster_loss_weight` are both 0: nothing would be trained.")
