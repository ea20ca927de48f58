"""``hf-textcluster demo``: train a method briefly on a benchmark beside plain k-means."""

from __future__ import annotations

import argparse

from ..apps.demo import DEMO_DATASET, run_demo
from ..models import METHODS
from ._args import add_data_args

HELP = f"Train a method briefly on {DEMO_DATASET} beside plain k-means (minutes)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--method", default="sccl", choices=sorted(METHODS), help="The method to train.")
    parser.add_argument(
        "--output-dir",
        help="Where the trained model goes (default: runs/demo-<method>-<dataset>, replaced by each demo).",
    )
    parser.add_argument("--overwrite", action="store_true", help="Replace a trained model already in --output-dir.")
    parser.add_argument("--max-steps", type=int, default=None, help="Training steps (default: the demo's).")
    parser.add_argument(
        "--num-texts", type=int, default=None, help="Texts sampled from the corpus (default: the demo's)."
    )
    add_data_args(parser)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    return run_demo(
        method=args.method,
        data_dir=args.data_dir,
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        num_texts=args.num_texts,
        overwrite=args.overwrite,
    )
