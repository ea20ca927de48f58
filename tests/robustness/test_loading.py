"""A model that cannot serve right is refused at load with one line naming the folder and what is wrong: non-finite
weights, a config.json that does not fit the weights, a missing local path; the Python API refuses the degenerate
data the CLI refuses."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModel

import hf_textcluster  # noqa: F401
from hf_textcluster import SCCLModel
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.hub import save_pretrained
from hf_textcluster.models.building import from_encoder_pretrained


@pytest.fixture(scope="module")
def saved(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    path = tmp_path_factory.mktemp("saved") / "model"
    model.save_pretrained(path)
    return path


def _copy(saved, tmp_path, name="copy"):
    return shutil.copytree(saved, tmp_path / name)


def _edit_weights(folder, edit):
    weights = load_file(str(folder / "model.safetensors"))
    edit(weights)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})


def _edit_config(folder, edit):
    config = json.loads((folder / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("tensor", ["cluster_head.centroids", "encoder.embeddings.word_embeddings.weight"])
def test_non_finite_weights_are_refused_at_load(saved, tmp_path, tensor):
    folder = _copy(saved, tmp_path)

    def poison(weights):
        weights[tensor] = weights[tensor].clone()
        weights[tensor][0, 0] = float("nan") if "centroids" in tensor else float("inf")

    _edit_weights(folder, poison)
    for load in (AutoModel.from_pretrained, SCCLModel.from_pretrained):
        with pytest.raises(ValueError, match=rf"The weights in '{folder}' hold NaN or inf \('{tensor}'\)"):
            load(str(folder))


@pytest.mark.parametrize("case", ["num_clusters", "cut_centroids", "model_type"])
def test_weights_of_another_shape_than_the_config_are_transformers_refusal(saved, tmp_path, case):
    folder = _copy(saved, tmp_path)
    if case == "num_clusters":

        def edit(config):
            config["num_clusters"] = 5
            config.pop("id2label", None)
            config.pop("label2id", None)

        _edit_config(folder, edit)
    elif case == "cut_centroids":
        _edit_weights(folder, lambda w: w.update({"cluster_head.centroids": w["cluster_head.centroids"][:2].clone()}))
    else:
        _edit_config(folder, lambda config: config.update({"model_type": "deccrl"}))
    with pytest.raises(RuntimeError, match="ignore_mismatched_sizes"):
        AutoModel.from_pretrained(str(folder))


@pytest.mark.parametrize("case", ["refined_head_dim", "extra_tensor"])
def test_tensors_the_weights_lack_or_hold_in_excess_are_refused_not_served_random(saved, tmp_path, case):
    """transformers only logs them (and fills what is missing at random): a refined head the weights do not hold would
    serve wrong clusters without a word."""
    folder = _copy(saved, tmp_path)
    if case == "refined_head_dim":
        _edit_config(folder, lambda config: config.update({"refined_head_dim": 32}))
    else:
        _edit_weights(folder, lambda w: w.update({"stray.weight": torch.zeros(2)}))
    with pytest.raises(ValueError, match=rf"The weights in '{folder}' do not fit a SCCLModel .* \d+ missing") as info:
        AutoModel.from_pretrained(str(folder))
    assert "\n" not in str(info.value)
    if case == "refined_head_dim":
        assert "refined_head.bias" in str(info.value)
    if case == "extra_tensor":
        assert "0 missing" in str(info.value) and "stray.weight" in str(info.value)


def test_saving_into_a_file_says_so_in_one_line(saved, tmp_path):
    model = SCCLModel.from_pretrained(str(saved))
    target = tmp_path / "model.bin"
    target.write_text("not a folder")
    with pytest.raises(NotADirectoryError, match=rf"`save_directory` {target} is a file, not a folder") as info:
        model.save_pretrained(target)
    assert "\n" not in str(info.value) and "Errno" not in str(info.value)
    assert target.read_text() == "not a folder"


def test_a_missing_relative_path_with_one_slash_is_named(saved, tmp_path, monkeypatch):
    (tmp_path / "runs").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such folder 'runs/sccl-so-typo'"):
        SCCLModel.from_pretrained("runs/sccl-so-typo")
    with pytest.raises(FileNotFoundError, match=f"no such folder '{tmp_path}/missing'"):
        SCCLModel.from_pretrained(str(tmp_path / "missing"))


def test_initialize_clusters_refuses_fewer_distinct_texts_than_clusters(tiny_encoder_dir):
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=5)
    with pytest.raises(ValueError, match=r"`num_clusters` \(5\) is larger than the number of distinct texts \(1 of 10"):
        initialize_clusters(model, ["how do i join two tables"] * 10)
    embeddings = torch.zeros(10, 32).numpy()
    with pytest.raises(ValueError, match=r"`num_clusters` \(5\) is larger than the number of distinct embeddings"):
        initialize_clusters(model, embeddings=embeddings)
    assert not model.config.centroids_initialized


REMOTE_CODE_CLIENT = """
import importlib.abc, json, sys
class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "hf_textcluster":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NotInstalled())
from transformers import AutoModel
model = AutoModel.from_pretrained(sys.argv[1], trust_remote_code=True)
print(json.dumps({"class": type(model).__name__, "clusters": model.predict(["how do i join two tables"]).tolist()}))
"""


@pytest.mark.slow  # a fresh interpreter loading remote code
def test_a_local_remote_code_folder_loads_without_the_package(tiny_encoder_dir, toy_corpus, tmp_path):
    import os
    import subprocess
    import sys

    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    save_pretrained(model, tmp_path / "remote", remote_code=True)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", REMOTE_CODE_CLIENT, str(tmp_path / "remote")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["class"] == "SCCLModel" and result["clusters"] == model.predict(["how do i join two tables"]).tolist()
