"""The training signals ``train --method auto`` trains (a signal: a registered method with config overrides), and the
names of its other candidates (the consensus, the pretrained encoder's read-outs)."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CONSENSUS", "PRETRAINED_CANDIDATES", "SIGNALS", "SIGNALS_DIR", "Signal"]


class Signal(NamedTuple):
    """A training signal ``auto`` trains: a registered method with config overrides."""

    method: str
    config: dict
    description: str


SIGNALS: dict[str, Signal] = {
    "contrastive": Signal(
        "sccl", {}, "SCCL: instance contrast of two augmented views and DEC self-training (Zhang et al. 2021)"
    ),
    "self_training": Signal(
        "decmlm",
        {"mlm_loss_weight": 0.0},
        "DEC self-training on the encoder, DEC-MLM without its masked-LM term (Huang et al. 2020's ablation)",
    ),
}
CONSENSUS = "consensus"
SIGNALS_DIR = "signals"
PRETRAINED_CANDIDATES = ("kmeans", "umap_kmeans")
