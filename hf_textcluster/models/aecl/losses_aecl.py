"""AECL's losses (Yao and Li, "Discriminative Representation learning via Attention-Enhanced Contrastive Learning for
Short Text Clustering", Eq. 5-13). Pure functions of tensors.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


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
    """L_I of AECL, Eq. 6-9: (1 / 2N) Σ_i Σ_v -log(l_{1,i} + l^v_{2,i}). l_1 (Eq. 6) contrasts the two views'
    projections
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
