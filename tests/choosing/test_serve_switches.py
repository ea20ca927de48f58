"""Every ``refine --serve`` switch serves exactly the partition it names: from every partition a one-method run can
serve, to every other, checked against the same run's partitions of its training texts (what it says it serves is
what it serves)."""

from __future__ import annotations

import csv
import shutil

import numpy as np
import pytest
import torch
from transformers import AutoModel

import hf_textcluster  # noqa: F401
from hf_textcluster import train_clusterer
from hf_textcluster.choosing.serving import candidate_partitions
from hf_textcluster.cli import main
from hf_textcluster.data import load_texts
from hf_textcluster.modeling.input_checks import CANDIDATES

TRAIN = dict(
    per_device_train_batch_size=16, bf16=False, save_strategy="no", logging_steps=1, disable_tqdm=True, max_steps=3
)


@pytest.fixture(scope="module")
def run_partitions(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    """A run serving its head, its texts' file, and its partitions: each candidate's labels, and the head's
    probabilities (what serving the head gives, beyond its argmax)."""
    texts, labels = toy_corpus
    root = tmp_path_factory.mktemp("switches")
    out = root / "head"
    overrides = {**TRAIN, "serve": "head"}
    train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(out),
        encoder=str(tiny_encoder_dir),
        training_overrides=overrides,
        evaluate=False,
    )
    with open(root / "texts.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["text"], *([t] for t in texts)])
    model = AutoModel.from_pretrained(out)
    embeddings = model.embed(texts)
    partitions, _ = candidate_partitions(model, embeddings, candidates=CANDIDATES, random_state=0)
    with torch.no_grad():
        head = model.head_probabilities(torch.from_numpy(embeddings)).numpy()
    return out, root / "texts.csv", partitions, head


def _refine(model, texts_file, serve, out) -> None:
    argv = ["refine", "--model", str(model), "--input", str(texts_file), "--serve", serve]
    in_place = out == model  # the model's own folder is changed in place: no --output-dir naming it
    assert main(argv if in_place else [*argv, "--output-dir", str(out), "--overwrite"]) == 0


@pytest.fixture(scope="module")
def starts(run_partitions, tmp_path_factory):
    """The run made to serve each of its partitions in turn (a folder per start)."""
    out, texts_file, _, _ = run_partitions
    root = tmp_path_factory.mktemp("starts")
    folders = {"head": out}
    for name in CANDIDATES[1:]:
        folders[name] = root / name.replace("+", "_")
        _refine(out, texts_file, name, folders[name])
    return folders


@pytest.mark.parametrize("target", CANDIDATES)
@pytest.mark.parametrize("start", CANDIDATES)
def test_every_serve_switch_serves_the_partition_it_names(start, target, run_partitions, starts, toy_corpus, tmp_path):
    texts = toy_corpus[0]
    _, texts_file, partitions, head = run_partitions
    folder = tmp_path / "start"
    shutil.copytree(starts[start], folder)  # in place, as a user would switch a run
    _refine(folder, texts_file, target, folder)
    model = AutoModel.from_pretrained(folder)
    assert model.config.served_partition == target
    np.testing.assert_array_equal(model.predict(texts), partitions[target])
    if target == "head":  # the trained head itself, not centres put in its place
        with torch.no_grad():
            served = model.cluster_probabilities(torch.from_numpy(model.embed(texts))).numpy()
        np.testing.assert_allclose(served, head, atol=1e-5)


def test_a_run_trained_to_serve_kmeans_serves_its_trained_head_when_asked(tiny_encoder_dir, toy_corpus, tmp_path):
    """``train --serve kmeans`` replaces the head by the centres; ``refine --serve head`` serves the trained head."""
    texts, labels = toy_corpus
    out = tmp_path / "kmeans"
    result = train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(out),
        encoder=str(tiny_encoder_dir),
        training_overrides={**TRAIN, "serve": "kmeans"},
        evaluate=False,
    )
    trained_head = result.model.method_head_[0]  # the trained head, kept aside while the centres serve
    (tmp_path / "texts.csv").write_text("text\n" + "\n".join(texts) + "\n", encoding="utf-8")
    _refine(out, tmp_path / "texts.csv", "head", out)
    model = AutoModel.from_pretrained(out)
    assert model.config.served_partition == "head"
    for name, value in model.cluster_head.state_dict().items():
        torch.testing.assert_close(value, trained_head[name])
