"""No user file is replaced without ``--overwrite``: every option of every command that names an output (a file or a
folder, found by walking the parsers) refuses an existing one before any work, in one line naming it and
``--overwrite``; and a file that cannot be written is named with the reason."""

from __future__ import annotations

import argparse
import json
import os

import pytest

from hf_textcluster.cli import build_parser, main


def _output_options() -> list[tuple[str, str]]:
    """(command, option) for every option that names what a command writes."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return sorted(
        (command, option)
        for command, sub in commands.items()
        for action in sub._actions
        for option in action.option_strings
        if option.startswith("--output")
    )


def _fake_model(folder) -> str:
    """A folder that holds a trained model as far as the ownership checks can tell (it does not load: a command that
    loaded it before checking its output would fail on that instead)."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"num_clusters": 2}))
    (folder / "model.safetensors").write_bytes(b"not weights")
    return str(folder)


def _command_line(command: str, option: str, tmp_path) -> tuple[list[str], str]:
    """A command line of ``command`` whose ``option`` names something that exists, and that thing."""
    model = _fake_model(tmp_path / "model")
    texts = tmp_path / "texts.txt"
    texts.write_text("a b\nc d\ne f\ng h\n")
    given = {
        "train": ["--input", str(texts), "--num-clusters", "2", "--encoder", str(tmp_path / "no-encoder")],
        "demo": ["--train-sample", "100"],
        "info": ["--model", model],
        "card": ["--model", model],
        "rename": ["--model", model, "0=refunds"],
        "merge": ["--model", model, "--input", str(texts), "0,1"],
        "reduce": ["--model", model, "--input", str(texts), "--to", "1"],
        "split": ["--model", model, "--input", str(texts), "0"],
        "name": ["--model", model, "--input", str(texts), "--generator", model],
    }.get(command, ["--model", model, "--input", str(texts)])
    if option == "--output-dir":
        existing = _fake_model(tmp_path / "earlier-model")
    else:
        existing = str(
            tmp_path / {"plot": "map.png", "report": "report.html", "predict": "out.jsonl"}.get(command, "out")
        )
        with open(existing, "w") as f:
            f.write("the user's file\n")
    return [command, *given, option, existing], existing


def _snapshot(path: str) -> dict:
    if os.path.isfile(path):
        return {path: open(path, "rb").read()}
    return {name: open(os.path.join(path, name), "rb").read() for name in sorted(os.listdir(path))}


OUTPUTS = _output_options()


def test_the_walk_finds_the_outputs():
    commands = {command for command, _ in OUTPUTS}
    assert {"predict", "info", "plot", "report", "card", "train", "merge", "calibrate", "demo"} <= commands


@pytest.mark.parametrize(("command", "option"), OUTPUTS)
def test_an_existing_output_is_kept_without_overwrite(command, option, tmp_path, capsys):
    argv, existing = _command_line(command, option, tmp_path)
    before = _snapshot(existing)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and existing in err and "--overwrite" in err, err
    assert _snapshot(existing) == before
    # --overwrite is what lifts the refusal: the command goes on (and fails later, on the model that does not load)
    main([*argv, "--overwrite"])
    assert "--overwrite" not in capsys.readouterr().err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["info", "card"])
def test_a_file_that_cannot_be_written_is_named(command, toy_model, toy_corpus, tmp_path, capsys):
    toy_model.save_pretrained(tmp_path / "model")
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(toy_corpus[0]) + "\n")
    argv = [command, "--model", str(tmp_path / "model"), "--output", "/dev/full"]
    argv += ["--input", str(texts)]
    assert main(argv) == 2  # /dev/full exists
    assert "--output /dev/full exists; pass --overwrite to replace it." in capsys.readouterr().err
    assert main([*argv, "--overwrite"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "error: could not write /dev/full: No space left on device"
