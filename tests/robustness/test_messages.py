"""Bad input is one line naming the argument and the fix."""

from __future__ import annotations

import json
import re
import shutil

import pytest
import torch

from hf_textcluster import Clusterer, SCCLModel
from hf_textcluster.cli import main
from hf_textcluster.data import load_texts
from hf_textcluster.runs.train import split_held_out


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_predict_on_a_missing_gpu_names_the_device(tmp_path, capsys):
    (tmp_path / "in.txt").write_text("how do i join two tables\n")
    model = tmp_path / "model"
    model.mkdir()
    assert main(["predict", "--model", str(model), "--input", str(tmp_path / "in.txt"), "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--device cuda: this machine has no CUDA GPU" in err[0] and "--device cpu" in err[0]


def test_a_test_size_leaving_too_few_texts_names_the_argument(toy_corpus):
    dataset = load_texts(*toy_corpus)  # 120 texts in 3 classes
    with pytest.raises(
        ValueError,
        match=r"`test_size` 0.99 \(--test-size\) holds out 119 of 120 texts, leaving 1 to "
        r"train on; each side needs at least 3 texts.*smaller --test-size",
    ):
        split_held_out(dataset, 0.99)
    train, test = split_held_out(dataset, 0.2)
    assert len(train) == 96 and len(test) == 24


@pytest.fixture(scope="module")
def saved(toy_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "model"
    toy_model.save_pretrained(path)
    (path.parent / "in.txt").write_text("how do i join two tables\n")
    return path


DEEP = '{"a":' * 100_000 + "1" + "}" * 100_000  # past Python's recursion limit: json.load raises RecursionError


def test_a_config_json_nested_too_deep_is_one_line_naming_it(saved, tmp_path, capsys):
    model = shutil.copytree(saved, tmp_path / "model")
    (model / "config.json").write_text(DEEP)
    fix = "its config.json is nested too deep to be read (no model was saved with it); put the model's own config.json"
    for load in (Clusterer.load, SCCLModel.from_pretrained):
        with pytest.raises(ValueError, match=re.escape(f"{model}: {fix}")):
            load(str(model))
    for command in (["info"], ["predict", "--input", str(saved.parent / "in.txt")]):
        assert main([*command, "--model", str(model)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"error: {model}: {fix} back, or save the model again."]


def test_a_training_run_json_nested_too_deep_is_one_line_naming_it(saved, tmp_path, capsys):
    model = shutil.copytree(saved, tmp_path / "model")
    (model / "training_run.json").write_text(DEEP)
    line = f"{model / 'training_run.json'} is nested too deep to be read; fix or delete it."
    with pytest.raises(ValueError, match=re.escape(line)):
        Clusterer.load(str(model))
    assert main(["info", "--model", str(model)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"error: {line}"  # after loading's progress


def test_a_folder_without_a_model_type_is_not_an_hf_textcluster_model(saved, tmp_path):
    model = shutil.copytree(saved, tmp_path / "model")
    config = json.loads((model / "config.json").read_text())
    del config["model_type"]
    (model / "config.json").write_text(json.dumps(config))
    with pytest.raises(
        ValueError,
        match=rf"{model} is not a folder made by hf_textcluster \(its config.json has no "
        r"model_type; its models are sccl, .*\): pass the folder of a model that `hf-textcluster train`",
    ):
        Clusterer.load(str(model))
    (model / "config.json").unlink()
    with pytest.raises(ValueError, match=rf"{model} holds model.safetensors.* but no config.json"):
        Clusterer.load(str(model))


def test_ctrl_c_before_the_first_save_says_no_model_is_saved_yet(
    tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch, capsys
):
    import umap

    def interrupted(self, *args, **kwargs):  # Ctrl-C in the first UMAP fit, before anything is saved
        raise KeyboardInterrupt

    monkeypatch.setattr(umap.UMAP, "fit_transform", interrupted)
    (tmp_path / "texts.txt").write_text("\n".join(toy_corpus[0]) + "\n")
    output = tmp_path / "run"
    command = ["train", "--input", str(tmp_path / "texts.txt"), "--encoder", str(tiny_encoder_dir)]
    assert main([*command, "--num-clusters", "3", "--output-dir", str(output)]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"interrupted: {output} holds no saved model yet; run the same command again to go on."
