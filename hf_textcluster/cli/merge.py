"""``hf-textcluster merge``: merge clusters of a trained model into a new model folder (the old one is kept)."""

from __future__ import annotations

import argparse

from ..runs.curation import merge_saved_model
from ._args import add_curation_args, edit_saved_model


def cluster_ids(value: str) -> list[int]:
    """``"3,7"`` -> ``[3, 7]``: the ids of one group of clusters to merge."""
    try:
        ids = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        ids = []
    if len(ids) < 2:
        raise argparse.ArgumentTypeError(f"expected at least two comma-separated cluster ids (e.g. 3,7), got {value!r}")
    return ids


HELP = (
    "Merge clusters of a trained model (--clusters 3,7 --clusters 1,4,9) into a new model folder; the old "
    "folder is kept to go back to."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--clusters",
        type=cluster_ids,
        action="append",
        required=True,
        metavar="IDS",
        help="Comma-separated ids of clusters merged into one; repeat for several groups.",
    )
    add_curation_args(parser, input_required=False)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Merge ``--clusters`` groups of ``--model`` and save the result to ``--output-dir`` (with names, calibration,
    card and ``training_run.json``'s history of edits)."""
    model, _ = edit_saved_model(args, merge_saved_model, args.clusters)
    groups = "; ".join(" + ".join(map(str, group)) for group in args.clusters)
    print(
        f"Merged clusters {groups} of {args.model}: {model.config.num_clusters} clusters now, saved to "
        f"{args.output_dir} ({args.model} is unchanged: load it to go back)."
    )
    return 0
