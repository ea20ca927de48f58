"""What every training run leaves for after fitting: the training texts' clusters (assignments.csv), the clusters'
summary in the saved config (`cluster_info` from the folder alone), and files the user's umask lets others read."""

from __future__ import annotations

import os
import stat
import sys

import numpy as np
import pytest
from transformers import AutoModel

import hf_textcluster  # noqa: F401
from hf_textcluster import train_clusterer
from hf_textcluster.data import add_augmented_views, load_texts
from hf_textcluster.runs.clusterer import Clusterer
from hf_textcluster.runs.folder import RunFolder
from hf_textcluster.runs.saving import ASSIGNMENTS_FILE


@pytest.fixture(scope="module")
def trained(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    texts, labels = toy_corpus
    out = tmp_path_factory.mktemp("run") / "sccl"
    old = os.umask(0o022)
    try:
        result = train_clusterer(
            "sccl",
            add_augmented_views(load_texts(texts, labels), "word_deletion"),
            str(out),
            encoder=str(tiny_encoder_dir),
            num_clusters=3,
            evaluate=False,
            training_overrides={"max_steps": 2, "per_device_train_batch_size": 16, "bf16": False, "disable_tqdm": True},
        )
    finally:
        os.umask(old)
    return result, out


def test_a_single_method_run_saves_its_training_texts_clusters(trained, toy_corpus):
    result, out = trained
    text = (out / ASSIGNMENTS_FILE).read_text().splitlines()
    assert text[0] == "cluster" and len(text) == len(toy_corpus[0]) + 1
    saved = RunFolder(out).read_assignments()
    assert result.trainer.train_assignments is not None  # from the pass that chose the served partition
    train_texts = list(result.trainer.train_dataset["text"])
    assert np.array_equal(saved, AutoModel.from_pretrained(out).predict(train_texts))


def test_the_saved_folder_alone_gives_the_cluster_table(trained):
    result, out = trained
    table = Clusterer.load(out).cluster_info()
    saved = RunFolder(out).read_assignments()
    assert table["size"].tolist() == np.bincount(saved, minlength=3).tolist()
    assert table["name"].tolist() == [result.model.config.id2label[k] for k in range(3)]
    assert all(0 <= c <= 1 for c in table["mean_confidence"].dropna())
    assert table["keywords"].map(len).max() > 3  # more than the three words of a name
    # what training saved from its own encoding pass is what encoding the training texts again gives
    again = Clusterer.load(out).cluster_info(list(result.trainer.train_dataset["text"]))
    assert again["size"].tolist() == table["size"].tolist()
    assert again["representative_texts"].tolist() == table["representative_texts"].tolist()
    confidence = again["mean_confidence"].to_numpy(float), table["mean_confidence"].to_numpy(float)
    np.testing.assert_allclose(*confidence, atol=1e-3)  # a quantile rank: float noise of the embeddings moves it


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_every_file_of_the_run_is_readable_under_umask_022(trained):
    _, out = trained
    private = [
        os.path.relpath(os.path.join(root, name), out)
        for root, _, files in os.walk(out)
        for name in files
        if stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode) & 0o044 != 0o044
    ]
    assert private == []


def test_a_bad_assignments_file_is_one_clear_error(tmp_path):
    (tmp_path / ASSIGNMENTS_FILE).write_text("cluster\n1\nx\n")
    with pytest.raises(ValueError, match="not one column `cluster`"):
        RunFolder(tmp_path).read_assignments()
    assert RunFolder(tmp_path / "none").read_assignments() is None
