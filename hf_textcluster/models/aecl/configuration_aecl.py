"""AECL configuration (Yao and Li, "Discriminative Representation learning via Attention-Enhanced Contrastive Learning
for Short Text Clustering"; code: YZH0905/AECL-STC)."""

from __future__ import annotations

from numbers import Real

from ...modeling.configuration_utils import POSITIVE_NUMBER, SHARE, SIZE, TextClusteringConfig
from ...modeling.validation import Interval, Options


class AECLConfig(TextClusteringConfig):
    r"""
    Configuration of [`AECLModel`]: an encoder, a projecting network G_z to ``projection_dim``, the sample-level
    attention network G_h (one head over the samples of a batch, Eq. 1-3, inside the authors' post-norm transformer
    layer), and the clustering network G_p (an MLP with dropout, softmax over K). No centroids.

    Args:
        projection_dim (`int`): D_2, the size of z and h (128).
        attention_ff_dim (`int`): the feed-forward width of the attention layer (256, the authors' code).
        attention_dropout (`float`): dropout inside the attention layer (0.1, torch's default, as the authors' code).
        cluster_dropout (`float`): the clustering network's dropout (0.5, the authors' code).
        instance_temperature (`float`): τ_I of Eq. 6-7. The authors' code uses 0.5 (default here), the paper says 1.
        cluster_temperature (`float`): τ_C of Eq. 10. The authors' code uses 1.0 (default here), the paper says 0.5.
        similarity_guided (`bool`): L_I with the similarity-guided positives of Eq. 7 (default); ``False`` keeps
            Eq. 6 alone (the paper's "No IC" ablation, Table 3).
        instance_loss_weight (`float`): λ1 of Eq. 14-15 (10).
        pseudo_label_loss_weight (`float`): λ2 (5).
        row_entropy_weight (`float`): λ3, of L_E1 (Eq. 5, mean row entropy): the authors' code's -0.01 rewards a
            little row entropy, so predictions do not turn one-hot too early (the paper: +0.01).
        marginal_entropy_weight (`float`): λ4, of L_E2 (Eq. 13, marginals' entropy): the authors' code's -0.36 spreads
            the batch over the clusters; the paper's positive λ4 would concentrate it.
        confidence_threshold (`float`): Eq. 4's thres: stage-3 pseudo-labels only where max p^(0) >= it (0.95).
        stage1_fraction (`float`): E_1 as a share of the training steps: L_I only (Algorithm 1, lines 8-10).
        stage2_fraction (`float`): E_2 as a share: k-means pseudo-labels and Eq. 14. The rest is stage 3 (Eq. 15).
            0 removes a stage (the paper's "No Stage 1" / "No Stage 2" ablations).
        pseudo_label_refresh_steps (`int`, *optional*): recompute stage 2's k-means pseudo-labels every that many
            steps (the authors' code: once per epoch); ``None``: once, when stage 2 starts.
        serving_attention (`str`): what a text attends to at prediction: ``"reference"`` (itself and a stored reference
            set of training texts: its cluster never depends on the call's other texts), ``"self"`` or ``"batch"``
            (the call's other texts, as the authors' code).
        reference_size (`int`): how many training texts form the reference set (400, the paper's batch size).
        num_reference_texts (`int`): how many the checkpoint holds (set when the reference set is stored).
        serving_head (`str`): what predicts a text's cluster: ``"network"`` (the clustering network G_p, as trained)
            or ``"kmeans"`` (the nearest k-means centre on the trained embeddings, set by re-clustering the model).
    """

    model_type = "aecl"

    projection_dim: int = 128
    attention_ff_dim: int = 256
    attention_dropout: float = 0.1
    cluster_dropout: float = 0.5
    instance_temperature: float = 0.5
    cluster_temperature: float = 1.0
    similarity_guided: bool = True
    instance_loss_weight: float = 10.0
    pseudo_label_loss_weight: float = 5.0
    row_entropy_weight: float = -0.01
    marginal_entropy_weight: float = -0.36
    confidence_threshold: float = 0.95
    stage1_fraction: float = 1 / 3
    stage2_fraction: float = 1 / 6
    pseudo_label_refresh_steps: int | None = None
    serving_attention: str = "reference"
    reference_size: int = 400
    num_reference_texts: int = 0
    serving_head: str = "network"

    _parameter_constraints = {
        **TextClusteringConfig._parameter_constraints,
        **dict.fromkeys(("projection_dim", "attention_ff_dim", "reference_size"), SIZE),
        "pseudo_label_refresh_steps": [SIZE, None],
        **dict.fromkeys(("instance_temperature", "cluster_temperature"), POSITIVE_NUMBER),
        **dict.fromkeys(
            ("instance_loss_weight", "pseudo_label_loss_weight", "row_entropy_weight", "marginal_entropy_weight"),
            Interval(Real),
        ),
        **dict.fromkeys(("attention_dropout", "cluster_dropout", "stage1_fraction", "stage2_fraction"), SHARE),
        "confidence_threshold": Interval(Real, 0, 1, closed="right"),
        "serving_attention": Options("reference", "self", "batch"),
        "serving_head": Options("network", "kmeans"),
    }

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        if self.stage1_fraction + self.stage2_fraction >= 1:
            raise ValueError(
                f"`stage1_fraction` + `stage2_fraction` must leave steps for stage 3, got "
                f"{self.stage1_fraction} + {self.stage2_fraction}."
            )
