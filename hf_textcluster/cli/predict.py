"""``hf-textcluster predict``: cluster a file of texts with a trained model (JSON lines out)."""

import argparse
import sys

from transformers import pipeline

from ..apps.streaming import check_output, predict_file
from ..data.text_files import DEFAULT_CHUNK_SIZE, text_chunks
from ..distributed import leave_together, run_with_processes, running_processes
from ..runs.folder import load_clusterer
from ._args import add_model_input_args, positive_int, quantile, resolve_device

HELP = "Cluster texts with a trained model (JSON lines out)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_input_args(parser, inference=True)
    parser.add_argument("--output", help="Write JSON lines here instead of stdout.")
    parser.add_argument(
        "--top-clusters",
        type=positive_int,
        metavar="N",
        help="Also give the N most likely clusters of each text (cluster, label, score; most likely first) under "
        '"top_k"; the rest of the line is as without --top-clusters (cluster, label, score, confidence).',
    )
    parser.add_argument(
        "--chunk-size",
        type=positive_int,
        default=DEFAULT_CHUNK_SIZE,
        help="Texts read, clustered and written at a time (memory holds one chunk). Under `accelerate launch` each "
        "process uses its own device instead of --device, encodes its share of each chunk, and the main process "
        "writes the output in input order.",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="Replace an existing --output (by default a half-written one is resumed, a finished one is kept).",
    )
    flag = parser.add_argument(
        "--flag-outliers",
        action=argparse.BooleanOptionalAction,
        help="Give a text farther from its cluster's centre than --outlier-quantile of that cluster's "
        "training texts cluster -1 ('outlier') and its nearest cluster (a calibrated model). Default: on for a model "
        "trained with --outliers, else off; --no-flag-outliers turns it off.",
    )
    flag.doc_default = "the model's: on after train --outliers"
    parser.add_argument(
        "--outlier-quantile",
        type=quantile,
        metavar="Q",
        help="With --flag-outliers: a text farther from its cluster's centre than this quantile of that cluster's "
        "calibrated distances is an outlier, so about 1 - Q of the calibration texts are (default 0.99; not "
        "update's --far-quantile).",
    )


def run(args: argparse.Namespace, extra: list[str]) -> int:
    device = resolve_device(args.device)
    # an option left at its default is not passed: it is no part of the options a half-written --output resumes with
    options = {
        "batch_size": args.batch_size,
        "top_k": args.top_clusters,
        "flag_outliers": args.flag_outliers,
        "outlier_quantile": args.outlier_quantile,
        "precision": None if args.precision == "auto" else args.precision,
    }
    if args.output:
        check_output(args.input, args.output, args.overwrite)
    text_chunks(args.input, args.text_column, args.chunk_size)  # a file it cannot open fails before the model loads
    model = load_clusterer(args.model)  # loaded here: its errors are one clear line, not the pipeline's
    processes = running_processes()  # several under `accelerate launch`: each encodes a share, the main one writes
    device = device if processes is None else processes.device
    clusterer = pipeline("text-clustering", model=model, tokenizer=model.tokenizer, device=device)
    stats = run_with_processes(
        clusterer,
        lambda shared: predict_file(
            shared,
            args.input,
            args.output,
            text_column=args.text_column,
            chunk_size=args.chunk_size,
            overwrite=args.overwrite,
            **{key: value for key, value in options.items() if value is not None},
        ),
        processes,
    )
    if processes is not None:
        leave_together(processes)
    if stats is not None and args.output:  # None: a process that helped the main one
        print(
            f"{stats['texts']:,} texts -> {args.output} ({stats['texts_per_second']} texts/s"
            f"{', resumed after %s' % format(stats['resumed_after'], ',') if stats['resumed_after'] else ''}).",
            file=sys.stderr,
        )
    return 0
