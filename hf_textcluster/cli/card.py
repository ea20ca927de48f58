"""``hf-textcluster card``: write the model card of a trained directory (no upload)."""

import argparse
import sys
from pathlib import Path

from ..hub.model_card import write_model_card
from ._args import (
    add_card_args,
    add_output_args,
    add_text_column_arg,
    card_kwargs,
    check_output_file,
    encoding_on,
    read_texts,
    write_output,
)

HELP = "Write the model card of a trained directory (no upload)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_card_args(parser)
    add_output_args(parser, "Write the card here instead of stdout.")
    parser.add_argument("--repo-id", help="Hub id used in the card's usage snippets (default: your-org/your-model).")
    parser.add_argument(
        "--input",
        help="The training texts (.txt, csv, jsonl or parquet): each cluster's keywords and size are computed from "
        "them (default: the file or benchmark the run recorded, when it is still there).",
    )
    add_text_column_arg(parser)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    check_output_file(args)
    texts = read_texts(args.input, args.text_column)
    with encoding_on(args) as device:  # the keywords: each text's cluster
        card = write_model_card(
            args.model,
            "-",
            texts=texts,
            repo_id=args.repo_id,
            **card_kwargs(args, device),
        )
    if args.output:
        write_output(args.output, lambda path: Path(path).write_text(card, encoding="utf-8"))
    else:
        sys.stdout.write(card)
    return 0
