"""AECL: attention-enhanced contrastive learning for short text clustering (Yao and Li; three training stages)."""

from ..registry import ClusteringMethod
from .configuration_aecl import AECLConfig
from .modeling_aecl import AECLModel


def card_fields(config: AECLConfig) -> tuple[dict[str, str], list[str]]:
    """What AECL's model card says that depends on ``config``: what the served attention and head are."""
    limitations = []
    if config.serving_attention == "batch":
        limitations.append(
            '- `serving_attention="batch"`: a text\'s cluster depends on the other texts of the '
            'call (the authors\' behaviour); set it to "reference" to serve.'
        )
    serving = {
        "reference": f"itself and a fixed reference set of {config.num_reference_texts} training texts stored with "
        "the checkpoint",
        "self": "only itself (S = 1)",
        "batch": "the other texts of the same call (batch-dependent)",
    }[config.serving_attention]
    head = (
        'the nearest of k-means centres fitted on its trained embeddings (`serving_head="kmeans"`: this model '
        "was re-clustered after training; the clustering network's weights are kept, not served, so the "
        "attention setting below does not apply)"
        if config.serving_head == "kmeans"
        else 'the clustering network G_p\'s argmax (`serving_head="network"`, as trained)'
    )
    return {"serving_text": serving, "serving_head_text": head}, limitations


METHOD = ClusteringMethod(
    name="aecl",
    display_name="AECL",
    paper="Yao and Li, Discriminative Representation learning via Attention-Enhanced Contrastive Learning for Short "
    "Text Clustering (code: YZH0905/AECL-STC)",
    config_class=AECLConfig,
    model_class=AECLModel,
    card_fields=card_fields,
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
