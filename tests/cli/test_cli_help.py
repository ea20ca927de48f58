"""``--help`` documents every option of every command with its default; one spelling (dashes) per option, an
underscore spelling refused naming it."""

from __future__ import annotations

import argparse

import pytest

from hf_textcluster.cli import COMMANDS, build_parser, parse_command_line


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_is_listed():
    assert set(_commands()) == {module.__name__.rsplit(".", 1)[1].replace("_", "-") for module in COMMANDS}


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_option_has_help_and_its_default_shows(name):
    command = _commands()[name]
    text = command.format_help()
    for action in command._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        label = action.option_strings[0] if action.option_strings else action.dest
        assert action.help, f"{name} {label} has no help"
        assert "_" not in "".join(action.option_strings), f"{name} {label}: options are spelled with dashes"
        if action.default not in (None, False, argparse.SUPPRESS) and action.nargs != 0:  # a flag is off unless given
            help_text = command._get_formatter()._format_action(action)
            assert "default" in help_text.lower(), f"{name} {label}: its default {action.default!r} is not shown"
    assert "%(" not in text


def test_train_help_lists_the_trainer_options_and_what_recipe_augmentation_does():
    text = " ".join(_commands()["train"].format_help().split()).replace("- ", "-")  # argparse wraps at hyphens
    for option in ("--serve", "--max-steps", "--kmeans-init", "--num-train-epochs", "--precision"):
        assert option in text
    assert "dropout-only views" in text and "(default: the recipe's)" in text and "--save-steps 100" in text


def test_train_runs_auto_unless_a_method_is_named():
    args, _ = parse_command_line(["train", "--input", "t.csv", "--num-clusters", "5", "--output-dir", "x"])
    assert args.method == "auto"
    assert parse_command_line(["train", "--method", "sccl", "--dataset", "d", "--output-dir", "x"])[0].method == "sccl"
    assert "auto (default)" in " ".join(_commands()["train"].format_help().split())


@pytest.mark.parametrize("option", ["--output_dir", "--max_steps", "--save_steps=3"])
def test_an_underscore_spelling_is_refused_naming_the_dashed_one(option, capsys):
    argv = ["train", "--method", "sccl", "--dataset", "stackoverflow", "--output-dir", "x", option, "3"]
    with pytest.raises(SystemExit) as exit_:
        parse_command_line(argv)
    err = capsys.readouterr().err
    dashed = option.split("=")[0].replace("_", "-")
    assert exit_.value.code == 2 and err.count("\n") == 1 and f"spelled with dashes, e.g. {dashed}" in err


def test_the_command_line_becomes_one_request(monkeypatch):
    """Each option lands in the request's field of that name; the Trainer's, listed or passed through, typed."""
    from hf_textcluster.cli.train import training_request

    monkeypatch.delenv("HF_TEXTCLUSTER_PRECISION", raising=False)
    argv = ["train", "--method", "sccl", "--dataset", "stackoverflow", "--output-dir", "runs/x", "--no-resume"]
    argv += ["--num-clusters", "auto", "--k-range", "3:9", "--config", "eta=5", "--max-steps", "7"]
    args, extra = parse_command_line([*argv, "--kmeans-init", "umap", "--save-steps", "3", "--precision", "fp32"])
    request = training_request(args, extra)
    assert (request.method, request.dataset, request.output_dir, request.resume) == (
        "sccl",
        "stackoverflow",
        "runs/x",
        False,
    )
    assert request.num_clusters.is_auto and request.num_clusters.k_range == (3, 9)
    assert request.config_overrides == {"eta": 5}
    assert request.training_overrides == {
        "max_steps": 7,
        "kmeans_init": "umap",
        "save_steps": 3,
        "bf16": False,
        "fp16": False,
    }


def test_the_top_level_help_names_every_command_in_plain_text():
    text = " ".join(build_parser().format_help().split())
    assert "``" not in text
    for module in COMMANDS:
        name = module.__name__.rsplit(".", 1)[1].replace("_", "-")
        assert f" {name}," in text or f" {name} " in text or f" {name}." in text, name


def test_one_name_per_setting():
    """The same option means the same thing in every command; different things have different names."""
    commands = _commands()
    options = {name: {o for a in p._actions for o in a.option_strings} for name, p in commands.items()}
    assert all("--sample-size" not in opts for opts in options.values())
    for name in ("calibrate", "recluster", "refine", "train"):
        assert "--calibration-sample" in options[name], name
    for name in ("plot", "report"):
        assert "--map-sample" in options[name], name
    assert "--outlier-quantile" in options["predict"] and "--outlier-quantile" not in options["update"]
    assert "--far-quantile" in options["update"]
    assert all("--bf16" not in opts for opts in options.values())
    for name in ("train", "predict"):
        assert "--precision" in options[name], name
    for name, parser in commands.items():
        positionals = [a.dest for a in parser._actions if not a.option_strings and a.dest != "help"]
        assert "model_dir" not in positionals and "repo_id" not in positionals, name
        if name not in ("demo", "evaluate"):
            assert "--model" in options[name] or name == "train", name
    # the same default for the same option
    kmeans_init = {
        name: next(a.default for a in p._actions if "--kmeans-init" in a.option_strings)
        for name, p in commands.items()
        if "--kmeans-init" in options[name]
    }
    from hf_textcluster.training.arguments import ClusteringTrainingArguments

    assert kmeans_init.pop("recluster") == ClusteringTrainingArguments.kmeans_init == "best"
    assert parse_command_line(["predict", "--model", "m", "--input", "t.txt"])[0].device == "auto"


def test_train_help_says_what_k_defaults_to():
    text = " ".join(_commands()["train"].format_help().split())
    assert "Default: 'auto', except with --label-column or a benchmark --dataset" in text


def test_a_missing_required_option_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse_command_line(["predict", "--input", "t.txt"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "hf-textcluster predict: error: the following arguments are required: --model (see hf-textcluster "
        "predict --help)"
    ]


def test_report_projection():
    base = ["report", "--model", "m", "--input", "t.txt"]
    assert parse_command_line([*base, "--projection", "pca"])[0].projection == "pca"
    with pytest.raises(SystemExit):
        parse_command_line([*base, "--projection", "mds"])


def test_recipe_views_on_own_texts_become_dropout_only_with_one_line():
    from transformers.testing_utils import CaptureLogger

    from hf_textcluster.data import load_texts
    from hf_textcluster.models import get_method
    from hf_textcluster.runs import train as runs

    with CaptureLogger(runs.logger) as captured:
        chosen = runs._resolve_augmentation(
            get_method("sccl"), {"augmentation": "sccl_contextual"}, load_texts(["a b", "c d"]), "recipe"
        )
    assert chosen == "virtual"
    assert "dropout-only views" in captured.out and "--augmentation word_deletion" in captured.out
    assert len(captured.out.strip().splitlines()) == 1
