"""Folders hf_textcluster did not write, and Hub ids it cannot reach: refused before anything is loaded (and a folder's
own code never runs), in one line that names the folder and says what to do, in the CLI and the Python API."""

from __future__ import annotations

import json

import pytest
import torch

from hf_textcluster.cli import main
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.runs.folder import load_clusterer


@pytest.fixture()
def texts(tmp_path, toy_corpus):
    path = tmp_path / "texts.csv"
    rows = [f'"{text}",{label}' for text, label in zip(*toy_corpus)]
    path.write_text("text,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def foreign(tmp_path):
    """A folder whose config.json maps the Auto classes to its own code, which leaves a file behind if it ever runs."""
    folder, ran = tmp_path / "foreign", tmp_path / "foreign-code-ran"
    folder.mkdir()
    run_marker = f"open({str(ran)!r}, 'w').write('ran')\n"
    config_code = (
        "from transformers import PretrainedConfig\nclass EvilConfig(PretrainedConfig):\n    model_type = 'evil'\n"
    )
    (folder / "configuration_evil.py").write_text(run_marker + config_code)
    (folder / "modeling_evil.py").write_text(run_marker)
    auto_map = {"AutoConfig": "configuration_evil.EvilConfig", "AutoModel": "modeling_evil.EvilModel"}
    (folder / "config.json").write_text(json.dumps({"model_type": "evil", "auto_map": auto_map}))
    return folder, ran


def _commands(model, texts, tmp_path):
    return {
        "predict": ["predict", "--model", str(model), "--input", str(texts)],
        "info": ["info", "--model", str(model)],
        "evaluate": ["evaluate", "--model", str(model), "--input", str(texts), "--label-column", "label"],
        "train --encoder": [
            "train", "--encoder", str(model), "--input", str(texts), "--output-dir", str(tmp_path / "run"),
            "--num-clusters", "3", "--method", "sccl",
        ],
    }  # fmt: skip


def _one_line_error(argv, capsys) -> str:
    """The command's error line (train's progress bars may come before it)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and err.rstrip().endswith(errors[0]) and "Traceback" not in err, err
    return errors[0]


@pytest.mark.parametrize("command", ["predict", "info", "evaluate", "train --encoder"])
def test_a_folder_with_code_of_its_own_is_refused_and_its_code_never_runs(command, foreign, texts, tmp_path, capsys):
    folder, ran = foreign
    err = _one_line_error(_commands(folder, texts, tmp_path)[command], capsys)
    assert str(folder) in err and "hf_textcluster does not run code from folders it did not write" in err
    assert "trust_remote_code" not in err and "hf.co" not in err  # no option the CLI lacks, no Hub page of a folder
    assert not ran.exists()


@pytest.mark.parametrize("command", ["predict", "info", "evaluate"])
def test_a_folder_of_an_unknown_model_type_is_not_a_folder_made_by_hf_textcluster(command, texts, tmp_path, capsys):
    folder = tmp_path / "unknown"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "xyz"}))
    err = _one_line_error(_commands(folder, texts, tmp_path)[command], capsys)
    assert f"{folder} is not a folder made by hf_textcluster (model_type 'xyz'" in err
    assert "pip install" not in err and "hf-textcluster train" in err


def test_an_encoder_of_an_unknown_model_type_is_named_with_the_encoder_option(texts, tmp_path, capsys):
    folder = tmp_path / "unknown"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "xyz"}))
    err = _one_line_error(_commands(folder, texts, tmp_path)["train --encoder"], capsys)
    assert f"--encoder) {folder} is not a model transformers knows (model_type 'xyz')" in err
    assert "pip install" not in err


@pytest.fixture()
def offline(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "is_offline_mode", lambda: True)


def test_offline_a_hub_id_not_in_the_cache_says_so_in_the_cli_and_the_python_api(offline, texts, capsys):
    err = _one_line_error(["predict", "--model", "nobody/x", "--input", str(texts)], capsys)
    expected = "offline mode (HF_HUB_OFFLINE=1): nobody/x is not in your cache"
    assert expected in err and "huggingface.co" not in err
    with pytest.raises(FileNotFoundError) as info:
        load_clusterer("nobody/x")
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_a_folder_hf_textcluster_saved_with_its_remote_code_still_loads(tiny_encoder_dir, toy_corpus, tmp_path):
    """Its config.json has an auto_map too, for a model type the package registers: the package's classes load it."""
    from hf_textcluster import SCCLModel, TextClusteringPreTrainedModel
    from hf_textcluster.editing import initialize_clusters
    from hf_textcluster.hub import save_pretrained

    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    save_pretrained(model, tmp_path / "model", remote_code=True)
    assert "auto_map" in json.loads((tmp_path / "model" / "config.json").read_text())
    loaded = load_clusterer(tmp_path / "model")
    assert isinstance(loaded, TextClusteringPreTrainedModel) and type(loaded).__module__.startswith("hf_textcluster")
