"""The training signals ``train --method auto`` trains (a signal: a registered method with config overrides), and the
names of its other candidates (the consensus, the pretrained encoder's read-outs)."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CONSENSUS", "PRETRAINED_CANDIDATES", "SIGNALS", "SIGNALS_DIR", "Signal", "describe_partition"]


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

# A served partition in words (see describe_partition).
_READ_OUTS = {
    "head": "the cluster head",
    "kmeans": "k-means on the embeddings",
    "umap_kmeans": "UMAP -> k-means on the embeddings",
}


def describe_partition(name: str) -> str:
    """A partition a model serves (``config.served_partition``, a candidate's name) in words.

    Example:
        >>> describe_partition("pretrained/umap_kmeans")
        'the BERTopic way: UMAP -> k-means on the pretrained encoder'
        >>> describe_partition("contrastive/kmeans+refined")
        'k-means on the embeddings of the contrastive signal, refined by iterative classification'
    """
    if name == "pretrained/umap_kmeans":
        return "the BERTopic way: UMAP -> k-means on the pretrained encoder"
    if name == "pretrained/kmeans":
        return "k-means on the pretrained encoder"
    if name == CONSENSUS:
        return "the consensus of every candidate partition"
    source, _, read_out = name.rpartition("/")
    base, refined, _ = read_out.partition("+refined")
    words = _READ_OUTS.get(base, read_out)
    if source in SIGNALS:
        words += f" of the {source.replace('_', '-')} signal"
    return words + (", refined by iterative classification" if refined else "")
