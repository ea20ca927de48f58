"""hf_textcluster: deep short-text clustering as Hugging Face models.

Importing the package registers the clusterers with ``AutoConfig``/``AutoModel`` and the ``text-clustering``
pipeline, so ``AutoModel.from_pretrained(dir)`` and ``pipeline("text-clustering", model=dir)`` just work.
"""

from transformers import AutoConfig, AutoModel
from transformers.pipelines import PIPELINE_REGISTRY

from .backbones import DEFAULT_ENCODER, resolve_encoder
from .configuration_utils import TextClusteringConfig
from .metrics import adjusted_rand_index, cluster_accuracy, clustering_scores, compute_metrics, normalized_mutual_info, purity
from .modeling_utils import ClusteringOutput, TextClusteringPreTrainedModel
from .models.decmlm import DECMLMConfig, DECMLMModel
from .models.decmlm.trainer_decmlm import DECMLMTrainer
from .models.sccl import SCCLConfig, SCCLModel
from .models.sccl.trainer_sccl import SCCLTrainer
from .pipelines import TextClusteringPipeline
from .trainer import ClusteringTrainer, ClusteringTrainingArguments, evaluate_clusterer

__version__ = "0.1.0"

_MODELS = [(SCCLConfig, SCCLModel), (DECMLMConfig, DECMLMModel)]
for _config_class, _model_class in _MODELS:
    AutoConfig.register(_config_class.model_type, _config_class, exist_ok=True)
    AutoModel.register(_config_class, _model_class, exist_ok=True)

PIPELINE_REGISTRY.register_pipeline("text-clustering", pipeline_class=TextClusteringPipeline, pt_model=AutoModel)

__all__ = [
    "DEFAULT_ENCODER",
    "ClusteringOutput",
    "ClusteringTrainer",
    "ClusteringTrainingArguments",
    "DECMLMConfig",
    "DECMLMModel",
    "DECMLMTrainer",
    "SCCLConfig",
    "SCCLModel",
    "SCCLTrainer",
    "TextClusteringConfig",
    "TextClusteringPipeline",
    "TextClusteringPreTrainedModel",
    "adjusted_rand_index",
    "cluster_accuracy",
    "clustering_scores",
    "compute_metrics",
    "evaluate_clusterer",
    "normalized_mutual_info",
    "purity",
    "resolve_encoder",
]
