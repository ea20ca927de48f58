"""How long a run trains: a schedule sized to the corpus.

A recipe with a ``schedule`` block (the ``cpu`` recipes) trains ``epochs`` passes over the training texts, bounded
below by ``min_steps`` and above by the recipe's ``max_steps`` (its budget on a 2-core CPU)::

    steps = min(max_steps, max(min_steps, epochs * steps_per_epoch)),   steps_per_epoch = N // batch (drop_last)

so 300 texts train 10 epochs in a few dozen steps, while 5,000 or 20,000 texts reach the cap (a few epochs, or a
fraction of one). ``train --method auto`` gives its signals a block of its own
(:data:`~hf_textcluster.runs.auto.AUTO_SCHEDULE`: 8 epochs within [100, the cap]). A recipe without a ``schedule``
block (``paper``) keeps its own numbers (``max_steps`` or ``num_train_epochs``), and an explicit ``max_steps`` or
``num_train_epochs`` (``--max_steps``, ``training_overrides``) always wins.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

from .block import Block


@dataclass
class Schedule(Block):
    """How many steps a run trains and why (``training_run.json``'s ``"schedule"``).

    Attributes:
        max_steps: optimizer steps (None: the recipe or the caller gave ``num_train_epochs`` instead).
        epochs: passes over the training texts these steps make (approximate under ``dataloader_drop_last``).
        batch_size: texts per step (per device x processes x gradient accumulation).
        num_texts: training texts.
        source: ``"corpus"`` (derived by the recipe's rule), ``"recipe"`` (the recipe's own numbers) or
            ``"explicit"`` (``max_steps`` / ``num_train_epochs`` given by the caller).
        rule: the rule in words, for logs and ``training_run.json``.
    """

    max_steps: int | None
    epochs: float | None
    batch_size: int
    num_texts: int
    source: str
    rule: str

    def describe(self) -> str:
        """One line: ``"40 steps of 64 texts, 10.0 epochs of 300 texts (10 epochs, at least 30 ...)"``."""
        if not self.max_steps:
            return f"{self.epochs:g} epochs of {self.num_texts:,} texts in batches of {self.batch_size} ({self.rule})"
        return (
            f"{self.max_steps} steps of {self.batch_size} texts, {self.epochs:.1f} epochs of {self.num_texts:,} texts "
            f"({self.rule})"
        )


def _check_schedule(schedule: Mapping) -> None:
    for key in ("epochs", "min_steps"):
        value = schedule.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"A recipe's schedule needs a positive `{key}`, got {value!r}.")


def plan_schedule(recipe: Mapping, num_texts: int, overrides: Mapping | None = None) -> Schedule:
    """The schedule of a run of ``recipe`` (as :func:`~hf_textcluster.runs.recipes.load_recipe` returns it) on
    ``num_texts`` training texts, given the caller's ``TrainingArguments`` ``overrides``.

    Args:
        recipe: the recipe: its ``training`` values and, for a schedule sized to the corpus, a ``schedule`` block
            ``{"epochs": E, "min_steps": S}`` (the cap is ``training.max_steps``, else the block's ``cap``; with
            ``"partial_batches": true`` an epoch counts ``N / batch`` steps, a last partial batch included).
        num_texts: how many texts the run trains on.
        overrides: the caller's training arguments; ``max_steps`` or ``num_train_epochs`` there win.

    Returns:
        A :class:`Schedule`; its ``max_steps`` is what the run's ``TrainingArguments`` get.

    Raises:
        ValueError: a malformed ``schedule`` block.

    Example:
        >>> recipe = {"training": {"per_device_train_batch_size": 64, "max_steps": 300, "dataloader_drop_last": True},
        ...           "schedule": {"epochs": 10, "min_steps": 30}}
        >>> plan_schedule(recipe, 300).max_steps
        40
        >>> plan_schedule(recipe, 20_000).max_steps
        300
    """
    training = {**recipe.get("training", {}), **(overrides or {})}
    batch = (
        int(training.get("per_device_train_batch_size", 8))
        * int(training.get("gradient_accumulation_steps", 1))
        * max(1, int(os.environ.get("WORLD_SIZE", "1")))
    )
    drop_last = bool(training.get("dataloader_drop_last", False))
    per_epoch = max(1, num_texts // batch if drop_last else math.ceil(num_texts / batch))
    given = {key for key in ("max_steps", "num_train_epochs") if key in (overrides or {})}
    schedule = recipe.get("schedule")
    if given or not schedule:
        steps = training.get("max_steps")
        if "num_train_epochs" in given and "max_steps" not in given:
            steps = None  # epochs asked for: the recipe's step count must not override them
        steps = steps if isinstance(steps, int) and steps > 0 else None
        epochs = steps / per_epoch if steps else float(training.get("num_train_epochs", 3.0))
        rule = " and ".join(f"{key} as given" for key in sorted(given)) if given else "the recipe's own numbers"
        return Schedule(steps, epochs, batch, num_texts, "explicit" if given else "recipe", rule)
    _check_schedule(schedule)
    cap = training.get("max_steps", schedule.get("cap"))
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ValueError(f"A recipe with a schedule needs `max_steps` (the cap) in its training values, got {cap!r}.")
    epochs, min_steps = schedule["epochs"], int(schedule["min_steps"])
    counted = num_texts / batch if schedule.get("partial_batches") else per_epoch
    steps = min(cap, max(min_steps, math.ceil(epochs * counted)))
    rule = f"{epochs:g} epochs, at least {min_steps} and at most {cap} steps; --max-steps N overrides"
    return Schedule(steps, steps / per_epoch, batch, num_texts, "corpus", rule)
