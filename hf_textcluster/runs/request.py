"""What a training run is asked for: the options a one-method run and ``auto`` share, checked once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import datasets

from ..choosing.auto_k import ClusterCountRequest
from .folder import RunFolder


@dataclass(frozen=True)
class TrainingRequest:
    """The options of a training run, as :func:`~hf_textcluster.runs.api.train_clusterer` documents them.

    ``num_clusters`` takes what ``train_clusterer`` does (a whole number, ``"auto"``, None) and holds it as a
    :class:`~hf_textcluster.choosing.auto_k.ClusterCountRequest`, so a malformed request fails before any data is read.
    ``auto`` trains each signal on a copy (``dataclasses.replace``) with its own folder and K.

    Example:
        >>> request = TrainingRequest("stackoverflow", "runs/so", num_clusters="auto")
        >>> request.num_clusters.is_auto
        True
    """

    dataset: str | datasets.Dataset
    output_dir: str
    encoder: str | None = None
    recipe: str = "cpu"
    augmentation: str | None = "recipe"
    num_clusters: int | str | ClusterCountRequest | None = None
    data_dir: str | None = None
    seed: int = 0
    training_overrides: Mapping | None = None
    resume: bool = True
    evaluate: bool = True
    save: bool = True
    test_size: int | float | None = None
    split_seed: int = 0
    input_file: Mapping | None = None
    overwrite: bool = False
    keep_checkpoints: bool = False
    name_clusters: bool = True
    keep_signals: bool = False
    time_budget: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "num_clusters", ClusterCountRequest.parse(self.num_clusters))
        budget = self.time_budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0):
            raise ValueError(f"`time_budget` (--time-budget) must be a number of seconds > 0; got {budget!r}.")

    @property
    def dataset_name(self) -> str | None:
        """The benchmark's name, or None for a Dataset."""
        return self.dataset if isinstance(self.dataset, str) else None

    def record(self) -> dict:
        """What ``training_run.json`` records of the request: the data (a benchmark, or the user's file), the recipe,
        the seed and the training overrides."""
        return {
            "dataset": self.dataset_name,
            **({"input": dict(self.input_file)} if self.input_file and not self.dataset_name else {}),
            "recipe": self.recipe,
            "seed": self.seed,
            "training_overrides": dict(self.training_overrides or {}),
        }

    def check_output_dir(self, resuming: bool) -> None:
        """A run that saves replaces no trained model in ``output_dir`` without ``overwrite``, unless it is
        ``resuming`` its own run there (:meth:`~hf_textcluster.runs.folder.RunFolder.check_may_replace_model`)."""
        if self.save and not (self.resume and resuming):
            RunFolder(self.output_dir).check_may_replace_model(
                overwrite=self.overwrite, argument="output_dir (--output-dir)", command="train"
            )
