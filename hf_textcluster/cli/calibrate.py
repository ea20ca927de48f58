"""``hf-textcluster calibrate``: calibrate a trained model's confidence and outlier distances on your texts."""

from __future__ import annotations

import argparse

from ..apps.projection import sample_indices
from ..representation import name_clusters
from ._args import add_model_input_args, add_save_back_args, positive_int, update_saved_model

HELP = "Calibrate a trained model's confidence and outlier distances on your texts (its training texts) and save it."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_saved_model_args(parser)


def add_saved_model_args(parser: argparse.ArgumentParser) -> None:
    """A trained model updated on ``--input`` and saved back: calibrate and recluster."""
    add_model_input_args(parser, "A trained model directory (saved back in place).")
    add_save_back_args(parser)
    parser.add_argument(
        "--calibration-sample",
        type=positive_int,
        default=10_000,
        metavar="N",
        help="Calibrate the confidence and outlier distances on a seeded sample of this many texts.",
    )
    parser.add_argument("--seed", type=int, default=0, help="Seed of the sample (and of k-means).")


def calibrate_model(model, texts: list[str], args: argparse.Namespace) -> None:
    model.calibrate(
        texts,
        sample_size=args.calibration_sample,
        random_state=args.seed,
        batch_size=args.batch_size,
        show_progress_bar=True,
    )


def rename_clusters(model, texts: list[str], args: argparse.Namespace) -> None:
    """Name the clusters of the partition the model now serves after their keywords on ``texts`` (``id2label``)."""
    name_clusters(model, texts, sample_size=args.calibration_sample, random_state=args.seed, batch_size=args.batch_size)


# Above this share of outliers (1% expected on the texts a model was calibrated on), the texts are not like those.
UNLIKE_CALIBRATION = 0.1


def warn_if_unlike_calibration(model, texts: list[str], args: argparse.Namespace, sample_size: int = 2000) -> None:
    """A calibrated model re-calibrated on texts its calibration finds mostly outliers: one warning line."""
    if not model.is_calibrated:
        return
    rows = sample_indices(len(texts), sample_size, args.seed)
    flagged = model.predict_with_confidence([texts[int(i)] for i in rows], batch_size=args.batch_size)["is_outlier"]
    if flagged.mean() > UNLIKE_CALIBRATION:
        from transformers.utils import logging

        logging.get_logger(__name__).warning(
            f"{100 * flagged.mean():.0f}% of the texts of {args.input} are outliers for the model's current "
            "calibration (about 1% of its training texts are): are they its training texts? Calibrate on those."
        )


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Calibrate a trained model's confidence and outlier distances on ``--input`` and save it (in place by default):
    a model trained without calibration gets it without retraining."""

    def update(model, texts):
        warn_if_unlike_calibration(model, texts, args)
        calibrate_model(model, texts, args)

    model, seconds, output_dir = update_saved_model(args, "calibrate", update)
    print(
        f"Calibrated {args.model} on {model.config.num_calibration_texts:,} texts of {args.input} in {seconds:.1f}s; "
        f"saved to {output_dir}. `predict` now gives each text a confidence, and --flag-outliers works."
    )
    return 0
