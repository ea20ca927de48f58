"""``hf-textcluster split``: split a cluster of a trained model (in place, the model before kept; or into a copy)."""

import argparse

from ._args import add_edit_args, positive_int, run_edit

HELP = "Split a cluster of a trained model (split 5 --parts 2) by k-means on its texts; in place unless --output-dir."


SPELLED = {"num_clusters": "--parts", "cluster": "ID"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cluster", type=int, metavar="ID", help="The id of the cluster to split.")
    parser.add_argument(
        "--parts", type=positive_int, default=2, metavar="N", help="The clusters it becomes (default 2)."
    )
    parser.add_argument("--seed", type=int, default=0, help="Seed of the k-means split.")
    add_edit_args(parser)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Split cluster ``ID`` of ``--model`` into ``--parts`` clusters."""
    clusterer, _, where = run_edit(args, "split", cluster=args.cluster, num_clusters=args.parts, random_state=args.seed)
    new_ids = clusterer.run.edits[-1]["new_ids"]
    print(
        f"Split cluster {args.cluster} of {args.model} into clusters {', '.join(map(str, new_ids))}: "
        f"{clusterer.model.config.num_clusters} clusters now; {where}."
    )
    return 0
