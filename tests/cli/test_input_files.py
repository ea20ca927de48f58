"""`--input` files the commands cannot read: one line naming the file (and its line where there is one) and the fix,
the same for `predict` (which streams the file) and the commands that read it whole."""

from __future__ import annotations

import pytest
import torch

from hf_textcluster.cli import main
from hf_textcluster.models.building import from_encoder_pretrained


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    from hf_textcluster import SCCLModel
    from hf_textcluster.editing import initialize_clusters

    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    path = tmp_path_factory.mktemp("input-files") / "model"
    model.save_pretrained(path)
    return path


def _error_line(capsys) -> str:
    """The command's one error line, its last (a model's loading bar may come before it: a line of JSON Lines is
    read as predict reaches it)."""
    err = capsys.readouterr().err
    errors = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and err.rstrip().endswith(errors[0]) and "Traceback" not in err, err
    return errors[0]


CASES = {
    "binary.txt": (bytes(range(256)) * 4, None, "is not a text file", "save it as UTF-8"),
    "utf16.txt": ("first text\nsecond\n".encode("utf-16-le"), None, "is not a text file", "save it as UTF-8"),
    "latin1.csv": ("text\nok\ncaf\xe9\n".encode("latin-1"), 3, "not UTF-8 text", "save it as UTF-8"),
    "empty.csv": (b"", None, "is empty (0 bytes)", "pass a file that holds your texts"),
    "unclosed.csv": (b'text\nok\n"never closed\nmore\n', 3, "a quote", "close it"),
    "broken.jsonl": (b'{"text": "ok"}\n{"text": \n', 2, "not JSON", "each line of a JSON Lines file is one object"),
}


@pytest.mark.parametrize("command", ["predict", "info"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_an_unreadable_input_is_one_line_naming_the_file_its_line_and_the_fix(
    command, name, model_dir, tmp_path, capsys
):
    content, line, problem, fix = CASES[name]
    path = tmp_path / name
    path.write_bytes(content)
    assert main([command, "--model", str(model_dir), "--input", str(path)]) == 2
    err = _error_line(capsys)
    assert str(path) in err and problem in err and fix in err, err
    assert "codec can't decode" not in err and "Error tokenizing" not in err and "No columns to parse" not in err
    if line is not None:
        assert f"line {line}" in err


@pytest.mark.parametrize("command", ["predict", "info"])
def test_a_folder_as_input_is_named_as_a_folder(command, model_dir, tmp_path, capsys):
    folder = tmp_path / "texts"
    folder.mkdir()
    assert main([command, "--model", str(model_dir), "--input", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"error: {folder} is a folder, not a file: pass a file of texts (.csv, .tsv, .jsonl, .json, .parquet, .txt)."
    )


def test_a_utf16_input_with_a_byte_order_mark_is_predicted(model_dir, tmp_path, capsys):
    path = tmp_path / "texts.csv"
    path.write_text("text\nhow do i join two tables\npython list sort\n", encoding="utf-16")
    assert main(["predict", "--model", str(model_dir), "--input", str(path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split('"text": ')[1].split('"')[1] for line in lines] == [
        "how do i join two tables",
        "python list sort",
    ]
