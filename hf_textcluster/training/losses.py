"""Loss functions, one per paper equation. Pure functions of tensors, shared by all methods.

References (equation numbers are the papers'):
- SCCL: Zhang et al., "Supporting Clustering with Contrastive Learning", NAACL 2021.
- DEC: Xie et al., "Unsupervised Deep Embedding for Clustering Analysis", ICML 2016 (Eq. 3-6 of SCCL,
  Eq. 2-5 of DEC-MLM).
- DEC-MLM: Huang et al., "Unsupervised Fine-tuning for Text Clustering", COLING 2020 (L_m of Eq. 1: BERT's
  masked-LM loss).
- DEC-CRL: Yin et al., "Improving Deep Embedded Clustering via Learning Cluster-level Representations", COLING 2022.
- AECL: Yao and Li, "Discriminative Representation learning via Attention-Enhanced Contrastive Learning for Short Text
  Clustering" (Eq. 5-13).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

# Eq. 3 (SCCL, DEC-MLM) is also what inference runs: it is defined once, with the cluster heads.
from ..modeling.layers import student_t_assignment  # noqa: F401


def dec_target_distribution(q: torch.Tensor) -> torch.Tensor:
    """Auxiliary target p_jk = (q_jk² / f_k) / Σ_k' (q_jk'² / f_k'), f_k = Σ_j q_jk (SCCL Eq. 4, DEC-MLM Eq. 5).

    The target is a constant for the optimiser: it is returned detached.
    """
    q = q.detach()
    weight = q.pow(2) / q.sum(dim=0, keepdim=True)
    return weight / weight.sum(dim=1, keepdim=True)


def dec_kl_loss(p: torch.Tensor, q: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Mean over rows of KL(p_j ‖ q_j) = Σ_k p_jk log(p_jk / q_jk) (SCCL Eq. 5-6, DEC-MLM Eq. 2).

    Terms with p_jk = 0 contribute 0 (the limit of p log p).
    """
    p = p.float()
    q = q.float()
    kl = torch.where(p > 0, p * (torch.log(p.clamp_min(eps)) - torch.log(q.clamp_min(eps))), torch.zeros_like(p))
    return kl.sum(dim=1).mean()


def instance_contrastive_loss(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.5) -> torch.Tensor:
    """Instance-CL / NT-Xent over the 2M augmented views (SCCL Eq. 1-2).

    Row i of ``z1`` and row i of ``z2`` are a positive pair; the other 2M-2 views are negatives. sim is cosine
    similarity; the loss is averaged over all 2M anchors.
    """
    if z1.shape != z2.shape:
        raise ValueError(f"The two views must have the same shape, got {tuple(z1.shape)} and {tuple(z2.shape)}.")
    batch_size = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2], dim=0).float(), dim=-1)
    logits = z @ z.T / temperature
    # Exclude j == i from the denominator (the indicator 1_{j != i} of Eq. 1).
    self_mask = torch.eye(2 * batch_size, dtype=torch.bool, device=z.device)
    logits = logits.masked_fill(self_mask, float("-inf"))
    positives = torch.cat([torch.arange(batch_size, 2 * batch_size), torch.arange(0, batch_size)]).to(z.device)
    return F.cross_entropy(logits, positives)


def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Masked-LM loss L_m (DEC-MLM Eq. 1, as in BERT): mean cross-entropy over the masked positions only.

    ``labels`` holds the original token id at masked positions and ``ignore_index`` elsewhere; ``logits`` has one
    more (vocabulary) dimension than ``labels``. A batch without any masked token gives 0 (not NaN).
    """
    logits = logits.reshape(-1, logits.shape[-1]).float()
    labels = labels.reshape(-1)
    if logits.shape[0] != labels.shape[0]:
        raise ValueError(f"`logits` has {logits.shape[0]} positions but `labels` has {labels.shape[0]}.")
    selected = labels != ignore_index
    if not bool(selected.any()):
        return logits.sum() * 0.0
    return F.cross_entropy(logits[selected], labels[selected])


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


# ----- AECL ------------------------------------------------------------------------------------------------------------
def _two_way_log_ratios(
    a: torch.Tensor, b: torch.Tensor, temperature: float, weights: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The log of the two fractions AECL's Eq. 6, 7 and 10 are built from, for every anchor i:

        a_i -> b:  num / Σ_{k≠i} [exp(sim(a_i, a_k)/τ) + exp(sim(a_i, b_k)/τ)]
        b_i -> a:  num / Σ_{k≠i} [exp(sim(b_i, b_k)/τ) + exp(sim(b_i, a_k)/τ)]

    with num = exp(sim(a_i, b_i)/τ) (the pair itself), or with ``weights`` W (N x N) num = Σ_j W_ij exp(sim(·_i,
    ·_j)/τ) over the other set (Eq. 7). sim is the cosine similarity (Eq. 8). Computed in the log domain."""
    n = a.shape[0]
    if n < 2:
        raise ValueError("These contrastive losses need at least 2 rows (the denominators sum over the others).")
    a, b = F.normalize(a.float(), dim=-1), F.normalize(b.float(), dim=-1)
    s_aa, s_ab, s_bb = a @ a.T / temperature, a @ b.T / temperature, b @ b.T / temperature
    others = ~torch.eye(n, dtype=torch.bool, device=a.device)
    minus_inf = torch.finfo(s_aa.dtype).min

    def log_denominator(same, other):
        return torch.logsumexp(
            torch.cat([same.masked_fill(~others, minus_inf), other.masked_fill(~others, minus_inf)], dim=1), dim=1
        )

    if weights is None:
        log_num_a = log_num_b = s_ab.diagonal()
    else:
        weights = weights.float()
        positive = weights > 0  # log(0) would give NaN gradients: take the log of the positive weights only
        log_w = torch.log(torch.where(positive, weights, torch.ones_like(weights))).masked_fill(~positive, minus_inf)
        log_num_a = torch.logsumexp(s_ab + log_w, dim=1)
        log_num_b = torch.logsumexp(s_ab.T + log_w, dim=1)
    return log_num_a - log_denominator(s_aa, s_ab), log_num_b - log_denominator(s_bb, s_ab.T)


