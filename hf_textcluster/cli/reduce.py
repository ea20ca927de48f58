"""``hf-textcluster reduce``: merge a trained model's closest clusters until N remain, into a new model folder (the old
one is kept)."""

from __future__ import annotations

import argparse

from ..runs.curation import reduce_saved_model
from ._args import add_curation_args, edit_saved_model, positive_int

HELP = (
    "Merge a trained model's closest clusters (nearest calibrated centres first) until --num-clusters "
    "remain, into a new model folder; the old folder is kept to go back to."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--num-clusters", type=positive_int, required=True, help="How many clusters remain (below the model's K)."
    )
    add_curation_args(parser, input_required=False)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Reduce ``--model`` to ``--num-clusters`` clusters and save the result to ``--output-dir``."""
    model, run_record = edit_saved_model(args, reduce_saved_model, args.num_clusters, batch_size=args.batch_size)
    groups = "; ".join(" + ".join(map(str, group)) for group in run_record["edits"][-1]["clusters"])
    print(
        f"Reduced {args.model} to {model.config.num_clusters} clusters by merging {groups}; saved to "
        f"{args.output_dir} ({args.model} is unchanged: load it to go back)."
    )
    return 0
