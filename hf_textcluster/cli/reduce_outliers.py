"""``hf-textcluster reduce-outliers``: put every outlier (-1) of a model trained with ``--outliers`` in its nearest
cluster, and stop flagging outliers (in place, the model before kept; or into a copy)."""

import argparse

from ._args import add_edit_args, run_edit

HELP = (
    "Put every outlier (-1) of a model trained with --outliers in its nearest cluster; predict then flags none "
    "(BERTopic's reduce_outliers). In place unless --output-dir."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_edit_args(parser)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Reduce ``--model``'s outliers."""
    clusterer, _, where = run_edit(args, "reduce_outliers")
    moved = clusterer.run.edits[-1]["moved"]
    print(
        f"Moved {moved:,} outlier texts of {args.model} to their nearest cluster; predict flags no outliers now "
        f"(--flag-outliers still does); {where}."
    )
    return 0
