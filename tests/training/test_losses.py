"""Each loss against a direct, loop-by-loop re-computation of its paper equation on tiny tensors."""

import math

import pytest
import torch

from hf_textcluster.modeling.layers import student_t_assignment
from hf_textcluster.models.sccl.losses_sccl import instance_contrastive_loss
from hf_textcluster.training.losses import dec_kl_loss, dec_target_distribution


def _cos(a, b):
    return float(a @ b) / (float(a.norm()) * float(b.norm()))


@pytest.mark.parametrize("alpha", [1.0, 10.0])
def test_student_t_matches_eq3(alpha):
    torch.manual_seed(0)
    e, mu = torch.randn(5, 4), torch.randn(3, 4)
    q = student_t_assignment(e, mu, alpha)
    for j in range(5):
        kernel = [(1 + float(((e[j] - mu[k]) ** 2).sum()) / alpha) ** (-(alpha + 1) / 2) for k in range(3)]
        for k in range(3):
            assert q[j, k].item() == pytest.approx(kernel[k] / sum(kernel), rel=1e-5)


def test_dec_target_matches_eq4():
    torch.manual_seed(1)
    q = torch.softmax(torch.randn(6, 3), dim=1)
    p = dec_target_distribution(q)
    f = [float(q[:, k].sum()) for k in range(3)]
    for j in range(6):
        denom = sum(float(q[j, k]) ** 2 / f[k] for k in range(3))
        for k in range(3):
            assert p[j, k].item() == pytest.approx(float(q[j, k]) ** 2 / f[k] / denom, rel=1e-5)
    assert not p.requires_grad


def test_dec_kl_matches_eq5_6():
    torch.manual_seed(2)
    q = torch.softmax(torch.randn(4, 3), dim=1)
    p = torch.softmax(torch.randn(4, 3), dim=1)
    expected = (
        sum(sum(float(p[j, k]) * math.log(float(p[j, k]) / float(q[j, k])) for k in range(3)) for j in range(4)) / 4
    )
    assert dec_kl_loss(p, q).item() == pytest.approx(expected, rel=1e-5)
    assert dec_kl_loss(q, q).item() == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("tau", [0.5, 1.0])
def test_instance_contrastive_matches_eq1_2(tau):
    torch.manual_seed(3)
    m = 4
    z1, z2 = torch.randn(m, 5), torch.randn(m, 5)
    z = torch.cat([z1, z2])
    total = 0.0
    for i in range(2 * m):
        partner = i + m if i < m else i - m
        numerator = math.exp(_cos(z[i], z[partner]) / tau)
        denominator = sum(math.exp(_cos(z[i], z[j]) / tau) for j in range(2 * m) if j != i)
        total += -math.log(numerator / denominator)
    assert instance_contrastive_loss(z1, z2, tau).item() == pytest.approx(total / (2 * m), rel=1e-5)


def test_instance_contrastive_rewards_aligned_views():
    torch.manual_seed(4)
    z = torch.randn(8, 16)
    assert instance_contrastive_loss(z, z + 0.01 * torch.randn(8, 16)) < instance_contrastive_loss(
        z, torch.randn(8, 16)
    )
    with pytest.raises(ValueError, match="same shape"):
        instance_contrastive_loss(z, z[:4])
