"""``hf-textcluster recluster``: re-fit a trained model's clusters by k-means on its trained embeddings."""

from __future__ import annotations

import argparse

from transformers.utils import logging

from ..apps.report import model_outputs
from ..editing.clusters import initialize_clusters
from ..editing.kmeans import KMEANS_INITS
from ..evaluation.metrics import cluster_accuracy
from ._args import update_saved_model
from .calibrate import add_saved_model_args, calibrate_model, rename_clusters

logger = logging.get_logger(__name__)

# Below this share of texts in the same cluster (ids matched), the texts are probably not the model's training texts.
LOW_AGREEMENT = 0.5


HELP = (
    "Re-fit a trained model's clusters by k-means on its trained "
    "embeddings of your texts (its training texts), calibrate and "
    "save it: the benchmark's 'k-means after' as the served model."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_saved_model_args(parser)
    parser.add_argument(
        "--kmeans-init",
        default="best",
        choices=list(KMEANS_INITS),
        help="How k-means starts, as in train: best (the lower inertia of k-means++ and a run started from the "
        "UMAP clusters, no labels used), k-means++ (the benchmark's 'k-means after' column) or umap (from "
        "k-means on a UMAP reduction: better with many clusters).",
    )


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Re-fit a trained model's clusters by k-means on its own (trained) embeddings of ``--input``, calibrate them and
    save: ``predict`` then gives each text its nearest k-means centre (the benchmark's "k-means after" column)."""

    def update(model, texts):
        embeddings = model.embed(texts, batch_size=args.batch_size, show_progress_bar=True)
        # the head's clusters of the embeddings before and after: one pass through the head each, no encoding
        trained = model.config.centroids_initialized
        before = model_outputs(model, embeddings)["probabilities"].argmax(1) if trained else None
        initialize_clusters(model, embeddings=embeddings, random_state=args.seed, kmeans_init=args.kmeans_init)
        if trained:
            share = cluster_accuracy(before, model_outputs(model, embeddings)["probabilities"].argmax(1))
            if share < LOW_AGREEMENT:  # the texts in the same cluster, ids matched one to one
                logger.warning(
                    f"The new clusters agree with the trained head on only {100 * share:.0f}% of the texts of "
                    f"{args.input}: are they the model's training texts? Re-cluster on those (the trained model is "
                    "kept: see above)."
                )
        calibrate_model(model, texts, args)
        rename_clusters(model, texts, args)

    model, seconds, output_dir = update_saved_model(args, "recluster", update)
    print(
        f"Re-clustered {args.model} by k-means (K = {model.config.num_clusters}) on its embeddings of the "
        f"{args.input} texts and calibrated it in {seconds:.1f}s; saved to {output_dir}."
    )
    return 0
