"""SCCL: Supporting Clustering with Contrastive Learning (Zhang et al., NAACL 2021)."""

from ..registry import ClusteringMethod
from .configuration_sccl import SCCLConfig
from .modeling_sccl import SCCLModel

METHOD = ClusteringMethod(
    name="sccl",
    display_name="SCCL",
    paper="Zhang et al., Supporting Clustering with Contrastive Learning, NAACL 2021",
    config_class=SCCLConfig,
    model_class=SCCLModel,
    trainer=".trainer_sccl:SCCLTrainer",
    loss_terms={
        "instance_cl": "instance contrastive loss (NT-Xent) on two augmented views, Eq. 1-2",
        "cluster_kl": "KL(P‖Q) of the Student's t assignment to its sharpened target, Eq. 4-6",
    },
    uses_augmented_views=True,
    # Table 1 of the paper (ACC / NMI, %).
    paper_results={
        "agnews": (88.2, 68.2),
        "searchsnippets": (85.2, 71.1),
        "stackoverflow": (75.5, 74.5),
        "biomedical": (46.2, 41.5),
        "googlenews_ts": (89.8, 94.9),
        "googlenews_t": (75.8, 88.3),
        "googlenews_s": (83.1, 90.4),
        "tweet": (78.2, 89.2),
    },
)

__all__ = ["METHOD", "SCCLConfig", "SCCLModel"]
