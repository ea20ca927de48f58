"""One name, one meaning: every option of every command, walked from the parsers ``hf_textcluster.cli`` builds. An
option several commands take has the same dest, type, choices, default and help wording in each, unless a difference
is declared below with its reason; and the names retired for clearer ones do not come back."""

from __future__ import annotations

import argparse
import dataclasses
import re

import pytest

from hf_textcluster.cli import build_parser
from hf_textcluster.cli.train import PREFIX
from hf_textcluster.training.arguments import ClusteringTrainingArguments

# What an option may vary from one command to another, and why. Anything not declared here is the same everywhere.
MAY_DIFFER = {
    "--batch-size": {"default": "train encodes on its training device: 1024 texts at a time on a GPU"},
    "--calibration-sample": {"help": "train's runs at the end of training, on its training texts; 0 skips it"},
    "--kmeans-init": {"help": "train's starts the initial clusters, recluster's those of a trained model"},
    "--serve": {"help": "train's names a candidate of its own run, refine's switches a trained model"},
    "--precision": {"choices": "predict's inference also runs in int8", "help": "training or inference precision"},
    "--num-clusters": {
        "type": "train and evaluate take K or 'auto'; reduce and split a count of the clusters an edit leaves",
        "default": "split's splits a cluster in two by default",
        "help": "K of a training, of a baseline, or what an edit leaves",
    },
    "--model": {"help": "says what the command does with the model: reads it, saves it back, keeps it unchanged"},
    "--input": {"help": "says which texts the command reads, and what it reads without them"},
    "--label-column": {"help": "says what the command does with the labels (they are never trained on)"},
    "--output": {"default": "each command writes its own kind of file", "help": "says what the file holds"},
    "--output-dir": {"help": "says what goes in the folder"},
    "--overwrite": {"help": "says what --output / --output-dir would replace"},
    "--repo-id": {"help": "push's is the target, card's only appears in the card's snippets"},
    "--seed": {"help": "says what it seeds"},
}
# Names retired for the clearer one each meaning has (every command, or one command).
RETIRED = {
    "--n": "--num-clusters",
    "--encode-batch-size": "--batch-size",
    "--sample-size": "--map-sample / --calibration-sample",
    "--bf16": "--precision",
}
RETIRED_IN = {("evaluate", "--method"): "--baseline (a baseline is not a training method)"}
_SAID_DEFAULT = re.compile(r"\s*\(default:[^()]*(\([^()]*\)[^()]*)*\)")
_TRAINER_FIELDS = {field.name: field for field in dataclasses.fields(ClusteringTrainingArguments)}


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _options() -> dict[str, dict[str, argparse.Action]]:
    """option -> {command -> its action}, for every option of every command."""
    options: dict[str, dict[str, argparse.Action]] = {}
    for command, parser in _commands().items():
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    options.setdefault(option, {})[command] = action
    return options


def _meaning(action: argparse.Action) -> dict:
    """What a user sees of an option: its dest, type, choices, default, arity, kind and help (the "(default: ...)" the
    help says is compared as the default). train's Trainer options are parsed by ClusteringTrainingArguments (the
    field's own type and checks): their default is the field's, and their dest, type and choices are not compared."""
    help_text = _SAID_DEFAULT.sub("", " ".join((action.help or "").split()))
    meaning = {
        "dest": action.dest,
        "type": getattr(action.type, "__name__", action.type),
        "choices": tuple(action.choices) if action.choices else None,
        "default": action.default,
        "nargs": action.nargs,
        "kind": type(action).__name__,
        "help": help_text,
    }
    if action.dest.startswith(PREFIX):
        field = _TRAINER_FIELDS[action.dest.removeprefix(PREFIX)]
        meaning.update(default=field.default)
        for attribute in ("dest", "type", "choices"):
            del meaning[attribute]
    return meaning


OPTIONS = _options()
SHARED = sorted(option for option, where in OPTIONS.items() if len(where) > 1)


def test_the_walk_finds_every_command_and_option():
    assert len(_commands()) >= 18 and sum(len(where) for where in OPTIONS.values()) >= 150
    assert {"--batch-size", "--num-clusters", "--output", "--overwrite"} <= set(SHARED)


@pytest.mark.parametrize("option", SHARED)
def test_an_option_means_the_same_in_every_command(option):
    meanings = {command: _meaning(action) for command, action in OPTIONS[option].items()}
    declared = MAY_DIFFER.get(option, {})
    for attribute in ("dest", "type", "choices", "default", "nargs", "kind", "help"):
        values = {command: meaning[attribute] for command, meaning in meanings.items() if attribute in meaning}
        same = len({repr(value) for value in values.values()}) == 1
        if attribute in declared:
            assert not same, f"{option}: its {attribute} no longer differs; drop it from MAY_DIFFER"
        else:
            assert same, f"{option}: its {attribute} differs between commands: {values}"


def test_every_declared_difference_is_of_a_shared_option():
    assert set(MAY_DIFFER) <= set(SHARED)


def test_retired_names_do_not_exist():
    for option, replacement in RETIRED.items():
        assert option not in OPTIONS, f"{option} is taken by {sorted(OPTIONS[option])}: its name is {replacement}"
    for (command, option), replacement in RETIRED_IN.items():
        assert command not in OPTIONS.get(option, {}), f"{command} {option}: its name is {replacement}"


def test_a_count_of_clusters_is_num_clusters():
    """Every option whose help says it is a number of clusters is --num-clusters (--cluster names one cluster)."""
    for option, where in OPTIONS.items():
        for command, action in where.items():
            text = (action.help or "").lower()
            if re.match(r"(into )?how many clusters|k\b|k of", text):
                assert option == "--num-clusters", f"{command} {option}: a count of clusters is --num-clusters"
