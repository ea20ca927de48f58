"""``hf-textcluster update``: take new texts into a trained model (centres moved, an emerging group proposed)."""

import argparse

from ..editing.curation import UPDATE_FAR_QUANTILE
from ._args import add_edit_args, quantile, read_texts, run_edit

HELP = (
    "Take new texts (--input) into a trained model without retraining its encoder: the clusters' centres "
    "move by a running mean, and a cohesive group of texts far from their nearest cluster, grown by k-means steps "
    "and as distinct as the existing clusters are, is proposed as a new cluster "
    "(--accept-new adds it). In place unless --output-dir."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--accept-new", action="store_true", help="Add the proposed group as a new cluster.")
    parser.add_argument(
        "--reference",
        help="The texts the model already describes (its training texts) to start the running means from, the first "
        "time (default: the run's own training texts when they can be found).",
    )
    parser.add_argument(
        "--far-quantile",
        type=quantile,
        default=UPDATE_FAR_QUANTILE,
        metavar="Q",
        help="A text farther from its nearest cluster's centre than this quantile of that cluster's calibrated "
        "distances is 'far': the far texts are where a new group is looked for (not predict's --outlier-quantile, "
        "which flags outliers).",
    )
    parser.add_argument("--min-new-size", type=int, help="The smallest group proposed (default: from the batch).")
    add_edit_args(parser, input_help="The new texts: .txt (one per line), csv, jsonl or parquet.")


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Update ``--model`` with the texts of ``--input``."""
    clusterer, result, where = run_edit(
        args,
        "update",
        accept_new=args.accept_new,
        reference_texts=read_texts(args.reference, args.text_column),
        far_quantile=args.far_quantile,
        min_new_size=args.min_new_size,
    )
    if result.proposed is None:
        proposal = "no new group proposed"
    elif result.accepted:
        label = clusterer.model.config.id2label[result.new_cluster]
        proposal = f"a new cluster {result.new_cluster} ({label!r}) of {result.proposed.size} texts added"
    else:
        again = "" if args.output_dir else f" after `hf-textcluster restore --model {args.model}`"
        size = result.proposed.size
        proposal = f"a new group of {size} texts proposed (run again with --accept-new{again} to add it)"
    print(
        f"Updated {args.model} with {len(result.clusters):,} texts ({int(result.far.sum()):,} far from their nearest "
        f"cluster; {proposal}); {where}."
    )
    return 0
