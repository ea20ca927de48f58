"""``hf-textcluster merge``: merge clusters of a trained model (in place, the model before kept; or into a copy)."""

import argparse

from ._args import add_edit_args, run_edit


def cluster_ids(value: str) -> list[int]:
    """``"3,7"`` -> ``[3, 7]``: the ids of one group of clusters to merge."""
    try:
        ids = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        ids = []
    if len(ids) < 2:
        raise argparse.ArgumentTypeError(f"expected at least two comma-separated cluster ids (e.g. 3,7), got {value!r}")
    return ids


HELP = "Merge clusters of a trained model (merge 3,7 1,4,9: two groups); in place unless --output-dir."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "groups",
        type=cluster_ids,
        nargs="+",
        metavar="IDS",
        help="Comma-separated ids of clusters merged into one (3,7); several groups one after the other.",
    )
    add_edit_args(parser)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Merge the ``IDS`` groups of ``--model`` (names, calibration, card and ``training_run.json``'s edits)."""
    clusterer, _, where = run_edit(args, "merge", clusters=args.groups)
    groups = "; ".join(" + ".join(map(str, group)) for group in args.groups)
    print(f"Merged clusters {groups} of {args.model}: {clusterer.model.config.num_clusters} clusters now; {where}.")
    return 0
