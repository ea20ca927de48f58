"""The estimate ``train`` prints before its first step: priced from the encoder's measured speed."""

from __future__ import annotations

import pytest

from hf_textcluster.runs.estimate import RunEstimate, estimate_auto

STEPS = {"contrastive": (300, 64), "self_training": (300, 64)}


def test_the_estimate_grows_with_the_texts_and_shrinks_with_the_encoders_speed():
    small, large = estimate_auto(2_500, STEPS, 1_000.0), estimate_auto(20_000, STEPS, 1_000.0)
    assert small.steps_seconds == pytest.approx(large.steps_seconds)  # the same steps at both sizes
    assert large.seconds > small.seconds > small.steps_seconds > 0
    faster = estimate_auto(20_000, STEPS, 2_000.0)
    assert faster.steps_seconds == pytest.approx(large.steps_seconds / 2)
    assert faster.seconds < large.seconds


def test_the_estimate_says_minutes_and_the_encoders_speed():
    line = RunEstimate(seconds=390.0, steps_seconds=240.0, texts_per_second=1480.4).describe()
    assert line == (
        "about 6.5 minutes on this machine (4.0 minutes of them training steps; the encoder reads 1,480 texts/s here)"
    )
    assert RunEstimate(seconds=42.0, steps_seconds=30.0, texts_per_second=900.0).describe().startswith("about 42 s ")


def test_the_default_prices_the_cached_objectives_below_fine_tuning():
    cached = estimate_auto(20_000, {}, 1_000.0, cached=("scan", "adapter"))
    scan_only = estimate_auto(20_000, {}, 1_000.0, cached=("scan",))
    assert 0 < scan_only.steps_seconds < cached.steps_seconds < cached.seconds
    # their steps do not run the encoder: its speed changes only the passes over the texts
    faster = estimate_auto(20_000, {}, 2_000.0, cached=("scan", "adapter"))
    assert faster.steps_seconds == pytest.approx(cached.steps_seconds) and faster.seconds < cached.seconds
    assert cached.seconds < estimate_auto(20_000, STEPS, 1_000.0).seconds
