"""DEC-CRL: deep embedded clustering with cluster-level representation learning (Yin et al., COLING 2022)."""

from ..registry import ClusteringMethod
from .configuration_deccrl import DECCRLConfig
from .modeling_deccrl import DECCRLModel

METHOD = ClusteringMethod(
    name="deccrl",
    display_name="DEC-CRL",
    paper="Yin et al., Improving Deep Embedded Clustering via Learning Cluster-level Representations, COLING 2022",
    config_class=DECCRLConfig,
    model_class=DECCRLModel,
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
