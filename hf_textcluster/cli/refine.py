"""``hf-textcluster refine``: serve the best of a trained model's partitions, refined by iterative classification."""

from __future__ import annotations

import argparse

from ..choosing.serving import serve_partition
from ..modeling.input_checks import CANDIDATES, SERVE_CHOICES, check_num_clusters
from ..runs.candidate_file import check_kept_candidate, keep_candidates, serve_kept_candidate
from ..runs.folder import RunFolder
from ._args import update_saved_model
from .calibrate import add_saved_model_args, calibrate_model, rename_clusters, warn_if_unlike_calibration

HELP = (
    "Refine a trained model's partitions of your texts (its training texts) by iterative "
    "classification, choose without labels which partition it serves, calibrate and save it."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_saved_model_args(parser)
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
    """Choose and serve a partition of ``--input`` (see :func:`~hf_textcluster.choosing.serving.serve_partition`),
    calibrate the model on it and save it (in place unless ``--output-dir``)."""
    choices = {}

    kept = args.serve not in SERVE_CHOICES  # a candidate a `train --method auto` run kept beside the model
    if kept:
        check_kept_candidate(args.model, args.serve)  # before any model or text is loaded

    def update(model, texts):
        try:  # the texts train refuses (fewer distinct texts than clusters) cannot be partitioned either
            check_num_clusters(model.config.num_clusters, len(texts), texts=texts)
        except ValueError as err:
            raise ValueError(f"--input {args.input}: {err}") from None
        warn_if_unlike_calibration(model, texts, args)
        embeddings = model.embed(texts, batch_size=args.batch_size, show_progress_bar=True)
        if kept:
            choices["choice"] = serve_kept_candidate(
                model, args.model, texts, args.serve, embeddings=embeddings, random_state=args.seed
            )
        else:
            choices["choice"] = serve_partition(
                model, embeddings, serve=args.serve, candidates=args.candidates, random_state=args.seed
            )
        calibrate_model(model, texts, args)
        rename_clusters(model, texts, args)
        choices["texts"] = texts

    def write_files(folder):  # saved with the model: its training_run.json (what the card reads) and candidates
        run = RunFolder(args.model).read_training_run() or {}
        run["serving"] = choices["choice"].to_dict()
        RunFolder(folder).write_training_run(run)
        keep_candidates(args.model, folder, choices["texts"], choices["choice"].labels)

    model, seconds, output_dir = update_saved_model(args, "refine", update, write_files)
    choice = choices["choice"]
    scores = ", ".join(f"{name} {value:.3f}" for name, value in choice.scores.items())
    print(
        f"{args.model} now serves its {choice.served} partition of the {args.input} texts"
        + (f" (chosen by {choice.criterion}: {scores})" if choice.criterion else "")
        + f"; calibrated and saved to {output_dir} in {seconds:.1f}s."
    )
    for name, record in choice.refinement.items():
        state = (
            f"declined ({record['reason']})"
            if record["declined"]
            else f"{record['rounds']} rounds, {100 * record['changed']:.1f}% of texts moved"
        )
        print(f"  {name}: {state}")
    return 0
