"""What a training run is asked for: the options a one-method run and ``auto`` share, checked once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import datasets

from ..choosing.auto_k import ClusterCountRequest


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

    def __post_init__(self):
        object.__setattr__(self, "num_clusters", ClusterCountRequest.parse(self.num_clusters))

    @property
    def dataset_name(self) -> str | None:
        """The benchmark's name, or None for a Dataset."""
        return self.dataset if isinstance(self.dataset, str) else None
