"""DEC-CRL configuration (Yin et al., "Improving Deep Embedded Clustering via Learning Cluster-level Representations",
COLING 2022)."""

from __future__ import annotations

from ...modeling.configuration_utils import NON_NEGATIVE_NUMBER, POSITIVE_NUMBER, SIZE, TextClusteringConfig
from ...modeling.validation import Options


class DECCRLConfig(TextClusteringConfig):
    r"""
    Configuration of [`DECCRLModel`]: an encoder, `FC_e` to a latent space of size L (Eq. 1), SCCL's contrast head, K
    centroids with a Student's t assignment (Eq. 5), and the cluster-level representation learning (CRL) module.

    Args:
        latent_dim (`int`): L, the size of `FC_e`'s output (not given in the paper).
        latent_init (`str`): how `FC_e` starts (the paper does not say): ``"random"`` (PyTorch's initialisation) or
            ``"pca"`` (the projection onto the top L principal directions of the centred training embeddings).
        contrast_dim (`int`): output size of the contrast head (128, as SCCL).
        alpha (`float`): degrees of freedom of the Student's t kernel, Eq. 5 (1; 10 for Biomedical).
        temperature (`float`): τ of the contrastive loss, Eq. 2-3 (0.5).
        num_topics (`int`): T, topics per cluster (5 for AgNews / StackOverflow, 20 for Biomedical).
        inference_hidden_dim (`int`): width of the inference network's hidden layer (not given in the paper).
        cluster_loss_weight (`float`): λ_c of Eq. 16.
        reconstruction_loss_weight (`float`): λ_r of Eq. 16 (0 is the paper's "w/o CRL" ablation).
        reconstruction_module (`str`): what λ_r weighs: ``"crl"`` (the embedded topic model, Eq. 10-15) or ``"lsr"``
            (the paper's "w/o CRL w LSR" ablation, Section 5.2: an autoencoder L -> L/2 -> L on the latent h whose
            mean squared reconstruction error is the loss; such a model has no topics).
        crl_cluster (`str`): which cluster's β_k reconstructs a text in Eq. 13 (left open by the paper): ``"argmax"``
            (the text's cluster), ``"expectation"`` (E_{k~s_i} of the log-likelihood) or ``"sample"`` (k ~ s_i).
        vocabulary (`list[str]`): the V words of the bag-of-words, fitted on the training texts (saved with the model).
        max_vocabulary_size (`int`): at most this many words (the most frequent, English stop words removed).
        word_embeddings_source (`str`): where ρ came from (``"word2vec"``: trained on the corpus with gensim).
        train_word_embeddings (`bool`): update ρ during training (the paper uses fixed Word2Vec embeddings).
    """

    model_type = "deccrl"

    latent_dim: int = 128
    latent_init: str = "random"
    contrast_dim: int = 128
    alpha: float = 1.0
    temperature: float = 0.5
    num_topics: int = 5
    inference_hidden_dim: int = 256
    cluster_loss_weight: float = 1.0
    reconstruction_loss_weight: float = 1.0
    crl_cluster: str = "argmax"
    reconstruction_module: str = "crl"
    vocabulary: list | None = None
    max_vocabulary_size: int = 5000
    word_embeddings_source: str = "word2vec"
    train_word_embeddings: bool = False

    _parameter_constraints = {
        **TextClusteringConfig._parameter_constraints,
        **dict.fromkeys(
            ("latent_dim", "contrast_dim", "num_topics", "inference_hidden_dim", "max_vocabulary_size"), SIZE
        ),
        **dict.fromkeys(("alpha", "temperature"), POSITIVE_NUMBER),
        **dict.fromkeys(("cluster_loss_weight", "reconstruction_loss_weight"), NON_NEGATIVE_NUMBER),
        "crl_cluster": Options("argmax", "expectation", "sample"),
        "latent_init": Options("random", "pca"),
        "reconstruction_module": Options("crl", "lsr"),
    }

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        if self.vocabulary is not None and (
            not isinstance(self.vocabulary, list)
            or not all(isinstance(w, str) for w in self.vocabulary)
            or len(set(self.vocabulary)) != len(self.vocabulary)
            or not self.vocabulary
        ):
            raise ValueError("`vocabulary` must be a non-empty list of distinct words (or None before fitting).")

    @property
    def has_topic_model(self) -> bool:
        """Whether the model holds the CRL topic model (and so a vocabulary and topics)."""
        return self.reconstruction_module == "crl"

    @property
    def vocabulary_size(self) -> int:
        return len(self.vocabulary) if self.vocabulary else 1  # a placeholder row until the vocabulary is fitted
