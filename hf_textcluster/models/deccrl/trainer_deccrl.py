"""DECCRLTrainer: the joint objective of DEC-CRL, Eq. 16 = L_CL (Eq. 2-4) + λ_c · L_Cluster (Eq. 7-9) + λ_r · L_RC
(Eq. 13-15), and what the CRL module needs before the first step: the bag-of-words vocabulary of the training texts
and word embeddings ρ trained on them with gensim's Word2Vec (the paper uses Word2Vec embeddings; pretrained ones
cannot be downloaded here)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from transformers.utils import logging

from ...training.collator import TextViewsCollator
from ...training.distributed import gather, share_from_main
from ...training.losses import dec_kl_loss, dec_target_distribution
from ...training.trainer import ClusteringTrainer
from .losses_deccrl import (
    cross_view_contrastive_loss,
    etm_reconstruction_loss,
    gaussian_kl_loss,
    latent_reconstruction_loss,
    word_log_likelihoods,
)
from .modeling_deccrl import TopicInference

logger = logging.get_logger(__name__)

# Words: letters first, then letters, digits, + and # (c++, c#, 2d), at least two characters; lowercased.
TOKEN_PATTERN = r"(?u)\b[^\W\d_][\w+#]*[\w+#]\b"


def _vectorizer(vocabulary=None, max_features=None):
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(
        token_pattern=TOKEN_PATTERN,
        lowercase=True,
        stop_words="english",
        vocabulary=vocabulary,
        max_features=max_features,
    )


def fit_vocabulary(texts: Sequence[str], max_size: int) -> list[str]:
    """The ``max_size`` most frequent words of ``texts`` (English stop words removed), in a stable order."""
    vectorizer = _vectorizer(max_features=max_size)
    try:
        vectorizer.fit(texts)
    except ValueError as err:  # nothing but stop words / digits
        raise ValueError("The training texts have no words for DEC-CRL's bag-of-words vocabulary.") from err
    return [str(w) for w in vectorizer.get_feature_names_out()]


def _stable_hash(text: str) -> int:
    """gensim seeds each word's initial vector with ``hash``, which Python randomises per process; this one is not."""
    return zlib.crc32(text.encode("utf-8"))


def train_word_embeddings(texts: Sequence[str], vocabulary: list[str], dim: int, seed: int = 0) -> np.ndarray:
    """ρ (V x dim): Word2Vec (gensim, skip-gram) trained on the tokenised ``texts``; a word Word2Vec skipped gets a
    small random vector."""
    try:
        from gensim.models import Word2Vec
    except ImportError as err:
        raise ImportError(
            "DEC-CRL trains its word embeddings with gensim: `pip install 'hf_textcluster[deccrl]'` (or gensim)."
        ) from err
    analyzer = _vectorizer().build_analyzer()
    sentences = [analyzer(text) for text in texts]
    model = Word2Vec(
        sentences, vector_size=dim, window=5, min_count=1, sg=1, epochs=10, seed=seed, workers=1, hashfxn=_stable_hash
    )
    rng = np.random.default_rng(seed)
    vectors = np.stack([model.wv[w] if w in model.wv else rng.normal(0, 0.1, dim) for w in vocabulary])
    return vectors.astype(np.float32)


