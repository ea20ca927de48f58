"""``hf-textcluster demo``: the default of ``train`` on the StackOverflow sample shipped in the package, beside the
BERTopic way and k-means."""

import argparse

from ..apps.demo import DEMO_OUTPUT_DIR, run_demo
from ._args import positive_int

HELP = (
    "Train the default on 2,000 StackOverflow titles shipped in the package, beside the BERTopic way (a minute or two)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output-dir", help=f"Where the trained model goes (default: {DEMO_OUTPUT_DIR}, replaced by each demo)."
    )
    parser.add_argument("--overwrite", action="store_true", help="Replace a trained model already in --output-dir.")
    parser.add_argument(
        "--train-sample",
        type=positive_int,
        metavar="N",
        help="Cluster a seeded sample of this many of the 2,000 texts (default: all of them).",
    )


def run(args: argparse.Namespace, extra: list[str]) -> int:
    return run_demo(output_dir=args.output_dir, num_texts=args.train_sample, overwrite=args.overwrite)
