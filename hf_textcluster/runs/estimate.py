"""How long ``train`` (the default) will take on this machine, said before its first step.

The encoder's speed here is measured on a sample of the training texts (under a second). Each phase is priced from
it: a fine-tuning step costs what encoding its texts' views forward and backward costs (:data:`STEP_COST`, in text
encodings per trained text, less for the layers left frozen), the passes over the texts (the k-means start, DEC's
targets, each signal's candidates, the adapter's view) cost one encoding of every text each, the objectives on cached
embeddings cost their steps (:data:`CACHED_STEP_SECONDS`), and what does not run on the encoder (UMAP, k-means,
refinement, the consensus, the criteria, naming, saving) grows with the number of texts
(:data:`OTHER_SECONDS_PER_TEXT`, on a CPU: the encoder's speed does not tell it). The constants come from the
benchmark's profile of the default (``python -m training.bench profile``), which records each run's estimate beside
its wall time.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..choosing.cached import ADAPTER_STEPS, scan_steps

# What a step costs, per trained text, in encodings of one text at the speed measured on the sample (a signal encodes
# its views forward and backward; the health checks and checkpoints it makes are included), with every layer trained.
# Measured in the profile (StackOverflow, 2,500 and 20,000 texts, 2-core Xeon with AMX).
STEP_COST = {"contrastive": 16.6, "self_training": 6.6}
# freezing a share f of the encoder's layers saves f * FROZEN_SAVING of a step (half the layers frozen: 27%)
FROZEN_SAVING = 0.54
# whole passes over the training texts besides the steps (the k-means start, each signal's candidates), and what one
# costs per text against the sample's speed (a whole pass sorts all texts by length: fuller batches)
PASSES, PASS_COST = 3, 0.8
# DEC's targets are recomputed over every text once per this many steps of the self-training signal
TARGET_REFRESH_STEPS = 100
# what does not run on the encoder (UMAP, k-means, refinement, the consensus, the criteria, naming, saving), on a CPU
OTHER_SECONDS, OTHER_SECONDS_PER_TEXT = 17.0, 0.0054
# a step of each objective on cached embeddings (hf_textcluster.choosing.cached: 384 dimensions, batches of 256), in
# seconds on a CPU core (timed on the 2-core Xeon of the profile under a load of three, divided by three: to be
# measured again by the profile); the adapter adds a UMAP k-means of its space (half the rest, below)
CACHED_STEP_SECONDS = {"scan": 0.012, "adapter": 0.027}
# texts the encoder's speed is measured on
SAMPLE_SIZE = 512


@dataclass
class RunEstimate:
    """An estimate of a whole ``auto`` run.

    Attributes:
        seconds: the whole run.
        steps_seconds: the training steps of every signal together (the cached objectives' included).
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


def estimate_auto(
    num_texts: int,
    steps: Mapping[str, tuple[int, int]],
    texts_per_second: float,
    frozen_share: float = 0.0,
    cached: Sequence[str] = (),
) -> RunEstimate:
    """The whole run's seconds: ``steps`` maps each fine-tuning signal to (its steps, texts per step);
    ``frozen_share`` is the share of the encoder's layers left as pretrained; ``cached`` names the objectives trained
    on cached embeddings.

    Example:
        >>> round(estimate_auto(20_000, {"contrastive": (300, 64), "self_training": (300, 64)}, 1150, 0.5).seconds)
        477
        >>> round(estimate_auto(20_000, {}, 1150, cached=("scan", "adapter")).seconds)
        312
    """
    per_text = 1.0 / texts_per_second
    step_share = 1.0 - FROZEN_SAVING * frozen_share
    steps_seconds = step_share * sum(
        count * batch * STEP_COST[name] * per_text for name, (count, batch) in steps.items()
    )
    cached_steps = {"scan": scan_steps(num_texts), "adapter": ADAPTER_STEPS}
    steps_seconds += sum(CACHED_STEP_SECONDS[name] * cached_steps[name] for name in cached)
    passes = (PASSES if steps else 1) + ("adapter" in cached)  # the first save's pass; the adapter's view
    passes += (steps["self_training"][0] - 1) // TARGET_REFRESH_STEPS if "self_training" in steps else 0
    other = (OTHER_SECONDS + OTHER_SECONDS_PER_TEXT * num_texts) * (1 + ("adapter" in cached) / 2)
    seconds = steps_seconds + passes * PASS_COST * num_texts * per_text + other
    return RunEstimate(seconds=seconds, steps_seconds=steps_seconds, texts_per_second=texts_per_second)
