"""The per-row targets of the methods that compute them over the whole training set (DEC-MLM's P, AECL's k-means
pseudo-labels, ClusterBERT's Q): the table, when it was computed, each batch's rows of it (looked up by the ``index``
column the trainer adds), and its place in every checkpoint."""

from __future__ import annotations

import math

import numpy as np
import torch
from transformers import TrainerState

from .checkpoints import ResumeFilesMixin
from .distributed import DistributedTrainerMixin


class RowTargetsMixin(ResumeFilesMixin, DistributedTrainerMixin):
    """The part of :class:`~hf_textcluster.training.trainer.ClusteringTrainer` that keeps a method's per-row targets,
    looked up over the global batch and saved with each checkpoint. A method that has them names them
    (``targets_name``, also their checkpoint file's name); the trainer then adds an ``index`` column to its
    ``train_dataset``."""

    targets_name = ""
    state: TrainerState
    targets: torch.Tensor | None = None  # one row (or one label) per training text
    # The optimizer step and epoch whose weights computed the targets (None: unknown, as after train() ended).
    targets_at: tuple[int, int] | None = None

    def set_targets(self, targets: torch.Tensor) -> None:
        """Keep ``targets`` as computed now, from the current weights."""
        self.targets = targets
        self.targets_at = (self.state.global_step, math.floor((self.state.epoch or 0) + 1e-9))

    def targets_computed_at(self, step: int) -> bool:
        return self.targets_at is not None and self.targets_at[0] == step

    def batch_targets(self, inputs: dict[str, torch.Tensor], device: torch.device) -> torch.Tensor:
        """The targets of the global batch's rows, by their ``index``, on ``device``."""
        if "index" not in inputs:
            raise ValueError(
                f"{type(self).__name__} batches need the rows' 'index' (to look up their targets); train on a "
                "`datasets.Dataset` (the trainer adds the column) or add an 'index' column with the row positions."
            )
        if self.targets is None:
            raise RuntimeError("The targets were never computed: call `trainer.refresh_targets()` (train() does).")
        # moved to the device once: a lookup on the GPU then needs no copy to the host and back in every step
        self.targets = self.targets.to(device)
        return self.targets[self.gather(inputs["index"]).to(device)]

    def checkpoint_arrays(self) -> dict[str, np.ndarray]:
        """What a resumed run needs besides weights, optimizer and RNG states (the targets), by name; saved as
        ``hf_textcluster_<name>.npy`` in each checkpoint and handed to ``restore_checkpoint_arrays`` on resume."""
        if self.targets is None:
            return {}
        return {
            self.targets_name: self.targets.cpu().numpy(),
            f"{self.targets_name}_at": np.asarray(self.targets_at or (-1, -1)),
        }

    def restore_checkpoint_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Take back what ``checkpoint_arrays`` saved (called before a resumed run's first step)."""
        if self.targets_name in arrays:  # as the interrupted run had them, not recomputed from the restored weights
            step, epoch = (int(v) for v in arrays.get(f"{self.targets_name}_at", (-1, -1)))
            self.targets = torch.from_numpy(arrays[self.targets_name])
            self.targets_at = None if step < 0 else (step, epoch)

    @classmethod
    def with_index_column(cls, dataset):
        """``dataset`` with an ``index`` column of row positions 0..N-1 (the collator passes it on)."""
        if dataset is None or not hasattr(dataset, "column_names") or not hasattr(dataset, "add_column"):
            return dataset
        if "index" in dataset.column_names:
            if not np.array_equal(np.asarray(dataset["index"]), np.arange(len(dataset))):
                raise ValueError(
                    f"`train_dataset` has an 'index' column that is not the row position 0..N-1; {cls.__name__} uses "
                    "'index' to look up each row's targets. Remove or rename that column."
                )
            return dataset
        return dataset.add_column("index", list(range(len(dataset))))
