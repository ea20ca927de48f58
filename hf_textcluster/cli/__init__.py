"""The hf-textcluster command line: one command per task, each with its own --help.

Every command that reads a benchmark takes ``--data-dir`` (default: ``$HF_TEXTCLUSTER_DATA_DIR``, else the corpora's
public download URLs). Options are spelled with dashes only (``--output-dir``; ``--output_dir`` is refused, naming
the dashed one). ``train`` passes any ``TrainingArguments`` flag through (``--max-steps 100``,
``--per-device-train-batch-size 32``, ...), except the few it names itself (``--precision`` for ``bf16`` / ``fp16``,
``--calibration-sample``).

One module per command: each defines ``HELP`` (its line in ``hf-textcluster --help``), ``add_arguments(parser)`` and
``run(args, extra) -> int`` (its exit status), and may define ``SPELLED`` (a library argument its errors name -> the
option that sets it, where the names differ); a new command is a new module and its name in ``COMMANDS`` (the command
is the module's name with dashes: ``reduce_outliers.py`` is ``reduce-outliers``).
"""

import argparse
import importlib
import os
import re
import sys

from ..modeling.serialization import FolderBusyError, FolderWriteError
from ..modeling.validation import check_local_path
from ..runs.record import EditAlreadyApplied
from ._args import CommandParser, HelpFormatter, WriteError

# One module per command, in the order of `hf-textcluster --help`.
_ORDER = (
    "train predict info calibrate recluster refine name rename merge reduce reduce_outliers split update restore plot "
    "report evaluate demo push card"
)
COMMANDS = tuple(importlib.import_module(f"{__name__}.{name}") for name in _ORDER.split())


def build_parser() -> argparse.ArgumentParser:
    names = [name.replace("_", "-") for name in _ORDER.split()]
    parser = CommandParser(
        prog="hf-textcluster",
        description=f"Train a text clusterer and use it: {', '.join(names[:-1])} and {names[-1]}. "
        "`hf-textcluster COMMAND --help` says what each takes.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--debug", action="store_true", help="Show the full traceback of an error.")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name, command in zip(names, COMMANDS):
        command_parser = subparsers.add_parser(name, help=command.HELP, formatter_class=HelpFormatter)
        command.add_arguments(command_parser)
        flags = frozenset(flag for action in command_parser._actions for flag in action.option_strings)
        spelled = getattr(command, "SPELLED", {})
        command_parser.set_defaults(func=command.run, flags=flags, spelled=spelled)
    return parser


# What the library's messages call a Python argument, as the command line spells it.
_PYTHON_TO_FLAG = (
    ("Pass text_column= one of them", "Pass --text-column one of them"),
    ("Pass label_column= one of them", "Pass --label-column one of them"),
    ("Pass text_column= (--text-column)", "Pass --text-column"),
    ("`calibration_sample_size`", "--calibration-sample"),
    ("`flag_outliers=True`", "--flag-outliers"),  # the pipeline's options, as predict spells them
    ("overwrite=True (--overwrite)", "--overwrite"),
)


def cli_spelling(message: str, flags: frozenset = frozenset(), spelled: dict | None = None) -> str:
    """A library error as the command line says it: ``--text-column``, not ``text_column=``; an argument in
    backquotes (```seed```) as the command's option of that name (``flags``) or the one ``spelled`` maps it to,
    unless the message names it already."""
    for python, flag in _PYTHON_TO_FLAG:
        message = message.replace(python, flag)

    def spell(match: re.Match) -> str:
        flag = "--" + match[1].replace("_", "-")
        return (spelled or {}).get(match[1]) or (flag if flag in flags else match[0])

    return re.sub(r"`([a-z][a-z0-9_]*)`(?! \(--)", spell, message)


def parse_command_line(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    """``(args, extra)`` of a command line (``sys.argv[1:]`` by default); ``extra``: ``train``'s pass-through
    TrainingArguments flags. A bad command line, or an option spelled with underscores, exits (status 2) with
    argparse's one-line error."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    for arg in argv:
        name = arg.partition("=")[0]
        if name.startswith("--") and "_" in name:  # one spelling per option: the dashed one
            parser.error(f"unrecognized option {name}: options are spelled with dashes, e.g. {name.replace('_', '-')}")
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "train":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args, extra


# What a wrong command line, input or setup raises: its message in one line, exit status 2.
USAGE_ERRORS = (ValueError, TypeError, FileNotFoundError, FileExistsError, ImportError, FloatingPointError)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args, extra = parse_command_line(argv)
    try:
        if getattr(args, "model", None):  # a misspelt local --model folder: one line naming it, before any work
            check_local_path(args.model, "--model")
        return args.func(args, extra)
    except EditAlreadyApplied as err:  # a command run again after it was interrupted: done already
        print(err, file=sys.stderr)
        return 0
    except KeyboardInterrupt as err:
        print(f"interrupted{': ' + str(err) if str(err) else ''}", file=sys.stderr)
        return 130
    except Exception as err:
        if args.debug:
            raise
        if isinstance(err, USAGE_ERRORS):
            print(f"error: {cli_spelling(str(err), args.flags, args.spelled)}", file=sys.stderr)
            return 2
        if isinstance(err, (WriteError, FolderBusyError, FolderWriteError)):  # the file or folder and why, one line
            print(f"error: {err}", file=sys.stderr)
            return 1
        # anything else (disk full, a corrupted file, no CUDA): one line, not a traceback
        print(f"error: {type(err).__name__}: {err} (run with --debug for the traceback)", file=sys.stderr)
        return 1
