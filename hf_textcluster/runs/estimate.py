"""How long ``train`` (the default) will take on this machine, said before its first step.

The encoder's speed here is measured on a sample of the training texts (about a second). Each phase is priced from
it: a training step costs what encoding its texts' views forward and backward costs (:data:`STEP_COST`, in text
encodings per trained text), the passes over the texts (the k-means start, DEC's targets, the health checks, each
signal's candidates) cost one encoding of every text each, and what does not run on the encoder (UMAP, k-means,
refinement, the consensus, the criteria, naming, saving) grows with the number of texts (:data:`OTHER_SECONDS_PER_TEXT`,
on a CPU; the encoder's speed does not tell it). The constants come from the benchmark's profile of the default
(``python -m training.bench profile``), which also records each run's estimate beside its wall time.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# encodings (forward passes of one text) that one trained text of a step costs, per training signal: the contrastive
# signal encodes three views, the self-training one one, each forward and backward (backward through the trained
# layers only); measured with the lower half of the layers frozen
STEP_COST = {"contrastive": 9.0, "self_training": 3.0}
# whole passes over the training texts besides the steps: the k-means start (shared), each signal's candidates
PASSES = 3
# the health checks encode a sample of this many texts this many times per signal
HEALTH_TEXTS, HEALTH_CHECKS = 1000, 10
# DEC's targets are recomputed over every text once per this many steps of the self-training signal
TARGET_REFRESH_STEPS = 100
# seconds per training text of what does not run on the encoder, on a 2-core CPU
OTHER_SECONDS_PER_TEXT = 0.004
# texts the encoder's speed is measured on
SAMPLE_SIZE = 256


@dataclass
class RunEstimate:
    """An estimate of a whole ``auto`` run.

    Attributes:
        seconds: the whole run.
        steps_seconds: the training steps of every signal together.
        texts_per_second: the encoder's measured speed (inference, the run's precision).
    """

    seconds: float
    steps_seconds: float
    texts_per_second: float

    def describe(self) -> str:
        """One line, e.g. ``"about 6.5 minutes on this machine (4.0 of them training steps; the encoder reads 1,480
        texts/s here)"``."""
        return (
            f"about {_minutes(self.seconds)} on this machine ({_minutes(self.steps_seconds)} of them training steps; "
            f"the encoder reads {self.texts_per_second:,.0f} texts/s here)"
        )


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} minutes" if seconds >= 90 else f"{seconds:.0f} s"


def encoding_speed(model, texts: Sequence[str], *, batch_size: int, precision: str, seed: int = 0) -> float:
    """Texts per second the model's encoder embeds here, timed on a seeded sample of ``texts`` (after one batch to
    warm up)."""
    rng = np.random.default_rng(seed)
    sample = [texts[int(i)] for i in rng.choice(len(texts), size=min(SAMPLE_SIZE, len(texts)), replace=False)]
    model.embed(sample[:batch_size], batch_size=batch_size, show_progress_bar=False, precision=precision)
    start = time.perf_counter()
    model.embed(sample, batch_size=batch_size, show_progress_bar=False, precision=precision)
    return len(sample) / max(time.perf_counter() - start, 1e-6)


def estimate_auto(num_texts: int, steps: Mapping[str, tuple[int, int]], texts_per_second: float) -> RunEstimate:
    """The whole run's seconds: ``steps`` maps each signal to (its steps, texts per step).

    Example:
        >>> round(estimate_auto(20_000, {"contrastive": (300, 64), "self_training": (300, 64)}, 1500).seconds)
        331
    """
    per_text = 1.0 / texts_per_second
    steps_seconds = sum(count * batch * STEP_COST[name] * per_text for name, (count, batch) in steps.items())
    passes = PASSES + sum(
        HEALTH_CHECKS * min(HEALTH_TEXTS, num_texts) / num_texts
        + ((count - 1) // TARGET_REFRESH_STEPS if name == "self_training" else 0)
        for name, (count, _) in steps.items()
    )
    seconds = steps_seconds + passes * num_texts * per_text + OTHER_SECONDS_PER_TEXT * num_texts
    return RunEstimate(seconds=seconds, steps_seconds=steps_seconds, texts_per_second=texts_per_second)
