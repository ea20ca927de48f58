"""ClusterBERT: multi-stage fine-tuning of transformers for deep text clustering (domain adaptation with TSDAE,
clustering against k-means targets, hardening)."""

from ..registry import ClusteringMethod
from .configuration_clusterbert import ClusterBERTConfig
from .modeling_clusterbert import ClusterBERTModel


def card_fields(config: ClusterBERTConfig) -> tuple[dict[str, str], list[str]]:
    """What ClusterBERT's model card says that depends on ``config``: whether the denoising decoder was kept."""
    decoder = (
        "kept in `decoder/` beside the model (`keep_decoder=True`), for further training"
        if config.keep_decoder
        else "not kept: the served model is the encoder and the clustering head only"
    )
    return {"decoder_text": decoder}, []


METHOD = ClusteringMethod(
    name="clusterbert",
    display_name="ClusterBERT",
    paper="ClusterBERT: Multi-stage fine-tuning of transformers for deep text clustering (anonymous, under review)",
    config_class=ClusterBERTConfig,
    model_class=ClusterBERTModel,
    card_fields=card_fields,
    trainer=".trainer_clusterbert:ClusterBERTTrainer",
    loss_terms={
        "reconstruction": "TSDAE reconstruction loss L_rec of the noised text, Eq. 1 (sentence-transformers' "
        "DenoisingAutoEncoderLoss)",
        "clustering": "cross-entropy CE(P̃, Q) of the noised text's prediction against the targets, Eq. 3 (Q from "
        "k-means in stage 2, from Eq. 5 in stage 3)",
    },
    # Table 2 of the paper (k-means on the embeddings; ACC / NMI, %); its GoogleNews is the 152-class set, compared
    # here with GoogleNews-TS, and its BBC-News the articles split into sentences.
    paper_results={
        "stackoverflow": (79.9, 75.6),
        "biomedical": (38.2, 43.4),
        "searchsnippets": (57.6, 65.5),
        "googlenews_ts": (63.2, 76.9),
        "agnews": (87.1, 67.2),
        "bbc": (87.8, 67.9),
    },
    paper_note="ClusterBERT's paper reports k-means on its embeddings (our 'k-means after'), with roberta-base after "
    "TSDAE on 10^6 Wikipedia sentences; its GoogleNews is compared with our GoogleNews-TS; its BBC-News is the "
    "articles split into sentences (ours: the articles whole).",
)

__all__ = ["METHOD", "ClusterBERTConfig", "ClusterBERTModel"]
