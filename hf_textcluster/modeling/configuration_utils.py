"""TextClusteringConfig: what every clusterer's config holds (encoder sub-config, K, pooling, max length)."""

from __future__ import annotations

import re
from numbers import Real
from typing import Any

from transformers import AutoConfig, PreTrainedConfig
from transformers.configuration_utils import SubConfigSpec

from .validation import Interval, Options, check_scalar, validate_parameters

# What a calibrated confidence ranks (see hf_textcluster.modeling.calibration).
CONFIDENCE_MEASURES = ("centre_margin",)
# Bounds on the sizes a config.json (data from anyone) can set, checked before anything is built: `"num_clusters":
# 1000000000` would build a billion cluster names. The weights' shapes then pin every size; layers are built before.
MAX_NUM_CLUSTERS = 100_000
MAX_SIZE = 2**24
MAX_LAYERS = 1_000
# What the methods' tables share: a width or count of steps, a temperature, a loss weight, a dropout or share of steps.
SIZE = Interval(int, 1, MAX_SIZE)
POSITIVE_NUMBER = Interval(Real, 0, None, closed="neither")
NON_NEGATIVE_NUMBER = Interval(Real, 0, None)
SHARE = Interval(Real, 0, 1, closed="left")


def running_as_remote_code() -> bool:
    """Whether this runs as remote code: transformers loads it under its own module names, not ``hf_textcluster.*``."""
    return not __name__.startswith("hf_textcluster.")


class TextClusteringConfig(PreTrainedConfig):
    r"""
    Base configuration of a text clusterer: a transformer encoder (a nested config, e.g. ``BertConfig``) whose
    pooled output is assigned to ``num_clusters`` clusters.

    Args:
        encoder (`PreTrainedConfig` or `dict`): the encoder's configuration.
        num_clusters (`int`): K, the number of clusters.
        pooling (`str`): ``"mean"`` (average of the token states under the attention mask) or ``"cls"``.
        normalize_embeddings (`bool`): L2-normalise the pooled embedding before the heads.
        max_length (`int`): texts are truncated to this many tokens (short-text papers use 32).
        centroids_initialized (`bool`): set once the cluster head was fitted (k-means) or trained; an
            uninitialised clusterer refuses to predict.
        id2label (`dict[int, str]`): a name per cluster (defaults to ``cluster_<i>``).
        served_partition (`str`): which candidate partition it serves: ``"head"`` (the method's own),
            ``"kmeans"`` / ``"umap_kmeans"`` (centres re-fitted on its embeddings), each also ``"+refined"``.
        confidence_measure (`str`): what the calibrated confidence ranks: ``"centre_margin"``.
        refined_head_dim (`int`): input size of the linear ``refined_head`` that serves a refined partition on the
            L2-normalised ``kmeans_features``; 0 when the model has none.
        flag_outliers (`bool`): the pipeline's default ``flag_outliers`` (``train --outliers``, ``reduce-outliers``).
    """

    model_type = "text-clustering"
    sub_configs_defaults = {"encoder": SubConfigSpec(config_class=AutoConfig, model_type="bert")}

    encoder: PreTrainedConfig | dict | None = None
    num_clusters: int = 8
    pooling: str = "mean"
    normalize_embeddings: bool = False
    max_length: int = 32
    centroids_initialized: bool = False
    num_calibration_texts: int = 0
    confidence_measure: str = "centre_margin"
    served_partition: str = "head"
    refined_head_dim: int = 0
    flag_outliers: bool = False

    # Each field's allowed values, checked once when the config is made; a method's config extends this table.
    _parameter_constraints = {
        "num_clusters": Interval(int, 2, MAX_NUM_CLUSTERS),
        "pooling": Options("mean", "cls"),
        "max_length": Interval(int, 1, MAX_SIZE),
        "num_calibration_texts": Interval(int, 0, None),
        "confidence_measure": Options(*CONFIDENCE_MEASURES),
        "refined_head_dim": Interval(int, 0, MAX_SIZE),
    }

    def __post_init__(self, **kwargs):
        # before transformers' own __post_init__, which builds `num_labels` names (of the encoder's config too)
        validate_parameters(self, self._parameter_constraints, type(self).__name__)
        check_scalar(kwargs.get("num_labels"), "num_labels", int, min_val=0, max_val=MAX_NUM_CLUSTERS, allow_none=True)
        if self.encoder is not None and not isinstance(self.encoder, (dict, PreTrainedConfig)):
            raise ValueError(f"`encoder` must be an encoder's config (a dict), got {type(self.encoder).__name__}.")
        if isinstance(self.encoder, dict):
            num_labels = self.encoder.get("num_labels")
            check_scalar(num_labels, "encoder.num_labels", int, min_val=0, max_val=MAX_NUM_CLUSTERS, allow_none=True)
            for key, value in self.encoder.items():
                limit = MAX_LAYERS if key.endswith("layers") else MAX_SIZE
                if isinstance(value, int) and not isinstance(value, bool) and abs(value) > limit:
                    raise ValueError(f"`encoder.{key}` is {value}, beyond any encoder (at most {limit}).")
        super().__post_init__(**kwargs)
        if not running_as_remote_code():
            # remote-code entries are for users without the package; with it, its classes apply (a re-save adds them)
            for key in ("auto_map", "custom_pipelines"):
                self.__dict__.pop(key, None)
        given: Any = self.encoder  # a config, its dict, or None
        encoder = given.to_dict() if hasattr(given, "to_dict") else (given or {})
        positions = encoder.get("max_position_embeddings")
        if isinstance(positions, int) and self.max_length > positions:
            raise ValueError(
                f"`max_length` is {self.max_length} tokens but the encoder has positions for {positions} "
                f"(`max_position_embeddings`): use at most {positions}, and split longer documents into passages."
            )
        if self.id2label is None or len(self.id2label) != self.num_clusters:
            if self.id2label and not all(re.fullmatch(r"LABEL_\d+", str(v)) for v in self.id2label.values()):
                raise ValueError(
                    f"`id2label` names {len(self.id2label)} clusters but `num_clusters` is {self.num_clusters}; "
                    "give one name per cluster."
                )
            self.id2label = {i: f"cluster_{i}" for i in range(self.num_clusters)}
            self.label2id = {name: i for i, name in self.id2label.items()}

    @classmethod
    def from_dict(cls, config_dict, **kwargs):
        """transformers' ``from_dict``, with its multi-line field-type errors as one line."""
        try:
            return super().from_dict(config_dict, **kwargs)
        except Exception as err:  # huggingface_hub's StrictDataclassError is no ValueError: named by its class
            strict = type(err).__name__.startswith("StrictDataclass")
            if not strict and (not isinstance(err, (ValueError, TypeError)) or "\n" not in str(err).strip()):
                raise
            raise ValueError(f"The config is not valid: {' '.join(str(err).split())}") from None

    @property
    def has_topic_model(self) -> bool:
        """Whether the model learns topics (``model.cluster_topics``): methods with a topic model override it."""
        return False
