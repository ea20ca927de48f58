"""DEC-CRL: deep embedded clustering with cluster-level representation learning (Yin et al., COLING 2022)."""

from ..registry import ClusteringMethod
from .configuration_deccrl import DECCRLConfig
from .modeling_deccrl import DECCRLModel


def card_fields(config: DECCRLConfig) -> tuple[dict[str, str], list[str]]:
    """What DEC-CRL's model card says that depends on ``config``: the cluster choice of Eq. 13, the vocabulary size,
    and the ablation it was trained as."""
    limitations = []
    if config.reconstruction_loss_weight == 0:
        limitations.append('- Trained without the CRL reconstruction (λ_r = 0, the paper\'s "w/o CRL" ablation).')
    elif not config.has_topic_model:
        limitations.append(
            "- Trained with a latent-space autoencoder instead of the topic model (the paper's \"w/o "
            'CRL w LSR" ablation): it has no topics.'
        )
    choice = {
        "argmax": "the text's own cluster (argmax of o_i, which is also the argmax of s_i)",
        "expectation": "the expectation over s_i of the per-cluster log-likelihoods",
        "sample": "a cluster drawn from s_i at every step",
    }[config.crl_cluster]
    return {"crl_cluster_text": choice, "vocabulary_size": str(len(config.vocabulary or []))}, limitations


METHOD = ClusteringMethod(
    name="deccrl",
    display_name="DEC-CRL",
    paper="Yin et al., Improving Deep Embedded Clustering via Learning Cluster-level Representations, COLING 2022",
    config_class=DECCRLConfig,
    model_class=DECCRLModel,
    card_fields=card_fields,
    trainer=".trainer_deccrl:DECCRLTrainer",
    loss_terms={
        "cross_view_cl": "contrastive loss between the two augmented views, Eq. 2-4",
        "cluster_kl": "KL(T‖O) of the Student's t assignment to its sharpened target, Eq. 7-9",
        "etm_reconstruction": "negative log-likelihood of the text's words under its cluster's topics, Eq. 13, 15",
        "etm_kl": "KL of the topic-proportion posterior to the standard normal prior, Eq. 15",
        "lsr_reconstruction": 'mean squared error of a latent autoencoder (the "w/o CRL w LSR" ablation, Section 5.2)',
    },
    uses_augmented_views=True,
    # Table 2 of the paper (ACC / NMI, %), on its test splits.
    paper_results={"agnews": (88.9, 69.2), "stackoverflow": (82.3, 76.7), "biomedical": (47.0, 41.5)},
    # Table 1: train / test = 6,400 / 1,600, 15,084 / 4,916, 15,583 / 4,417 (which texts is not published).
    paper_test_sizes={"agnews": 1600, "stackoverflow": 4916, "biomedical": 4417},
)

__all__ = ["METHOD", "DECCRLConfig", "DECCRLModel"]
