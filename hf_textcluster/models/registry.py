"""The method registry: what the rest of the package needs to know about each clustering method.

Each ``models/<method>/__init__.py`` declares one :class:`ClusteringMethod` as ``METHOD``; ``models/__init__.py``
lists the method folders. Auto classes, ``train_clusterer``, the CLI's ``--method`` choices, remote code, model cards
and the benchmark read from here; nothing else names a method.

A method's trainer is named by a dotted path and imported on first use (:attr:`ClusteringMethod.trainer_class`):
registering the config and model classes (what ``import hf_textcluster`` does) never imports the training layer.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ClusteringMethod:
    """One clustering method.

    Args:
        name: the method id: ``model_type`` of its config, ``--method`` of the CLI, the key of recipes and results.
        display_name: how tables and cards name it (``"DEC-MLM"``).
        paper: a short reference (authors, venue, year).
        config_class, model_class: its ``TextClusteringConfig`` / ``TextClusteringPreTrainedModel`` subclasses.
        trainer: where its ``ClusteringTrainer`` subclass lives, as ``"module:Class"`` (the module relative to the
            method's package, e.g. ``".trainer_sccl:SCCLTrainer"``, or absolute); :attr:`trainer_class` imports it.
        loss_terms: the terms of its objective by the name the trainer logs them under (``loss_<name>``) and cards
            tag them with (``loss:<name>``), each with what it is (the paper's equation).
        uses_augmented_views: whether it trains on ``text_aug1`` / ``text_aug2`` (augmentation applies).
        paper_results: ACC / NMI (%) its paper reports per benchmark corpus, for the results tables.
        paper_purity: purity (%) its paper reports per benchmark corpus, where it reports purity instead (DEC-MLM).
        paper_note: what its paper reports when not on our corpora (a sentence for the results section).
        paper_test_sizes: the held-out test split its paper reports on, as a number of texts per corpus
            (``bench.py --held-out``); empty when the paper reports on all texts.
        card_fields: what its model card says that depends on a model's config beyond its raw hyper-parameters, as
            ``card_fields(config) -> (fields, limitations)``: the values of its card fragment's ``$fields`` and lines
            for the card's Limitations section (None: nothing; see :func:`hf_textcluster.models.card_fields`).
    """

    name: str
    display_name: str
    paper: str
    config_class: type
    model_class: type
    trainer: str
    loss_terms: Mapping[str, str]
    uses_augmented_views: bool = False
    paper_results: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    paper_purity: Mapping[str, float] = field(default_factory=dict)
    paper_note: str = ""
    paper_test_sizes: Mapping[str, int] = field(default_factory=dict)
    card_fields: Callable[[Any], tuple[dict[str, str], list[str]]] | None = None

    def __post_init__(self):
        if self.config_class.model_type != self.name:
            raise ValueError(f"{self.config_class.__name__}.model_type must be the method id {self.name!r}.")
        if self.model_class.config_class is not self.config_class:
            raise ValueError(f"{self.model_class.__name__}.config_class must be {self.config_class.__name__}.")
        if not isinstance(self.trainer, str) or self.trainer.count(":") != 1:
            raise ValueError(f"`trainer` of {self.name!r} must be 'module:Class', got {self.trainer!r}.")

    @property
    def trainer_class(self) -> type:
        """The method's ``ClusteringTrainer`` subclass, imported on first use (with it, the training layer).

        Example:
            >>> from hf_textcluster.models import get_method
            >>> get_method("sccl").trainer_class.__name__
            'SCCLTrainer'
        """
        module, _, name = self.trainer.partition(":")
        package = self.config_class.__module__.rpartition(".")[0]
        return getattr(importlib.import_module(module, package if module.startswith(".") else None), name)

    @property
    def folder(self) -> Path:
        """The method's folder (``models/<method>/``): its code, ``recipes.json`` and ``model_card.md``."""
        return Path(inspect.getfile(self.config_class)).parent

    @property
    def recipe_file(self) -> Path:
        return self.folder / "recipes.json"

    @property
    def card_fragment(self) -> Path:
        """The method's part of its model card (``## Summary``, ``## Objective``, ``## Choices followed ...``,
        ``## Known weaknesses``, ``## Citation``), rendered into the Hub layer's one card template."""
        return self.folder / "model_card.md"
