"""``hf-textcluster recluster``: re-fit a trained model's clusters by k-means on its trained embeddings."""

import argparse

from ..editing.kmeans import KMEANS_INITS
from ._args import run_edit
from .calibrate import add_calibration_args, calibration_kwargs

HELP = (
    "Re-fit a trained model's clusters by k-means on its trained embeddings of its training texts, calibrate and "
    "name them: the benchmark's 'k-means after' as the served model; in place unless --output-dir."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_calibration_args(parser)
    parser.add_argument(
        "--kmeans-init",
        default="best",
        choices=list(KMEANS_INITS),  # train's --kmeans-init offers the same
        help="How k-means starts, as in train: best (the lower inertia of k-means++ and a run started from the "
        "UMAP clusters, no labels used), k-means++ (the benchmark's 'k-means after' column) or umap (from "
        "k-means on a UMAP reduction: better with many clusters).",
    )


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Re-fit ``--model``'s clusters by k-means on its own (trained) embeddings of ``--input``: ``predict`` then gives
    each text its nearest k-means centre (the benchmark's "k-means after" column)."""
    clusterer, _, where = run_edit(args, "recluster", kmeans_init=args.kmeans_init, **calibration_kwargs(args))
    print(f"Re-clustered {args.model} by k-means (K = {clusterer.model.config.num_clusters}), calibrated; {where}.")
    return 0
