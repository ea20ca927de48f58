"""``python -m training.docs {cli,cards,screenshot,all} [--check]``: write the generated parts of the docs."""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PARTS = ("cli", "cards", "screenshot")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m training.docs", description=__doc__.split("\n")[0])
    parser.add_argument("part", choices=[*PARTS, "all"], help="What to write ('all': every part).")
    parser.add_argument("--check", action="store_true", help="Write nothing; exit 1 when a part is stale.")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    stale = []
    for part in PARTS if args.part == "all" else (args.part,):
        if part == "cli":
            from .cli_reference import write
        elif part == "cards":
            from .example_cards import write
        else:
            from .screenshot import write
        stale += write(check=args.check)
    for path in stale:
        print(f"{'stale' if args.check else 'wrote'}: {path}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
