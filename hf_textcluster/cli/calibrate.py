"""``hf-textcluster calibrate``: calibrate a trained model's confidence and outlier distances on your texts."""

import argparse

from ._args import add_edit_args, positive_int, run_edit

HELP = (
    "Calibrate a trained model's confidence and outlier distances on its training texts; in place unless --output-dir."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_calibration_args(parser)


def add_calibration_args(parser: argparse.ArgumentParser) -> None:
    """A trained model changed on ``--input`` and calibrated there: calibrate, recluster and refine."""
    add_edit_args(parser)
    parser.add_argument(
        "--calibration-sample",
        type=positive_int,
        default=10_000,
        metavar="N",
        help="Calibrate the confidence and outlier distances on a seeded sample of this many texts.",
    )
    parser.add_argument("--seed", type=int, default=0, help="Seed of the sample (and of k-means).")


def calibration_kwargs(args: argparse.Namespace) -> dict:
    """``--calibration-sample`` and ``--seed`` as the Clusterer's keywords."""
    return {"sample_size": args.calibration_sample, "random_state": args.seed}


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Calibrate ``--model``'s confidence and outlier distances on ``--input`` (default: its training texts): a model
    saved uncalibrated, or calibrated on other texts, gets it without retraining."""
    clusterer, _, where = run_edit(args, "calibrate", **calibration_kwargs(args))
    texts = clusterer.model.config.num_calibration_texts
    print(
        f"Calibrated {args.model} on {texts:,} texts; {where}. `predict` now gives each text a confidence, and "
        "--flag-outliers works."
    )
    return 0
