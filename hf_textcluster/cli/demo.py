"""``hf-textcluster demo``: the default of ``train`` on the StackOverflow sample shipped in the package, beside the
BERTopic way and k-means."""

import argparse

from ..apps.demo import DEMO_OUTPUT_DIR, run_demo

HELP = (
    "Train the default on 2,000 StackOverflow titles shipped in the package, beside the BERTopic way (a minute or two)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output-dir", help=f"Where the trained model goes (default: {DEMO_OUTPUT_DIR}, replaced by each demo)."
    )
    parser.add_argument("--overwrite", action="store_true", help="Replace a trained model already in --output-dir.")
    parser.add_argument("--num-texts", type=int, help="Texts of the sample clustered (default: all 2,000).")


def run(args: argparse.Namespace, extra: list[str]) -> int:
    return run_demo(output_dir=args.output_dir, num_texts=args.num_texts, overwrite=args.overwrite)
