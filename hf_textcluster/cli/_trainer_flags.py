"""``train``'s Trainer options: the ``ClusteringTrainingArguments`` fields a user reaches for first, listed in
``train --help`` with their defaults; they go to the Trainer as pass-through flags, as does any other
``TrainingArguments`` field (``--save-steps 100``; dashes or underscores).
"""

from __future__ import annotations

import argparse
import dataclasses

from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..modeling.validation import describe
from ..training.arguments import GPU_ENCODE_BATCH_SIZE, ClusteringTrainingArguments

# In `train --help` order; the recipe sets the schedule, so those defaults are the recipe's.
LISTED = (
    "max_steps",
    "num_train_epochs",
    "per_device_train_batch_size",
    "learning_rate",
    "head_learning_rate",
    "serve",
    "kmeans_init",
    "early_stopping_tol",
    "frozen_layers",
    "calibration_sample_size",
    "encode_batch_size",
)
# Listed fields whose option has the name the other commands give the same thing (not the field's own).
FLAG_NAMES = {"calibration_sample_size": "calibration-sample"}
# Fields that `train` sets through an option of its own: as pass-through flags they are refused, naming it.
SET_BY_OPTION = {
    "bf16": "--precision bf16",
    "fp16": "--precision fp16",
    **{name: f"--{flag}" for name, flag in FLAG_NAMES.items()},
}
FROM_RECIPE = {"max_steps", "num_train_epochs", "per_device_train_batch_size", "learning_rate", "head_learning_rate"}
PREFIX = "trainer__"
# Defaults the Trainer chooses at run time (None in the dataclass).
DOC_DEFAULTS = {
    "encode_batch_size": f"{DEFAULT_ENCODE_BATCH_SIZE} on a CPU, {GPU_ENCODE_BATCH_SIZE} on a GPU",
}
# Where the field's own help does not fit a command line that starts from a recipe.
HELP = {
    "head_learning_rate": "Learning rate of the heads and centroids (default: the recipe's; without one, 100 x "
    "learning_rate, as in SCCL).",
    "max_steps": "Training steps; overrides --num-train-epochs (default: the recipe's schedule; cpu: 10 epochs of the "
    "training texts within 30 to 300 steps).",
}


def _help(field: dataclasses.Field) -> str:
    if field.name in HELP:
        return HELP[field.name]
    text = " ".join(str(field.metadata.get("help", "")).split()).replace("%", "%%")
    if field.name in ClusteringTrainingArguments._parameter_constraints:  # what the Trainer's table allows
        text += f" Must be {describe(ClusteringTrainingArguments._parameter_constraints[field.name], none=False)}."
    if field.name in FROM_RECIPE:
        return f"{text} (default: the recipe's)".strip()
    if "default" in text.lower():
        return text
    return f"{text} (default: {field.default})".strip()


def add_trainer_flags(parser: argparse.ArgumentParser) -> None:
    """The listed Trainer options as a group of ``parser`` (each parsed as text, typed by ``HfArgumentParser``).

    Args:
        parser: the ``train`` parser.

    Example:
        >>> add_trainer_flags(train_parser)  # doctest: +SKIP
    """
    fields = {f.name: f for f in dataclasses.fields(ClusteringTrainingArguments)}
    group = parser.add_argument_group(
        "Trainer options",
        "Passed to ClusteringTrainingArguments (a transformers TrainingArguments); any other of its fields passes "
        "through the same way, e.g. --save-steps 100 or --logging-steps 10 (its precision fields are set by "
        "--precision).",
    )
    for name in LISTED:
        flag = FLAG_NAMES.get(name, name.replace("_", "-"))
        action = group.add_argument(
            f"--{flag}",
            dest=PREFIX + name,
            default=argparse.SUPPRESS,  # not given: the recipe's or the Trainer's own value
            help=_help(fields[name]),
            metavar=flag.upper().replace("-", "_") if name in FLAG_NAMES else name.upper(),
        )
        # the default the reference page shows (docs/cli.md)
        default = fields[name].default
        action.doc_default = (
            "the recipe's"
            if name in FROM_RECIPE
            else DOC_DEFAULTS.get(name, "–" if default is None else f"`{default}`")
        )


def trainer_flags(args: argparse.Namespace) -> list[str]:
    """The listed Trainer options given on the command line, as pass-through flags (``["--max_steps", "10"]``)."""
    return [
        token
        for key, value in vars(args).items()
        if key.startswith(PREFIX)
        for token in (f"--{key[len(PREFIX) :]}", str(value))
    ]


def check_pass_through(extra: list[str]) -> None:
    """A pass-through flag that ``train`` sets through an option of its own (``--bf16``: ``--precision bf16``) is
    refused in one line naming that option: each setting has one name."""
    for arg in extra:
        name = arg.lstrip("-").split("=", 1)[0].replace("-", "_") if arg.startswith("--") else None
        if name in SET_BY_OPTION:
            raise ValueError(f"{arg.split('=', 1)[0]} is not an option of train: pass {SET_BY_OPTION[name]}.")


def normalize_spelling(argv: list[str]) -> list[str]:
    """``--max_steps 10`` -> ``--max-steps 10``: every option is spelled with dashes, the old underscore spellings
    (Trainer flags as transformers writes them) are still accepted. Values are left alone."""
    return [
        arg.split("=", 1)[0].replace("_", "-") + ("=" + arg.split("=", 1)[1] if "=" in arg else "")
        if arg.startswith("--")
        else arg
        for arg in argv
    ]
