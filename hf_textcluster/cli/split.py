"""``hf-textcluster split``: split a cluster of a trained model into a new model folder (the old one is kept)."""

from __future__ import annotations

import argparse

from ..runs.curation import split_saved_model
from ._args import add_curation_args, edit_saved_model, positive_int

HELP = (
    "Split a cluster of a trained model (--cluster 5 --num-clusters 2) by k-means on its texts into a new model "
    "folder; the old folder is kept to go back to."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", type=int, required=True, help="The id of the cluster to split.")
    parser.add_argument("--num-clusters", type=positive_int, default=2, help="Into how many clusters (default 2).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the k-means split.")
    add_curation_args(parser, input_required=False)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Split ``--cluster`` of ``--model`` into ``--num-clusters`` clusters and save the result to ``--output-dir``."""
    model, run_record = edit_saved_model(
        args, split_saved_model, args.cluster, n=args.num_clusters, random_state=args.seed
    )
    new_ids = run_record["edits"][-1]["new_ids"]
    print(
        f"Split cluster {args.cluster} of {args.model} into clusters {', '.join(map(str, new_ids))}: "
        f"{model.config.num_clusters} clusters now, saved to {args.output_dir} ({args.model} is unchanged)."
    )
    return 0
