"""``hf-textcluster refine``: serve the best of a trained model's partitions, refined by iterative classification."""

import argparse

from ..modeling.input_checks import CANDIDATES, SERVE_CHOICES
from ._args import run_edit
from .calibrate import add_calibration_args, calibration_kwargs

HELP = (
    "Refine a trained model's partitions of its training texts by iterative classification, choose without labels "
    "which partition it serves, calibrate and name it; in place unless --output-dir."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_calibration_args(parser)
    parser.add_argument(
        "--serve",
        default="auto",
        metavar="NAME",
        help="auto (default): the label-free choice among the head, k-means and UMAP k-means on the "
        f"model's embeddings, each refined or not; or one of them by name ({', '.join(CANDIDATES)}); or a candidate "
        "a `train --method auto` run kept (its training_run.json lists them; --input: its training texts).",
    )
    parser.add_argument(
        "--candidates",
        nargs="+",
        default=list(CANDIDATES),
        choices=CANDIDATES,
        metavar="NAME",
        help=f"What --serve auto chooses among (default: all of {', '.join(CANDIDATES)}).",
    )


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Choose and serve a partition (see :func:`~hf_textcluster.choosing.serving.serve_partition`), calibrate the
    model on it and save it."""
    _, choice, where = run_edit(
        args, "refine", serve=args.serve, candidates=args.candidates, **calibration_kwargs(args)
    )
    scores = ", ".join(f"{name} {value:.3f}" for name, value in choice.scores.items())
    print(
        f"{args.model} now serves its {choice.served} partition"
        + (f" (chosen by {choice.criterion}: {scores})" if choice.criterion else "")
        + f"; calibrated, {where}."
    )
    if args.serve not in SERVE_CHOICES:  # a kept candidate: the served model's embeddings serve it
        share = 100 * (1 - choice.serving.changed)
        print(f"  served by a linear head fitted to it on this model's embeddings ({share:.1f}% of its texts kept)")
    for name, record in choice.refinement.items():
        state = (
            f"declined ({record['reason']})"
            if record["declined"]
            else f"{record['rounds']} rounds, {100 * record['changed']:.1f}% of texts moved"
        )
        print(f"  {name}: {state}")
    return 0
