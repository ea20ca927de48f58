"""``hf-textcluster info``: the table of a trained model's clusters (id, name, size, keywords, representative texts,
mean confidence), from what the model saved at training time or recomputed from texts; optionally as a CSV file."""

import argparse
import os

from ..figures.clusters import shorten
from ..runs.clusterer import Clusterer
from ._args import (
    MODEL_HELP,
    add_encoding_args,
    add_output_args,
    check_output_file,
    encoding_on,
    read_texts,
    write_output,
)

# Keywords and characters of the first representative text shown per cluster on the terminal (the CSV has them all).
SHOWN_KEYWORDS = 6
SHOWN_TEXT_CHARS = 100


HELP = (
    "Show a trained model's clusters: id, name, size, keywords, representative texts and mean confidence "
    "(from the summary saved at training, or computed on --input); --output writes them as CSV."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help=MODEL_HELP)
    parser.add_argument(
        "--input",
        help="Texts to compute the table on: .txt (one per line), csv, jsonl or parquet (default: the summary of "
        "the training texts saved with the model).",
    )
    add_encoding_args(parser)
    add_output_args(
        parser,
        "Also write the table here as CSV (keywords comma-separated, representative texts one per line of their cell).",
    )


def run(args: argparse.Namespace, extra: list[str]) -> int:
    check_output_file(args)
    texts = read_texts(args.input, args.text_column)
    clusterer = Clusterer.load(args.model)
    model = clusterer.model
    try:
        with encoding_on(args) as device:
            model.to(device)
            table = clusterer.cluster_info(texts, batch_size=args.batch_size)
    except ValueError as err:
        if texts is None and "`texts` is required" in str(err):
            raise ValueError(
                f"--model {args.model} carries no summary of its clusters (training saves one; an edit made without "
                "texts drops it): pass its training texts with --input FILE."
            ) from None
        raise
    source = f"the {len(texts):,} texts of {args.input}" if texts is not None else "its training texts"
    print(f"{model.config.num_clusters} clusters of {args.model}, on {source}:")
    print(format_table(table))
    if args.output:
        write_output(args.output, lambda path: write_csv(table, path))
        print(f"Wrote the table to {args.output}.")
    return 0


def format_table(table) -> str:
    """The table for a terminal: one line per cluster (id, size, mean confidence, name), then its keywords and its
    most representative text, indented."""
    import pandas as pd

    lines = [f"{'cluster':>7}  {'size':>7}  {'confidence':>10}  name"]
    for row in table.itertuples(index=False):
        size = "-" if pd.isna(row.size) else f"{int(row.size):,}"
        confidence = "-" if pd.isna(row.mean_confidence) else f"{row.mean_confidence:.2f}"
        lines.append(f"{row.cluster:>7}  {size:>7}  {confidence:>10}  {row.name}")
        if row.keywords:
            lines.append(f"{'':>30}keywords: {', '.join(row.keywords[:SHOWN_KEYWORDS])}")
        if row.representative_texts:
            lines.append(f"{'':>30}e.g. {shorten(row.representative_texts[0], SHOWN_TEXT_CHARS)}")
    return "\n".join(lines)


def write_csv(table, path: str) -> None:
    """The table as CSV: keywords joined by ``", "``, representative texts by line breaks (one cell each)."""
    out = table.copy()
    out["keywords"] = out["keywords"].map(", ".join)
    out["representative_texts"] = out["representative_texts"].map("\n".join)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    out.to_csv(path, index=False)
