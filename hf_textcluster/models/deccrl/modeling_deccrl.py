"""DEC-CRL model: SCCL's encoder, contrast head and Student's t clustering in `FC_e`'s latent space (Eq. 1, 5), plus
the cluster-level representation learning (CRL) module, an embedded topic model built on the centroids (Eq. 10-15).
Prediction runs the encoder, `FC_e` and the centroids; the CRL weights hold each cluster's topics."""

from __future__ import annotations

import torch
from torch import nn

from ...modeling.layers import ProjectionHead, StudentTAssignment
from ...modeling.modeling_utils import TextClusteringPreTrainedModel
from .configuration_deccrl import DECCRLConfig


class TopicDecoder(nn.Module):
    """The generative part of CRL: topic vectors u_t (T x L), `FC_g` (2L -> 2L) and word embeddings ρ (V x 2L)."""

    def __init__(self, num_topics: int, latent_dim: int, vocabulary_size: int, train_word_embeddings: bool = False):
        super().__init__()
        self.topic_vectors = nn.Parameter(torch.empty(num_topics, latent_dim))
        self.fc_g = nn.Linear(2 * latent_dim, 2 * latent_dim)
        self.word_embeddings = nn.Parameter(
            torch.empty(vocabulary_size, 2 * latent_dim), requires_grad=train_word_embeddings
        )

    def reset_own_parameters(self) -> None:
        nn.init.normal_(self.topic_vectors, std=0.02)
        nn.init.normal_(self.word_embeddings, std=0.02)

    def topic_embeddings(self, centroids: torch.Tensor) -> torch.Tensor:
        """α (K x T x 2L) = FC_g(c_k ⊕ u_t), Eq. 10."""
        num_clusters, num_topics = centroids.shape[0], self.topic_vectors.shape[0]
        pairs = torch.cat(
            [
                centroids.unsqueeze(1).expand(-1, num_topics, -1),
                self.topic_vectors.unsqueeze(0).expand(num_clusters, -1, -1),
            ],
            dim=-1,
        )
        return self.fc_g(pairs)

    def forward(self, centroids: torch.Tensor) -> torch.Tensor:
        """β (K x T x V): each topic's distribution over the vocabulary, Eq. 11."""
        logits = torch.einsum("ktd,vd->ktv", self.topic_embeddings(centroids.float()), self.word_embeddings.float())
        return torch.softmax(logits, dim=-1)


class TopicInference(nn.Module):
    """The inference part of CRL: normalised BoW -> hidden -> (μ, log σ²) of x̂ (T-dim), Eq. 14."""

    def __init__(self, vocabulary_size: int, hidden_dim: int, num_topics: int):
        super().__init__()
        self.hidden = nn.Sequential(nn.Linear(vocabulary_size, hidden_dim), nn.Softplus())
        self.mu = nn.Linear(hidden_dim, num_topics)
        self.logvar = nn.Linear(hidden_dim, num_topics)

    def forward(self, bow: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        normalized = bow.float() / bow.float().sum(dim=1, keepdim=True).clamp_min(1.0)  # BoW* (empty rows stay 0)
        hidden = self.hidden(normalized)
        return self.mu(hidden), self.logvar(hidden)


class LatentAutoencoder(nn.Module):
    """The "LSR" of the paper's ablation (Section 5.2): h (L) -> encoder -> L/2 -> decoder -> ĥ (L)."""

    def __init__(self, latent_dim: int):
        super().__init__()
        code_dim = max(1, latent_dim // 2)
        self.encoder = nn.Sequential(nn.Linear(latent_dim, latent_dim), nn.ReLU(), nn.Linear(latent_dim, code_dim))
        self.decoder = nn.Sequential(nn.Linear(code_dim, latent_dim), nn.ReLU(), nn.Linear(latent_dim, latent_dim))

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(latent))


class DECCRLModel(TextClusteringPreTrainedModel):
    config_class = DECCRLConfig
    config: DECCRLConfig

    def __init__(self, config: DECCRLConfig):
        super().__init__(config)
        hidden_size, latent = config.encoder.hidden_size, config.latent_dim
        self.fc_e = nn.Linear(hidden_size, latent)
        # ṽ = the contrast head of a latent h̃ (Section 3.1): what the contrastive loss compares (training only)
        self.contrast_head = ProjectionHead(latent, latent, config.contrast_dim)
        self.cluster_head = StudentTAssignment(config.num_clusters, latent, alpha=config.alpha)
        if config.has_topic_model:
            self.topic_decoder = TopicDecoder(
                config.num_topics, latent, config.vocabulary_size, config.train_word_embeddings
            )
            self.topic_inference = TopicInference(
                config.vocabulary_size, config.inference_hidden_dim, config.num_topics
            )
        else:  # the "w/o CRL w LSR" ablation
            self.latent_autoencoder = LatentAutoencoder(latent)
        self.post_init()

    def cluster_features(self, embeddings: torch.Tensor) -> torch.Tensor:
        """h = FC_e(SentenceBERT(x)), Eq. 1: the latent space of the centroids."""
        return self.fc_e(embeddings)

    # ----- CRL -------------------------------------------------------------------------------------------------
    def topic_word_distributions(self) -> torch.Tensor:
        """β (K x T x V), Eq. 11."""
        return self.topic_decoder(self.cluster_head.centroids)
