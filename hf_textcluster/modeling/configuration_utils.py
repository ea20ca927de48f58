"""TextClusteringConfig: what every clusterer's config holds (encoder sub-config, K, pooling, max length).

Part of the inference code that every pushed repository carries (see :mod:`hf_textcluster.hub.push`): imports only
transformers.
"""

from __future__ import annotations

import re

from transformers import AutoConfig, PreTrainedConfig
from transformers.configuration_utils import SubConfigSpec

POOLING_MODES = ("mean", "cls")
# What a calibrated confidence ranks (see hf_textcluster.modeling.calibration): the distance margin between a text's
# cluster centre and the nearest other one (calibrated now), or the soft assignment's top-1 minus top-2 probability
# (models calibrated by older versions, whose config.json has no `confidence_measure`: they keep that meaning).
CONFIDENCE_MEASURES = ("centre_margin", "assignment_margin")


def running_as_remote_code() -> bool:
    """Whether this code runs as a pushed repository's remote code (``trust_remote_code=True``, no hf_textcluster
    package) rather than from the installed package. The one answer to that question: transformers loads remote code
    under its own module names, the package's modules are named ``hf_textcluster.*``.

    Returns:
        ``True`` as remote code, ``False`` inside the package.

    Example:
        >>> running_as_remote_code()
        False
    """
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
            uninitialised clusterer refuses to predict. (The name predates heads without centroids; it is kept so
            that existing checkpoints load.)
        id2label (`dict[int, str]`): a name per cluster (defaults to ``cluster_<i>``).
        served_partition (`str`): which of a trained model's candidate partitions it serves: ``"head"`` (the
            method's own cluster head), ``"kmeans"`` / ``"umap_kmeans"`` (centres re-fitted on its embeddings), or one
            of these followed by ``"+refined"`` (refined by iterative classification and served by ``refined_head``).
        confidence_measure (`str`): what the calibrated confidence ranks: ``"centre_margin"`` (set by
            ``calibrate``) or ``"assignment_margin"`` (models calibrated by older versions; see
            :mod:`hf_textcluster.modeling.calibration`).
        refined_head_dim (`int`): input size of the linear ``refined_head`` that serves a refined partition on the
            L2-normalised ``kmeans_features``; 0 when the model has none.
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
    confidence_measure: str = "assignment_margin"  # what old config.json files without the key meant
    served_partition: str = "head"
    refined_head_dim: int = 0

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        if not running_as_remote_code():
            # A pushed repository's remote-code entries (see hf_textcluster.hub.push) are for users without this package;
            # with it, the registered classes and pipeline apply, so they are dropped (a re-save adds them when
            # asked). The same class loaded as remote code keeps them.
            for key in ("auto_map", "custom_pipelines"):
                self.__dict__.pop(key, None)
        if isinstance(self.num_clusters, bool) or not isinstance(self.num_clusters, int) or self.num_clusters < 2:
            raise ValueError(f"`num_clusters` must be an integer >= 2, got {self.num_clusters!r}.")
        if self.pooling not in POOLING_MODES:
            raise ValueError(f"`pooling` must be one of {POOLING_MODES}, got {self.pooling!r}.")
        if not isinstance(self.max_length, int) or self.max_length < 1:
            raise ValueError(f"`max_length` must be a positive integer, got {self.max_length!r}.")
        if (
            isinstance(self.num_calibration_texts, bool)
            or not isinstance(self.num_calibration_texts, int)
            or self.num_calibration_texts < 0
        ):
            raise ValueError(
                f"`num_calibration_texts` must be a whole number >= 0, got {self.num_calibration_texts!r}."
            )
        if self.confidence_measure not in CONFIDENCE_MEASURES:
            raise ValueError(
                f"`confidence_measure` must be one of {CONFIDENCE_MEASURES}, got {self.confidence_measure!r}."
            )
        if (
            isinstance(self.refined_head_dim, bool)
            or not isinstance(self.refined_head_dim, int)
            or self.refined_head_dim < 0
        ):
            raise ValueError(f"`refined_head_dim` must be a whole number >= 0, got {self.refined_head_dim!r}.")
        encoder = self.encoder.to_dict() if hasattr(self.encoder, "to_dict") else (self.encoder or {})
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

    # ----- validation helpers for the methods' __post_init__ --------------------------------------------------------
    def check_positive_integers(self, *names: str, allow_none: bool = False) -> None:
        for name in names:
            value = getattr(self, name)
            if value is None and allow_none:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"`{name}` must be a positive integer{' or None' if allow_none else ''}, got {value!r}."
                )

    def check_numbers(self, *names: str, minimum: float | None = None, strict: bool = False) -> None:
        """Each of ``names`` is a number (not a bool), ``> minimum`` (``strict``) or ``>= minimum``."""
        for name in names:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"`{name}` must be a number, got {value!r}.")
            if minimum is not None and (value <= minimum if strict else value < minimum):
                raise ValueError(f"`{name}` must be {'>' if strict else '>='} {minimum}, got {value!r}.")

    @property
    def has_topic_model(self) -> bool:
        """Whether the model learns topics (``model.cluster_topics``): methods with a topic model override it."""
        return False

    def card_fields(self) -> tuple[dict[str, str], list[str]]:
        """What a method's model card says that depends on this config beyond its raw hyper-parameters: the values
        of its template's ``$fields``, and lines for the card's Limitations section. Methods override it."""
        return {}, []