def similarity_guided_contrastive_loss(
    z0: torch.Tensor,
    z1: torch.Tensor,
    h0: torch.Tensor,
    h1: torch.Tensor,
    s0: torch.Tensor,
    s1: torch.Tensor,
    clusters: torch.Tensor,
    temperature: float = 0.5,
    similarity_guided: bool = True,
) -> torch.Tensor:
    """L_I of AECL, Eq. 6-9: (1 / 2N) Σ_i Σ_v -log(l_{1,i} + l^v_{2,i}). l_1 (Eq. 6) contrasts the two views' projections
    z^(0), z^(1); l^v_2 (Eq. 7) contrasts z^(v) with the attention outputs h^(v), its positives the texts j of the
    same predicted cluster (``clusters`` = argmax p^(0), the set Λ_i) weighted by the similarity S^(v)_ij. Without
    ``similarity_guided`` the l_2 terms are left out (the paper's "No IC" ablation, Table 3): -log l_{1,i}."""
    l1_a, l1_b = _two_way_log_ratios(z0, z1, temperature)
    if not similarity_guided:
        return -torch.logsumexp(torch.stack([l1_a, l1_b]), dim=0).mean()
    same_cluster = clusters.view(-1, 1) == clusters.view(1, -1)
    total = 0.0
    for z, h, s in ((z0, h0, s0), (z1, h1, s1)):
        l2_a, l2_b = _two_way_log_ratios(z, h, temperature, weights=s.float() * same_cluster)
        total = total - torch.logsumexp(torch.stack([l1_a, l1_b, l2_a, l2_b]), dim=0).sum()
    return total / (2 * z0.shape[0])


def cluster_contrastive_loss(p0: torch.Tensor, p1: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """L_C of AECL, Eq. 10-11: the columns of the two views' assignment matrices (N x M) are the clusters'
    representations; column i of one view is the positive of column i of the other. (1 / 2M) Σ_i l_{c,i}."""
    log_a, log_b = _two_way_log_ratios(p0.T, p1.T, temperature)
    return -(log_a + log_b).sum() / (2 * p0.shape[1])


def pseudo_label_loss(log_p1: torch.Tensor, pseudo_labels: torch.Tensor) -> torch.Tensor:
    """L_P of AECL, Eq. 12: -(1/N) Σ_i log p^(1)_{i, ŷ_i}, the augmented view's log-probabilities (N x M) against the
    original's pseudo-labels; rows with label -1 (no confident pseudo-label, Eq. 4) add 0 but count in N."""
    has_label = pseudo_labels >= 0
    picked = log_p1.float().gather(1, pseudo_labels.clamp_min(0).view(-1, 1)).squeeze(1)
    return -(picked * has_label).sum() / log_p1.shape[0]


def row_entropy(p: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """L_E1 of AECL, Eq. 5: the mean entropy of the rows of P (N x M)."""
    p = p.float()
    return -(p * torch.log(p.clamp_min(eps))).sum(dim=1).mean()


def marginal_entropy(p0: torch.Tensor, p1: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """L_E2 of AECL, Eq. 13: -(1/2) Σ_j (q^(0)_j log q^(0)_j + q^(1)_j log q^(1)_j), q^(v) the mean of the rows of
    P^(v): the average entropy of the two views' cluster marginals."""
    q0, q1 = p0.float().mean(dim=0), p1.float().mean(dim=0)
    return -0.5 * ((q0 * torch.log(q0.clamp_min(eps))).sum() + (q1 * torch.log(q1.clamp_min(eps))).sum())


def target_cross_entropy(log_probs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """L_cl of ClusterBERT, Eq. 3: CE(P̃, Q) = -(1/N) Σ_i Σ_j q_ij log p̃_ij, the log-predictions for the noised texts
    (N x K) against the targets Q (N x K: one-hot k-means clusters in stage 2, Eq. 5 in stage 3)."""
    return -(targets * log_probs).sum(dim=-1).mean()
