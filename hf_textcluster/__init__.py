"""hf_textcluster: deep short-text clustering as Hugging Face models.

Importing the package registers every method of the registry (:mod:`hf_textcluster.models`) with
``AutoConfig``/``AutoModel``, the ``text-clustering`` pipeline, and the Hub layer (model cards, remote code), so
``AutoModel.from_pretrained(dir)`` and ``pipeline("text-clustering", model=dir)`` just work. Each method's config,
model and trainer classes are exported here under their own names (``SCCLModel``, ``DECMLMTrainer``, ...).
"""

from transformers import AutoConfig, AutoModel
from transformers.pipelines import PIPELINE_REGISTRY

from . import hub
from .encoders import DEFAULT_ENCODER, resolve_encoder
from .modeling.configuration_utils import TextClusteringConfig
from .modeling.modeling_utils import ClusteringOutput, TextClusteringPreTrainedModel
from .modeling.pipelines import TextClusteringPipeline
from .models import METHODS, ClusteringMethod, get_method
from .training.metrics import (
    adjusted_rand_index,
    cluster_accuracy,
    clustering_scores,
    compute_metrics,
    load_clustering_metric,
    normalized_mutual_info,
    purity,
)
from .training.runs import train_clusterer
from .training.trainer import ClusteringTrainer, ClusteringTrainingArguments, evaluate_clusterer

__version__ = "0.1.0"

TextClusteringPreTrainedModel.hub_layer = hub
PIPELINE_REGISTRY.register_pipeline("text-clustering", pipeline_class=TextClusteringPipeline, pt_model=AutoModel)

_method_classes = {}
for _method in METHODS.values():
    AutoConfig.register(_method.name, _method.config_class, exist_ok=True)
    AutoModel.register(_method.config_class, _method.model_class, exist_ok=True)
    for _cls in (_method.config_class, _method.model_class, _method.trainer_class):
        _method_classes[_cls.__name__] = _cls
globals().update(_method_classes)


__all__ = [
    "DEFAULT_ENCODER",
    "METHODS",
    "ClusteringMethod",
    "ClusteringOutput",
    "ClusteringTrainer",
    "ClusteringTrainingArguments",
    "TextClusteringConfig",
    "TextClusteringPipeline",
    "TextClusteringPreTrainedModel",
    "adjusted_rand_index",
    "cluster_accuracy",
    "clustering_scores",
    "compute_metrics",
    "evaluate_clusterer",
    "get_method",
    "load_clustering_metric",
    "normalized_mutual_info",
    "purity",
    "resolve_encoder",
    "train_clusterer",
    *sorted(_method_classes),
]
