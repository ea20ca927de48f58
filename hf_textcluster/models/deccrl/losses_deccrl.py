"""DEC-CRL's own losses (Yin et al., "Improving Deep Embedded Clustering via Learning Cluster-level
Representations", COLING 2022; equation numbers are the paper's). Its clustering term, DEC's KL(P‖Q), is shared and
lives in :mod:`hf_textcluster.training.losses`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def cross_view_contrastive_loss(v1: torch.Tensor, v2: torch.Tensor, temperature: float = 0.5) -> torch.Tensor:
    """L_CL of DEC-CRL (Eq. 2-4): for each text i, -log exp(sim(v_i1, v_i2)/τ) / Σ_{m≠i} exp(sim(v_i1, v_m2)/τ), and
    the same from view 2 to view 1; summed over the two views and averaged over the M texts.

    Unlike SCCL's NT-Xent (:func:`instance_contrastive_loss`), the denominator holds only the *other* view of the other
    texts (m ≠ i): neither the positive pair nor same-view negatives. Needs M >= 2.
    """
    if v1.shape != v2.shape:
        raise ValueError(f"The two views must have the same shape, got {tuple(v1.shape)} and {tuple(v2.shape)}.")
    if v1.shape[0] < 2:
        raise ValueError("The cross-view contrastive loss needs at least 2 texts per batch (it has no negatives).")
    z1, z2 = F.normalize(v1.float(), dim=-1), F.normalize(v2.float(), dim=-1)
    similarity = z1 @ z2.T / temperature  # [i, m] = sim(v_i1, v_m2) / τ
    positives = similarity.diagonal()
    off_diagonal = ~torch.eye(len(z1), dtype=torch.bool, device=z1.device)
    from_view1 = torch.logsumexp(similarity.masked_fill(~off_diagonal, float("-inf")), dim=1) - positives
    from_view2 = torch.logsumexp(similarity.T.masked_fill(~off_diagonal, float("-inf")), dim=1) - positives
    return (from_view1 + from_view2).mean()


def etm_reconstruction_loss(bow: torch.Tensor, log_word_probs: torch.Tensor) -> torch.Tensor:
    """The reconstruction term of L_RC (DEC-CRL Eq. 13, 15): -Σ_n log p(w_{i,n} | x̂_i) = -Σ_v bow_iv · log p_iv,
    averaged over the texts. ``bow`` holds word counts (M x V), ``log_word_probs`` log(β_k θ_i) (M x V)."""
    return -(bow.float() * log_word_probs.float()).sum(dim=1).mean()


def gaussian_kl_loss(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """D_KL(N(μ, σ²) ‖ N(0, I)) of DEC-CRL Eq. 15 (and any VAE), summed over dimensions, averaged over rows:
    -½ Σ (1 + log σ² - μ² - σ²)."""
    mu, logvar = mu.float(), logvar.float()
    return (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(dim=1)).mean()


def latent_reconstruction_loss(latent: torch.Tensor, reconstructed: torch.Tensor) -> torch.Tensor:
    """The LSR loss of DEC-CRL's ablation (Section 5.2, "w/o CRL w LSR"): the difference between an autoencoder's
    input h and output ĥ, as the mean squared error over all entries."""
    return torch.nn.functional.mse_loss(reconstructed.float(), latent.float())


def word_log_likelihoods(
    model, bow: torch.Tensor, clusters: torch.Tensor | None = None, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """log(β_k θ_i) over the vocabulary (Eq. 13) of a DEC-CRL ``model``, with θ_i = softmax(x̂_i), x̂_i = μ_i + ε σ_i
    (Eq. 14; ε = 0 in eval mode): for the cluster ``clusters[i]`` of each text (M x V) or, without ``clusters``, for
    every cluster (M x K x V). Also returns μ and log σ² for the KL term of Eq. 15.

    ε is drawn on the host from ``generator`` (a CPU generator; None: torch's global one) and moved to μ's device, so
    a seeded run draws the same ε on a CPU and on a GPU."""
    mu, logvar = model.topic_inference(bow)
    if model.training:
        noise = torch.randn(mu.shape, generator=generator, device="cpu").to(mu.device, mu.dtype)
        x_hat = mu + noise * torch.exp(0.5 * logvar)
    else:
        x_hat = mu
    theta = torch.softmax(x_hat, dim=-1)
    beta = model.topic_word_distributions()
    if clusters is None:
        word_probs = torch.einsum("mt,ktv->mkv", theta, beta)
    else:
        word_probs = torch.einsum("mt,mtv->mv", theta, beta[clusters])
    return torch.log(word_probs.clamp_min(1e-10)), mu, logvar
