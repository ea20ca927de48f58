"""``hf-textcluster card``: write the model card of a trained directory (no upload)."""

from __future__ import annotations

import argparse
import sys

from ..hub.model_card import write_model_card
from ._args import add_card_args, card_kwargs


def add_parser(subparsers) -> argparse.ArgumentParser:
    card = subparsers.add_parser("card", help="Write the model card of a trained directory (no upload).")
    card.add_argument("model_dir")
    card.add_argument("--output", help="Write here (e.g. docs/example_model_card.md) instead of stdout.")
    card.add_argument("--repo-id", help="Hub id used in the card's usage snippets.")
    add_card_args(card)
    card.set_defaults(func=run)
    return card


def run(args: argparse.Namespace, extra: list[str]) -> int:
    card = write_model_card(
        args.model_dir,
        args.output or "-",
        data_dir=args.data_dir,
        max_texts=args.max_texts,
        repo_id=args.repo_id,
        remote_code=not args.no_remote_code,
        **card_kwargs(args),
    )
    if not args.output:
        sys.stdout.write(card)
    return 0
