"""The per-row targets of the methods that compute them over the whole training set (DEC-MLM's P, AECL's k-means
pseudo-labels, ClusterBERT's Q): kept on the trainer (``targets``, and ``targets_at``: when they were computed), each
batch's rows of them, looked up by the ``index`` column the trainer adds. ``ClusteringTrainer.checkpoint_arrays``
saves them with every checkpoint."""

from __future__ import annotations

import math

import numpy as np
import torch

from .distributed import gather


def set_targets(trainer, targets: torch.Tensor) -> None:
    """Keep ``targets`` as computed now, from the current weights."""
    trainer.targets = targets
    trainer.targets_at = (trainer.state.global_step, math.floor((trainer.state.epoch or 0) + 1e-9))


def targets_computed_at(trainer, step: int) -> bool:
    """Whether the trainer's targets were computed at optimizer step ``step``."""
    return trainer.targets_at is not None and trainer.targets_at[0] == step


def batch_targets(trainer, inputs: dict[str, torch.Tensor], device: torch.device) -> torch.Tensor:
    """The targets of the global batch's rows, by their ``index``, on ``device``."""
    if "index" not in inputs:
        raise ValueError(
            f"{type(trainer).__name__} batches need the rows' 'index' (to look up their targets); train on a "
            "`datasets.Dataset` (the trainer adds the column) or add an 'index' column with the row positions."
        )
    if trainer.targets is None:
        raise RuntimeError("The targets were never computed: call `trainer.refresh_targets()` (train() does).")
    # moved to the device once: a lookup on the GPU then needs no copy to the host and back in every step
    trainer.targets = trainer.targets.to(device)
    return trainer.targets[gather(trainer, inputs["index"]).to(device)]


def with_index_column(dataset, reader: str):
    """``dataset`` with an ``index`` column of row positions 0..N-1 (the collator passes it on), by which ``reader``
    (a trainer's name) looks up each row's targets."""
    if dataset is None or not hasattr(dataset, "column_names") or not hasattr(dataset, "add_column"):
        return dataset
    if "index" in dataset.column_names:
        if not np.array_equal(np.asarray(dataset["index"]), np.arange(len(dataset))):
            raise ValueError(
                f"`train_dataset` has an 'index' column that is not the row position 0..N-1; {reader} uses 'index' "
                "to look up each row's targets. Remove or rename that column."
            )
        return dataset
    return dataset.add_column("index", list(range(len(dataset))))
