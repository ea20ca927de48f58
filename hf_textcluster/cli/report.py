"""``hf-textcluster report``: one self-contained HTML page of a trained model's clusters on your texts (needs the
report extra): a 2-D map, each cluster's keywords, size and typical members, confidence, outliers and, with
``--label-column``, the confusion against the known classes."""

from __future__ import annotations

import argparse
import os

from ..apps.report import check_report_path, cluster_report
from ..data import load_text_file
from ..runs.folder import load_clusterer
from ._args import add_map_args, add_model_input_args, add_output_args, check_output_file

HELP = (
    "An HTML page of a trained model's clusters on your texts: map, "
    "keywords, typical members, confidence, outliers (report extra)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_input_args(parser, "A trained model directory or hub id.")
    parser.add_argument("--label-column", help="Known classes of --input: scores and the confusion against them.")
    add_output_args(parser, "The page to write (default: report.html).", default="report.html")
    add_map_args(parser)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    # everything that can be refused is refused before the model is loaded
    check_output_file(args)
    check_report_path(args.output)
    dataset = load_text_file(args.input, text_column=args.text_column, label_column=args.label_column)
    texts = list(dataset["text"])
    labels = label_names = None
    if args.label_column:
        labels = list(dataset["label"])
        label_names = dataset.features["label"].names
    model = load_clusterer(args.model)
    title = f"{os.path.basename(os.path.normpath(args.model))} on {os.path.basename(args.input)}"
    path = cluster_report(
        model,
        texts,
        labels,
        args.output,
        label_names=label_names,
        sample_size=args.map_sample,
        map_method=args.projection,
        batch_size=args.batch_size,
        random_state=args.seed,
        title=title,
    )
    print(
        f"Wrote {path}: {len(texts):,} texts in {model.config.num_clusters} clusters"
        f"{', scored against ' + repr(args.label_column) if args.label_column else ''}; open it in a browser."
    )
    return 0
