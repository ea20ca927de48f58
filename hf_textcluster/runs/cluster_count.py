"""How many clusters a training run trains: the request checked against the training texts (with none given, K from
the labels of labelled texts, else ``"auto"``), and with ``"auto"`` K chosen from the texts' embeddings, or the K an
interrupted run of the same request chose."""

from __future__ import annotations

import datasets
from transformers import set_seed
from transformers.utils import logging

from ..choosing.auto_k import ClusterCountRequest
from ..modeling.input_checks import check_num_clusters
from ..modeling.modeling_utils import TextClusteringPreTrainedModel
from ..models.building import from_encoder_pretrained
from ..reuse import embed
from .folder import RunFolder

logger = logging.get_logger(__name__)

EMBEDDING_CONFIG_KEYS = ("pooling", "normalize_embeddings", "max_length")


def check_cluster_count(request: ClusterCountRequest, train_dataset: datasets.Dataset) -> ClusterCountRequest:
    """The request checked against the training texts; with none given, K from the labels of labelled texts, else
    ``"auto"``."""
    if request.num_clusters is None:
        label_feature = train_dataset.features.get("label")
        if label_feature is None:  # no K and no labels: chosen from the texts
            request = ClusterCountRequest.parse("auto")
        else:
            num_classes = getattr(label_feature, "num_classes", None) or len(set(train_dataset["label"]))
            request = ClusterCountRequest(num_classes)
    request.check(len(train_dataset), texts=None if request.is_auto else train_dataset["text"])
    return request


def settle_auto_k(request, identity, last_checkpoint, config_kwargs, args, train_dataset) -> tuple[dict, object]:
    """K for ``num_clusters="auto"`` of ``request`` (a :class:`~hf_textcluster.runs.request.TrainingRequest`): the
    one a resumed run chose, else chosen now from the training texts' embeddings (returned too, for the k-means
    initialisation); ``identity`` records it."""
    k_selection = _saved_k_selection(request, identity) if last_checkpoint else None
    embeddings = None
    if k_selection is not None:
        logger.warning(
            f"num_clusters='auto': resuming with K={k_selection['num_clusters']}, as chosen by "
            f"{k_selection['criterion']} when this run started."
        )
    else:
        k_selection, embeddings = _choose_num_clusters(request, config_kwargs, args, train_dataset)
    identity["num_clusters"] = k_selection["num_clusters"]
    identity["k_selection"] = k_selection
    check_num_clusters(identity["num_clusters"], len(train_dataset), texts=train_dataset["text"])
    set_seed(request.seed)  # the model starts as it would with --num-clusters K
    return k_selection, embeddings


def _choose_num_clusters(request, config_kwargs, args, train_dataset) -> tuple[dict, object]:
    """Embed the training texts once with the encoder, pooling and length the method's model will use (the
    encoder alone: no method heads, at the precision and batch size the trainer will use), choose K; returns the
    record and the embeddings."""
    count = request.num_clusters
    embedding_kwargs = {k: v for k, v in config_kwargs.items() if k in EMBEDDING_CONFIG_KEYS}
    embedder = from_encoder_pretrained(
        TextClusteringPreTrainedModel, request.encoder, num_clusters=count.k_min, **embedding_kwargs
    ).to(args.device)
    precision = "bf16" if args.bf16 else ("fp16" if args.fp16 else "fp32")  # ClusteringTrainer.precision
    encoding = {"batch_size": args.encode_batch_size, "precision": precision}
    embeddings = embed(embedder, train_dataset["text"], show_progress_bar=not args.disable_tqdm, **encoding)
    del embedder
    return choose_k(count, embeddings, request.seed), embeddings


def choose_k(count: ClusterCountRequest, embeddings, seed: int) -> dict:
    """K for ``count`` (``"auto"``) chosen from the training texts' ``embeddings``, the one choice of K of a run (the
    default run's first save and a method's own run both call it), said in the log; returns what
    ``training_run.json`` records of it (``k_selection``)."""
    result = count.choose(embeddings, random_state=seed)
    logger.warning(f"num_clusters='auto': {result.describe()}.")
    for note in result.notes:
        logger.warning(f"num_clusters='auto': {note}.")
    return {**result.to_dict(), "requested_k_range": count.to_dict()["k_range"]}


def _saved_k_selection(request, identity: dict) -> dict | None:
    """The K an interrupted run of the same request on the same texts chose (its run_identity.json), if any; none
    when that K came from split clusters (the BERTopic way serves them only within the run that found them)."""
    saved = RunFolder(request.output_dir).read_identity() or {}
    selection = saved.get("k_selection") or {}
    same = (
        saved.get("texts_sha1") == identity["texts_sha1"]
        and selection.get("criterion") == request.num_clusters.criterion
        and selection.get("requested_k_range") == request.num_clusters.to_dict()["k_range"]
        and not selection.get("split_from")  # split clusters are kept for a run only: choosing again finds them
    )
    return selection if same and isinstance(selection.get("num_clusters"), int) else None