@torch.no_grad()
def set_vocabulary(model, vocabulary: list[str], word_embeddings: np.ndarray | torch.Tensor, seed: int = 0) -> None:
    """Fix a DEC-CRL ``model``'s BoW vocabulary (V words) and ρ (V x 2L) before training; the vocabulary-sized layers
    are rebuilt, initialised on the host from ``seed`` (not from whatever torch's global generator holds)."""
    config = model.config
    if not config.has_topic_model:
        raise RuntimeError("A DEC-CRL model with `reconstruction_module='lsr'` has no topic model to set words of.")
    word_embeddings = torch.as_tensor(word_embeddings, dtype=torch.float32).detach().cpu()
    expected = (len(vocabulary), 2 * config.latent_dim)
    if tuple(word_embeddings.shape) != expected:
        raise ValueError(f"`word_embeddings` must be V x 2L = {expected}, got {tuple(word_embeddings.shape)}.")
    config.vocabulary = list(vocabulary)
    device = model.fc_e.weight.device
    model.topic_decoder.word_embeddings = torch.nn.Parameter(
        word_embeddings.to(device), requires_grad=config.train_word_embeddings
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        inference = TopicInference(len(vocabulary), config.inference_hidden_dim, config.num_topics)
        for module in inference.modules():
            model._init_weights(module)
    model.topic_inference = inference.to(device)


@torch.no_grad()
def init_latent_from_pca(model, embeddings: np.ndarray | torch.Tensor, max_samples: int = 50_000) -> None:
    """Set a DEC-CRL ``model``'s `FC_e` to h = W (e - mean) with W the top principal directions of ``embeddings``
    (N x d, a seeded sample of at most ``max_samples`` rows): distances within those directions are kept exactly.
    With L > d the rows beyond d keep their random start."""
    embeddings = torch.as_tensor(embeddings, dtype=torch.float32).detach().cpu()  # the SVD runs on the host
    if len(embeddings) > max_samples:
        generator = torch.Generator().manual_seed(0)
        embeddings = embeddings[torch.randperm(len(embeddings), generator=generator)[:max_samples]]
    mean = embeddings.mean(dim=0)
    _, _, vh = torch.linalg.svd(embeddings - mean, full_matrices=False)
    rows = min(model.config.latent_dim, vh.shape[0])
    weight = model.fc_e.weight
    weight[:rows] = vh[:rows].to(weight.device, weight.dtype)
    model.fc_e.bias[:rows] = -(vh[:rows] @ mean).to(weight.device, weight.dtype)


@dataclass(eq=False)
class BagOfWordsCollator:
    """The batch of ``views`` (a :class:`~hf_textcluster.training.collator.TextViewsCollator`'s tokenized views) plus
    ``bow`` (M x V word counts of the original text over the model's vocabulary, read at call time: the vocabulary is
    fitted when training starts)."""

    model: Any
    views: TextViewsCollator

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        batch = self.views(rows)
        vocabulary = self.model.config.vocabulary
        if vocabulary is None:
            raise RuntimeError("DEC-CRL's vocabulary is not fitted yet: `trainer.train()` fits it before step 1.")
        counts = _vectorizer(vocabulary=vocabulary).transform([row["text"] for row in rows])
        batch["bow"] = torch.from_numpy(counts.toarray().astype(np.float32))
        return batch


class DECCRLTrainer(ClusteringTrainer):
    """Trains a [`DECCRLModel`] on rows ``{text, text_aug1, text_aug2}``: the contrastive loss on the two augmented
    views, the clustering loss and the CRL reconstruction on the original text. The three views go through the
    encoder as one batch.

    Every random draw of a training step comes from the run's seed, the process and the step, whatever else drew
    from torch's generators: ε of Eq. 14 and a sampled cluster of Eq. 13 from a host generator (``step_generator``,
    the same draws on a CPU and a GPU), dropout from torch's generators seeded for the step (a GPU's draws other masks
    than a CPU's). A resumed run draws what the uninterrupted run would have."""

    views = {"": "text", "aug1_": "text_aug1", "aug2_": "text_aug2"}
    step_generator: torch.Generator | None = None  # the host generator of the step being trained
    _step_draws: tuple[int, int] = (-1, 0)  # (global step, micro-batches trained at it)

    def make_collator(self, tokenizer, model, args):
        views = super().make_collator(tokenizer, model, args)
        return BagOfWordsCollator(model, views) if model.config.has_topic_model else views

    # ----- before step 1 -------------------------------------------------------------------------------------------
    def fit_vocabulary(self) -> None:
        """Fit the BoW vocabulary and ρ on the training texts (once: a model that has a vocabulary keeps it)."""
        if self.model.config.vocabulary is not None or not self.model.config.has_topic_model:
            return
        texts = list(self.train_dataset["text"])
        vocabulary = fit_vocabulary(texts, self.model.config.max_vocabulary_size)
        rho = share_from_main(
            self,
            lambda: train_word_embeddings(texts, vocabulary, 2 * self.model.config.latent_dim, seed=self.args.seed),
        )
        set_vocabulary(self.model, vocabulary, rho, seed=self.args.seed)
        logger.info(f"DEC-CRL vocabulary: {len(vocabulary)} words; Word2Vec embeddings of size {rho.shape[1]}.")

    def initialize_clusters(self, embeddings: np.ndarray | None = None) -> None:
        self.fit_vocabulary()
        if self.model.config.latent_init == "pca" and not self.model.config.centroids_initialized:
            embeddings = self.embed_train_texts() if embeddings is None else embeddings

            def pca():  # once, on the main process; the others load its FC_e
                init_latent_from_pca(self.model, embeddings)
                return {k: v.cpu() for k, v in self.model.fc_e.state_dict().items()}

            self.model.fc_e.load_state_dict(share_from_main(self, pca))
        super().initialize_clusters(embeddings=embeddings)

    def restore_config(self, saved: dict) -> None:
        # A resumed run rebuilds the vocabulary-sized layers from the checkpoint's config before its weights load.
        if saved.get("vocabulary") and self.model.config.vocabulary is None:
            vocabulary = saved["vocabulary"]
            set_vocabulary(self.model, vocabulary, np.zeros((len(vocabulary), 2 * self.model.config.latent_dim)))
        super().restore_config(saved)

    # ----- the loss ------------------------------------------------------------------------------------------------
    def reconstruction_terms(self, model, bow: torch.Tensor, o: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The two parts of L_RC (Eq. 15): the reconstruction -E[Σ_n log p(w_{i,n} | x̂_i)] with β_k of the cluster
        chosen by ``config.crl_cluster`` (Eq. 13), and D_KL(q(x̂ | BoW*) ‖ N(0, I))."""
        choice = model.config.crl_cluster
        s = torch.softmax(o, dim=-1)  # Eq. 6: s_i = softmax(o_i)
        if choice == "expectation":
            log_probs, mu, logvar = word_log_likelihoods(model, bow, generator=self.step_generator)  # M x K x V
            reconstruction = -(s.unsqueeze(-1) * bow.unsqueeze(1) * log_probs).sum(dim=(1, 2)).mean()
        else:
            clusters = o.argmax(dim=-1) if choice == "argmax" else self.sample_clusters(s.detach())
            log_probs, mu, logvar = word_log_likelihoods(model, bow, clusters, self.step_generator)
            reconstruction = etm_reconstruction_loss(bow, log_probs)
        return reconstruction, gaussian_kl_loss(mu, logvar)

    def sample_clusters(self, s: torch.Tensor) -> torch.Tensor:
        """One cluster per row of ``s`` (M x K probabilities), k ~ s_i: uniform draws on the host (``step_generator``)
        against the cumulative sums on ``s``'s device, so a seeded run samples alike on a CPU and a GPU."""
        uniform = torch.rand(len(s), 1, generator=self.step_generator, device="cpu").to(s.device, s.dtype)
        return (s.cumsum(dim=-1) < uniform).sum(dim=-1).clamp_max(s.shape[-1] - 1)

    def training_step(self, model, inputs, num_items_in_batch=None):
        step, trained = self._step_draws
        self._step_draws = (self.state.global_step, trained + 1 if step == self.state.global_step else 0)
        seeds = np.random.SeedSequence([self.args.seed, self.args.process_index, *self._step_draws]).generate_state(2)
        device = self.args.device
        with torch.random.fork_rng(devices=[] if device.type == "cpu" else [device]):
            torch.manual_seed(int(seeds[0]))  # dropout
            self.step_generator = torch.Generator().manual_seed(int(seeds[1]))
            try:
                return super().training_step(model, inputs, num_items_in_batch)
            finally:
                self.step_generator = None

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        config = model.config
        original, view1, view2 = gather(self, *self.encode_views(model, inputs, ("", "aug1_", "aug2_")))
        h, h1, h2 = model.cluster_features(original), model.cluster_features(view1), model.cluster_features(view2)
        terms = {
            "cross_view_cl": cross_view_contrastive_loss(
                model.contrast_head(h1), model.contrast_head(h2), temperature=config.temperature
            )
        }
        o = model.cluster_head(h)  # Eq. 5
        terms["cluster_kl"] = dec_kl_loss(dec_target_distribution(o), o)  # Eq. 7-9
        loss = terms["cross_view_cl"] + config.cluster_loss_weight * terms["cluster_kl"]
        if config.reconstruction_loss_weight > 0 and config.has_topic_model:  # λ_r = 0: the paper's "w/o CRL"
            terms["etm_reconstruction"], terms["etm_kl"] = self.reconstruction_terms(
                model, gather(self, inputs["bow"]), o
            )
            loss = loss + config.reconstruction_loss_weight * (terms["etm_reconstruction"] + terms["etm_kl"])
        elif config.reconstruction_loss_weight > 0:  # "w/o CRL w LSR"
            terms["lsr_reconstruction"] = latent_reconstruction_loss(h, model.latent_autoencoder(h))
            loss = loss + config.reconstruction_loss_weight * terms["lsr_reconstruction"]
        self.record_loss_terms(**terms)
        return (loss, {"cluster_probs": o, "embeddings": original}) if return_outputs else loss
