"""AECL: attention-enhanced contrastive learning for short text clustering (Yao and Li; three training stages)."""

from ..registry import ClusteringMethod
from .configuration_aecl import AECLConfig
from .modeling_aecl import AECLModel

METHOD = ClusteringMethod(
    name="aecl",
    display_name="AECL",
    paper="Yao and Li, Discriminative Representation learning via Attention-Enhanced Contrastive Learning for Short "
    "Text Clustering (code: YZH0905/AECL-STC)",
    config_class=AECLConfig,
    model_class=AECLModel,
    trainer=".trainer_aecl:AECLTrainer",
    loss_terms={
        "similarity_guided_cl": "similarity-guided instance contrastive loss L_I, Eq. 6-9",
        "pseudo_label": "cross-entropy of the augmented view against the pseudo-labels L_P, Eq. 12 (k-means in "
        "stage 2, confident predictions, Eq. 4, in stage 3)",
        "cluster_cl": "cluster-level contrastive loss L_C between the views' assignment columns, Eq. 10-11",
        "row_entropy": "mean entropy of the assignments L_E1, Eq. 5",
        "marginal_entropy": "entropy of the cluster marginals L_E2, Eq. 13",
    },
    uses_augmented_views=True,
    # Table 2 of the paper (ACC / NMI, %).
    paper_results={
        "agnews": (86.2, 64.9),
        "searchsnippets": (80.6, 69.3),
        "stackoverflow": (83.2, 73.1),
        "biomedical": (45.3, 38.9),
        "googlenews_ts": (85.5, 93.7),
        "googlenews_t": (74.3, 86.2),
        "googlenews_s": (80.4, 89.4),
        "tweet": (80.5, 87.6),
    },
)

__all__ = ["METHOD", "AECLConfig", "AECLModel"]
