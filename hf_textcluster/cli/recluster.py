"""``hf-textcluster recluster``: re-fit a trained model's clusters by k-means on its trained embeddings."""

from __future__ import annotations

import argparse

from .calibrate import add_saved_model_args, calibrate_model, update_saved_model


def add_parser(subparsers) -> argparse.ArgumentParser:
    recluster = subparsers.add_parser("recluster", help="Re-fit a trained model's clusters by k-means on its trained "
                                                        "embeddings of your texts (its training texts), calibrate and "
                                                        "save it: the benchmark's 'k-means after' as the served model.")
    add_saved_model_args(recluster)
    recluster.add_argument("--kmeans-init", default="k-means++", choices=["k-means++", "umap"],
                           help="How k-means starts: k-means++ (default) or umap (from k-means on a UMAP reduction: "
                                "better with many clusters; needs umap-learn).")
    recluster.set_defaults(func=run)
    return recluster


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Re-fit a trained model's clusters by k-means on its own (trained) embeddings of ``--input``, calibrate them and
    save: ``predict`` then gives each text its nearest k-means centre (the benchmark's "k-means after" column)."""
    def update(model, texts):
        model.initialize_clusters(texts, random_state=args.seed, batch_size=args.batch_size, show_progress_bar=True,
                                  kmeans_init=args.kmeans_init)
        calibrate_model(model, texts, args)

    model, seconds, output_dir = update_saved_model(args, "recluster", update)
    print(f"Re-clustered {args.model} by k-means (K = {model.config.num_clusters}) on its embeddings of the "
          f"{args.input} texts and calibrated it in {seconds:.1f}s; saved to {output_dir}.")
    return 0
