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
    "--num-clusters": {"help": "K of a training or of a baseline, each with its default"},
    "--model": {"help": "says what the command accepts (a folder, or a Hub id too) and does with the model"},
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


# One name per meaning: each meaning below has exactly one name, taken by exactly these commands; no other option of
# any command means it (a count of clusters, a cluster id, a sample of texts, ...). "ID": the positional cluster ids.
EDITS_WITH_TEXTS = {"calibrate", "recluster", "refine", "name", "merge", "reduce", "reduce-outliers", "split", "update"}
MEANINGS = {
    "K, the clusters a training or a baseline makes": ("--num-clusters", {"train", "evaluate"}),
    "the clusters a reduce leaves": ("--to", {"reduce"}),
    "the clusters one cluster is split into": ("--parts", {"split"}),
    "the clusters each text's line lists": ("--top-clusters", {"predict"}),
    "the clusters an edit acts on (positional ids)": ("ID", {"merge", "split", "rename"}),
    "a seeded sample of texts the confidence is calibrated on": (
        "--calibration-sample",
        {"train", "calibrate", "recluster", "refine"},
    ),
    "a seeded sample of texts the map draws": ("--map-sample", {"plot", "report"}),
    "a seeded sample of texts the card's keywords come from": ("--keyword-sample", {"card", "push"}),
    "a seeded sample of the demo's texts it clusters": ("--train-sample", {"demo"}),
    "texts read, clustered and written at a time (streaming)": ("--chunk-size", {"predict"}),
    "texts encoded at a time": ("--batch-size", {"train", "predict", "info", "plot", "report", *EDITS_WITH_TEXTS}),
}
# What the ids a command edits look like, as each positional spells them.
CLUSTER_ID_POSITIONALS = {"merge": "groups", "split": "cluster", "rename": "names"}
# A help that says an option is one of these meanings (a count of clusters, a sample of texts).
_COUNT_OF_CLUSTERS = re.compile(
    r"how many clusters|clusters (that )?remain|clusters it becomes|most likely clusters|^k\b"
)
_SAMPLE = re.compile(r"sampl")
# Commands that encode texts run the encoder where --device says, at the precision --precision says; train and demo
# train on the Trainer's device (--use-cpu, `accelerate launch`) and say their precision through train's options.
NO_ENCODING = {"rename": "names only", "restore": "copies folders back"}
TRAINER_DEVICE = {"train", "demo"}


def _meaning_uses() -> dict[str, set[str]]:
    """name -> the commands that take it, the positional cluster ids as "ID"."""
    uses = {option: set(where) for option, where in OPTIONS.items()}
    for command, parser in _commands().items():
        for action in parser._actions:
            if not action.option_strings and action.dest == CLUSTER_ID_POSITIONALS.get(command):
                uses.setdefault("ID", set()).add(command)
    return uses


def test_each_meaning_has_one_name_taken_by_the_commands_that_mean_it():
    uses = _meaning_uses()
    names = [name for name, _ in MEANINGS.values()]
    assert len(names) == len(set(names)), "two meanings share a name"
    for meaning, (name, commands) in MEANINGS.items():
        assert uses.get(name, set()) == commands, f"{name} ({meaning}): taken by {sorted(uses.get(name, ()))}"
    assert "--cluster" not in OPTIONS and "--clusters" not in OPTIONS, "cluster ids are positional"


def test_no_other_option_means_a_count_of_clusters_or_a_sample_of_texts():
    counts = {"--num-clusters", "--to", "--parts", "--top-clusters"}
    samples = {name for meaning, (name, _) in MEANINGS.items() if "a seeded sample" in meaning}
    for option, where in OPTIONS.items():
        for command, action in where.items():
            text = " ".join((action.help or "").lower().split())
            if _COUNT_OF_CLUSTERS.search(text) and not action.dest.startswith(PREFIX):
                assert option in counts, f"{command} {option} counts clusters: name it as MEANINGS does"
            if _SAMPLE.search(text) and action.type not in (None, str) and action.dest != "seed":
                assert option in samples, f"{command} {option} is a sample of texts: name it as MEANINGS does"


@pytest.mark.parametrize("command", ["train", "evaluate"])
@pytest.mark.parametrize(
    "value,says",
    [("1", "must be an integer >= 2 (one cluster groups nothing: pass 2 or more"), ("many", "must be a whole number")],
)
def test_num_clusters_is_refused_in_one_line_before_any_work(command, value, says, tmp_path, capsys):
    """K is parsed once, by the library's rule: one cluster (or no number) is refused while the command line is read,
    as `train_clusterer(num_clusters=1)` refuses it, not after the texts are read."""
    from hf_textcluster.cli import main

    missing = str(tmp_path / "not-written-yet.csv")  # were it read first, the error would be about this file
    where = ["--input", missing, "--output-dir", str(tmp_path / "run")] if command == "train" else ["--input", missing]
    with pytest.raises(SystemExit) as exited:
        main([command, *where, "--num-clusters", value])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1
    assert f"error: argument --num-clusters: `num_clusters` {says}" in err


def test_every_command_that_encodes_texts_takes_device_and_precision():
    for command in set(_commands()) - set(NO_ENCODING) - TRAINER_DEVICE:
        for option in ("--device", "--precision"):
            assert command in OPTIONS[option], f"{command} encodes texts but has no {option}"
    assert "--precision" in OPTIONS and "train" in OPTIONS["--precision"]
    assert not set(NO_ENCODING) & set(OPTIONS["--batch-size"]), "a command that encodes nothing takes --batch-size"


def test_a_flag_never_shows_a_default():
    """A store_false flag (--no-resume) is off unless given: "(default: True)" would say the opposite."""
    for command, parser in _commands().items():
        for action in parser._actions:
            if action.nargs == 0 and action.option_strings:
                shown = parser._get_formatter()._format_action(action)
                assert "(default: True)" not in shown and "(default: False)" not in shown, (command, shown)


def test_kmeans_init_offers_the_same_choices_everywhere():
    from hf_textcluster.editing.kmeans import KMEANS_INITS

    choices = {command: tuple(action.choices or ()) for command, action in OPTIONS["--kmeans-init"].items()}
    assert set(choices) == {"train", "recluster"}
    assert set(choices.values()) == {tuple(KMEANS_INITS)}, choices
    with pytest.raises(SystemExit):
        from hf_textcluster.cli import parse_command_line

        parse_command_line(["train", "--dataset", "tweet", "--output-dir", "x", "--kmeans-init", "kmeans"])


def test_evaluate_offers_the_bertopic_way_as_a_baseline():
    """README's comparison per corpus: UMAP -> k-means on the encoder's embeddings, the package's own k-means start."""
    from hf_textcluster.runs.baselines import make_baseline

    assert "umap-kmeans" in OPTIONS["--baseline"]["evaluate"].choices
    baseline = make_baseline("umap-kmeans", 4, encoder="e")
    assert (baseline.init, baseline.encoder) == ("umap", "e")
    assert make_baseline("embeddings-kmeans", "auto").init == "k-means++"


def test_model_help_says_what_each_command_accepts():
    """Commands that read a model load a Hub id too (the edits with --output-dir); card and push read its run folder."""
    for command, action in OPTIONS["--model"].items():
        text = " ".join(action.help.split())
        if command in ("card", "push", "restore"):
            assert "Hub id" not in text or "not accepted" in text, (command, text)
        else:
            assert "Hub id" in text, (command, text)
