"""``hf-textcluster reduce``: merge a trained model's closest clusters until N remain (in place, the model before
kept; or into a copy)."""

import argparse

from ._args import add_edit_args, positive_int, run_edit

HELP = (
    "Merge a trained model's closest clusters (nearest calibrated centres first) until --to of them remain; in "
    "place unless --output-dir."
)


SPELLED = {"num_clusters": "--to"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--to", type=positive_int, required=True, metavar="N", help="The clusters that remain (fewer than the model's)."
    )
    add_edit_args(parser)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Reduce ``--model`` to ``--to`` clusters."""
    clusterer, _, where = run_edit(args, "reduce", num_clusters=args.to)
    groups = "; ".join(" + ".join(map(str, group)) for group in clusterer.run.edits[-1]["clusters"])
    print(f"Reduced {args.model} to {clusterer.model.config.num_clusters} clusters by merging {groups}; {where}.")
    return 0
