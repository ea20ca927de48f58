"""hf_textcluster: deep short-text clustering as Hugging Face models.

Importing the package registers every method of the registry (:mod:`hf_textcluster.models`) with
``AutoConfig``/``AutoModel`` and the ``text-clustering`` pipeline, so ``AutoModel.from_pretrained(dir)`` and
``pipeline("text-clustering", model=dir)`` just work. That needs only each method's config and model classes; the
models' ``save_pretrained`` then writes all or nothing (:mod:`hf_textcluster.modeling.serialization`).

Every other public name (trainers, metrics, ``train_clusterer``, ``Clusterer``, the Hub layer, reports) is imported on
first use (PEP 562, as transformers' lazy modules do): ``import hf_textcluster`` imports neither
``transformers.Trainer`` nor scikit-learn nor datasets.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from transformers import AutoConfig, AutoModel
from transformers.pipelines import PIPELINE_REGISTRY

from ._version import __version__ as __version__
from .modeling import serialization as _serialization
from .modeling.configuration_utils import TextClusteringConfig
from .modeling.encoding_passes import ClusteringOutput
from .modeling.modeling_utils import TextClusteringPreTrainedModel
from .modeling.pipelines import TextClusteringPipeline
from .modeling.serialization import save_folder as _save_folder
from .models import METHODS, ClusteringMethod, get_method

# Where each lazily exported name lives (module relative to this package).
_LAZY = {
    "DEFAULT_ENCODER": ".encoders",
    "resolve_encoder": ".encoders",
    "adjusted_rand_index": ".evaluation.metrics",
    "cluster_accuracy": ".evaluation.metrics",
    "clustering_scores": ".evaluation.metrics",
    "compute_metrics": ".evaluation.metrics",
    "load_clustering_metric": ".evaluation.metrics",
    "normalized_mutual_info": ".evaluation.metrics",
    "purity": ".evaluation.metrics",
    "train_clusterer": ".runs.api",
    "Clusterer": ".runs.clusterer",
    "edit_saved_model": ".runs.saved_edits",
    "from_encoder_pretrained": ".models.building",
    "ClusteringTrainer": ".training.trainer",
    "ClusteringTrainingArguments": ".training.arguments",
    "evaluate_clusterer": ".training.evaluation",
    "refine_partition": ".choosing.refinement",
    "serve_partition": ".choosing.serving",
    "ServingChoice": ".choosing.serving",
    "cluster_report": ".apps.report",
    "load_sample": ".data.loading",
}
if TYPE_CHECKING:
    from .apps.report import cluster_report
    from .choosing.refinement import refine_partition
    from .choosing.serving import ServingChoice, serve_partition
    from .data.loading import load_sample
    from .encoders import DEFAULT_ENCODER, resolve_encoder
    from .evaluation.metrics import (
        adjusted_rand_index,
        cluster_accuracy,
        clustering_scores,
        compute_metrics,
        load_clustering_metric,
        normalized_mutual_info,
        purity,
    )
    from .models.building import from_encoder_pretrained
    from .runs.api import train_clusterer
    from .runs.clusterer import Clusterer
    from .runs.saved_edits import edit_saved_model
    from .training.arguments import ClusteringTrainingArguments
    from .training.evaluation import evaluate_clusterer
    from .training.trainer import ClusteringTrainer


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    elif name in _method_classes():
        method, attribute = _method_classes()[name]
        value = getattr(METHODS[method], attribute)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # resolved once
    return value


def _method_classes() -> dict[str, tuple[str, str]]:
    """Class name -> (method, registry attribute) of every registered method (its config, model and trainer classes,
    exported by these names); the trainer is named, not imported."""
    names = {}
    for method in METHODS.values():
        names[method.config_class.__name__] = (method.name, "config_class")
        names[method.model_class.__name__] = (method.name, "model_class")
        names[method.trainer.rpartition(":")[2]] = (method.name, "trainer_class")
    return names


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_method_classes()))


# the package's models save all or nothing (the same classes as remote code write in place)
TextClusteringPreTrainedModel.folder_writer = staticmethod(_save_folder)


def _card_writer(model, run, texts) -> str:
    """The card a save of an edited model writes again (``serialization.card_writer``): the Hub layer's."""
    from .hub.model_card import edited_model_card

    return edited_model_card(model, run, texts)


_serialization.card_writer = _card_writer
PIPELINE_REGISTRY.register_pipeline("text-clustering", pipeline_class=TextClusteringPipeline, pt_model=AutoModel)
for _method in METHODS.values():
    AutoConfig.register(_method.name, _method.config_class, exist_ok=True)
    AutoModel.register(_method.config_class, _method.model_class, exist_ok=True)

__all__ = [
    "Clusterer",
    "ClusteringMethod",
    "ClusteringOutput",
    "ClusteringTrainer",
    "ClusteringTrainingArguments",
    "DEFAULT_ENCODER",
    "METHODS",
    "ServingChoice",
    "TextClusteringConfig",
    "TextClusteringPipeline",
    "TextClusteringPreTrainedModel",
    "adjusted_rand_index",
    "cluster_accuracy",
    "cluster_report",
    "clustering_scores",
    "compute_metrics",
    "edit_saved_model",
    "evaluate_clusterer",
    "from_encoder_pretrained",
    "get_method",
    "load_clustering_metric",
    "load_sample",
    "normalized_mutual_info",
    "purity",
    "refine_partition",
    "resolve_encoder",
    "serve_partition",
    "train_clusterer",
] + sorted(_method_classes())
