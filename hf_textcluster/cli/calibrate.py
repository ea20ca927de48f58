"""``hf-textcluster calibrate``: calibrate a trained model's confidence and outlier distances on your texts."""

from __future__ import annotations

import argparse
import json
import os
import time

from ..data import load_text_file
from ..hub.model_card import load_clusterer
from ..modeling.validation import check_local_path
from ._args import add_model_input_args, positive_int


def add_parser(subparsers) -> argparse.ArgumentParser:
    calibrate = subparsers.add_parser("calibrate", help="Calibrate a trained model's confidence and outlier distances "
                                                        "on your texts (its training texts) and save it.")
    add_saved_model_args(calibrate)
    calibrate.set_defaults(func=run)
    return calibrate


def add_saved_model_args(parser: argparse.ArgumentParser) -> None:
    """A trained model updated on ``--input`` and saved back: calibrate and recluster."""
    add_model_input_args(parser, "A trained model directory (saved back in place).")
    parser.add_argument("--output-dir", help="Save the model here instead of over --model.")
    parser.add_argument("--sample-size", type=positive_int, default=10_000,
                        help="Calibrate on a seeded sample of this many texts (default 10000).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the sample (and of k-means).")


def update_saved_model(args: argparse.Namespace, command: str, update) -> tuple:
    """Load ``--model``, ``update(model, texts)`` with the texts of ``--input``, save it (in place unless
    ``--output-dir``; nothing on disk changes before the update has finished): (model, seconds, output folder)."""
    check_local_path(args.model, "--model")
    output_dir = args.output_dir or args.model
    if not os.path.isdir(args.model) and not args.output_dir:
        raise ValueError(f"--model {args.model} is not a local folder: {command} saves the model back, so pass "
                         "--output-dir <folder> for a Hub model.")
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise ValueError(f"--output-dir {output_dir} is a file, not a folder.")
    texts = list(load_text_file(args.input, text_column=args.text_column)["text"])
    model = load_clusterer(args.model)
    start = time.perf_counter()
    update(model, texts)
    seconds = time.perf_counter() - start
    # A folder that ships remote code keeps it: its config.json's auto_map would otherwise be dropped on saving.
    config_file = os.path.join(args.model, "config.json")
    remote_code = None
    if os.path.isfile(config_file):
        with open(config_file, encoding="utf-8") as f:
            remote_code = "auto_map" in json.load(f) or None
    model.save_pretrained(output_dir, remote_code=remote_code)
    return model, seconds, output_dir


def calibrate_model(model, texts: list[str], args: argparse.Namespace) -> None:
    model.calibrate(texts, sample_size=args.sample_size, random_state=args.seed, batch_size=args.batch_size,
                    show_progress_bar=True)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Calibrate a trained model's confidence and outlier distances on ``--input`` and save it (in place by default):
    models trained before calibration existed get it without retraining."""
    model, seconds, output_dir = update_saved_model(args, "calibrate",
                                                    lambda m, texts: calibrate_model(m, texts, args))
    print(f"Calibrated {args.model} on {model.config.num_calibration_texts:,} texts of {args.input} in {seconds:.1f}s; "
          f"saved to {output_dir}. `predict` now gives each text a confidence, and --flag-outliers works.")
    return 0
