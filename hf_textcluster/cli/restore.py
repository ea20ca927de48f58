"""``hf-textcluster restore``: go back to a model's state before the last command changed it in place."""

import argparse

from ..runs.saving import PREVIOUS_FOLDER, restore_previous

HELP = (
    f"Go back to a trained model's state before the last command changed it (kept in its {PREVIOUS_FOLDER}/ "
    "folder); run it again to undo the restore."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="A trained model directory changed in place by a command.")


def run(args: argparse.Namespace, extra: list[str]) -> int:
    restore_previous(args.model)
    print(
        f"Restored {args.model} to its previous state; the state it replaced is kept in "
        f"{args.model}/{PREVIOUS_FOLDER} (run restore again to go back to it)."
    )
    return 0
