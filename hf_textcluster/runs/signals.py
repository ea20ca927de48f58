"""The signals ``train --method auto`` trains: objectives on the pretrained encoder's cached embeddings (the default,
seconds on a CPU) and fine-tuning signals (a registered method with config overrides, the encoder trained); and the
names of its other candidates (the consensus, the pretrained encoder's read-outs)."""

from __future__ import annotations

from typing import NamedTuple

from .saving import SIGNALS_DIR

__all__ = [
    "CACHED",
    "CACHED_SIGNALS",
    "CONSENSUS",
    "DEFAULT_SIGNALS",
    "PRETRAINED_CANDIDATES",
    "SIGNALS",
    "SIGNALS_DIR",
    "Signal",
    "describe_partition",
]


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
# Objectives trained on the pretrained encoder's cached embeddings (hf_textcluster.choosing.cached), no encoder pass
# per step: name -> what it trains. SCAN's candidate is a read-out of the pretrained space (`pretrained/scan`), the
# adapter's are in its own space (`adapter/head`, `adapter/kmeans`, `adapter/umap_kmeans`).
CACHED_SIGNALS: dict[str, str] = {
    "scan": "SCAN's neighbour consistency: linear heads on the cached embeddings (Van Gansbeke et al. 2020)",
    "adapter": "SCCL's objective on a residual adapter over the cached embeddings of the texts and of one "
    "word-deletion view (Zhang et al. 2021)",
}
# What the default trains: SCAN on the cached embeddings, seconds on a CPU. The adapter (a second encoding pass and
# about a minute more) is named in `signals`: on the eight tuning corpora the guarded choice never served its
# candidates (training/studies/README.md). The fine-tuning signals take 10-27x the BERTopic way's time on a CPU.
DEFAULT_SIGNALS = ("scan",)
# the serving signal of the pretrained encoder (the first saved model) serving another partition than the BERTopic
# way through a linear head on its embeddings: a cached objective's candidate, or, when no encoder was fine-tuned,
# the consensus or `pretrained/kmeans`
CACHED = "cached"
CONSENSUS = "consensus"
PRETRAINED_CANDIDATES = ("kmeans", "umap_kmeans")

# A served partition in words (see describe_partition).
_READ_OUTS = {
    "head": "the cluster head",
    "kmeans": "k-means on the embeddings",
    "umap_kmeans": "UMAP -> k-means on the embeddings",
    "scan": "SCAN's linear head",
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
    if name == "pretrained/scan":
        return "SCAN's linear head on the pretrained encoder"
    if name == CONSENSUS:
        return "the consensus of every candidate partition"
    source, _, read_out = name.rpartition("/")
    base, refined, _ = read_out.partition("+refined")
    words = _READ_OUTS.get(base, read_out)
    if source in SIGNALS:
        words += f" of the {source.replace('_', '-')} signal"
    if source == "adapter":
        words += " of the adapter trained on the pretrained encoder's embeddings"
    return words + (", refined by iterative classification" if refined else "")
