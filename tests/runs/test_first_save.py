"""The default ``train`` saves a complete model first (the BERTopic way on the pretrained encoder), trains for better
clusters (here its fine-tuning signals, whose checkpoints resume), replaces it only when the guarded choice confirms
one, keeps it when stopped, and keeps a folder a user can keep (no signal models unless asked). Every ``refine
--serve`` switch of its runs serves the partition it names."""

from __future__ import annotations

import csv
import json
import shutil

import numpy as np
import pytest
from transformers import AutoModel

import hf_textcluster  # noqa: F401
from hf_textcluster import train_clusterer
from hf_textcluster.choosing.candidate_choice import BERTOPIC_WAY
from hf_textcluster.cli import main
from hf_textcluster.data import load_texts
from hf_textcluster.runs import gather_candidates
from hf_textcluster.runs.candidate_file import read_candidates
from hf_textcluster.runs.signals import SIGNALS

TRAIN = dict(
    per_device_train_batch_size=16, bf16=False, save_strategy="no", logging_steps=1, disable_tqdm=True, max_steps=2
)


def _train(encoder, corpus, out, **kwargs):
    texts, labels = corpus
    overrides = {**TRAIN, **kwargs.pop("overrides", {})}
    return train_clusterer(
        "auto", load_texts(texts, labels), str(out), encoder=str(encoder), num_clusters=3,
        training_overrides=overrides, evaluate=False, signals=tuple(SIGNALS), **kwargs,
    )  # fmt: skip


def _write_texts(path, texts):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["text"], *([t] for t in texts)])


@pytest.fixture(scope="module")
def default_run(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    """A default run (signals not kept), whose pretrained candidates must come from its first save, not again."""

    def made_again(*args, **kwargs):
        raise AssertionError("the pretrained candidates were made twice")

    patch = pytest.MonkeyPatch()
    patch.setattr(gather_candidates, "_pretrained_candidates", made_again)
    out = tmp_path_factory.mktemp("default") / "run"
    try:
        result = _train(tiny_encoder_dir, toy_corpus, out)
    finally:
        patch.undo()
    return result, out


def test_the_default_run_records_what_it_served_when_and_keeps_no_signal_model(default_run):
    result, out = default_run
    assert not (out / "signals").exists()  # the served model and the candidates' partitions only
    record = json.loads((out / "training_run.json").read_text())["auto"]
    assert all(signal["folder"] is None for signal in record["signals"].values())
    first, *_, last = record["served_history"]
    assert first["served"] == BERTOPIC_WAY and first["by"] == "first save"
    assert 0 < record["first_save_seconds"] == first["seconds"] <= last["seconds"]
    assert last["served"] == record["choice"]["served"] == AutoModel.from_pretrained(out).config.served_partition
    if record["choice"]["serving_signal"] == "pretrained":  # the guard kept the first model: not distilled again
        assert record["choice"]["served"] == BERTOPIC_WAY and last["by"].startswith("kept")


def test_a_stopped_run_keeps_its_first_model_and_resumes(tiny_encoder_dir, toy_corpus, tmp_path, capsys, caplog):
    texts, labels = toy_corpus
    _write_texts(tmp_path / "texts.csv", texts)
    out = tmp_path / "run"
    argv = ["train", "--input", str(tmp_path / "texts.csv"), "--encoder", str(tiny_encoder_dir)]
    argv += ["--output-dir", str(out), "--num-clusters", "3", "--max-steps", "2", "--per-device-train-batch-size", "8"]
    argv += ["--precision", "fp32", "--save-steps", "1", "--signals", *SIGNALS]
    assert main([*argv, "--time-budget", "0.001"]) == 0  # spent before the first step ends
    printed = capsys.readouterr()
    assert f"The time budget (0.001s) is spent: {out} keeps the clusterer saved first (the BERTopic way" in printed.out
    assert "Saved the clusterer (the BERTopic way" in caplog.text  # said when it was saved, before training
    model = AutoModel.from_pretrained(out)  # complete: calibrated, named, serving the BERTopic way
    assert model.config.served_partition == BERTOPIC_WAY and model.is_calibrated
    partitions, _ = read_candidates(out)
    np.testing.assert_array_equal(model.predict(texts), partitions["served"])
    assert set(partitions) == {"pretrained/kmeans", BERTOPIC_WAY, "served"}
    run = json.loads((out / "training_run.json").read_text())
    assert run["auto"]["stopped"] == {"by": "time budget"} and len(run["auto"]["served_history"]) == 1
    assert list((out / "signals" / "contrastive").glob("checkpoint-*"))  # to resume from
    # the same command again resumes (no --overwrite needed) and finishes
    caplog.clear()
    assert main(argv) == 0
    assert "Resuming from" in caplog.text
    run = json.loads((out / "training_run.json").read_text())
    assert run["auto"]["choice"]["served"] == run["auto"]["served_history"][-1]["served"]
    assert not (out / "signals").exists()
    # a finished run is not resumed: it is only replaced with --overwrite
    assert main(argv) == 2


def test_keep_signals_and_time_budget_belong_to_the_default(toy_corpus, tmp_path):
    for option in ({"keep_signals": True}, {"time_budget": 60}):
        with pytest.raises(ValueError, match="default method, auto"):
            train_clusterer("sccl", load_texts(*toy_corpus), str(tmp_path / "x"), num_clusters=3, **option)
    with pytest.raises(ValueError, match="time_budget"):
        _train(None, toy_corpus, tmp_path / "y", time_budget=0)


@pytest.fixture(scope="module")
def starts(default_run, tiny_encoder_dir, toy_corpus, tmp_path_factory):
    """The default run's folder and a run that serves a trained signal's k-means (its trained head kept aside)."""
    out = tmp_path_factory.mktemp("kmeans") / "run"
    _train(tiny_encoder_dir, toy_corpus, out, overrides={"serve": "self_training/kmeans"})
    texts_file = out.parent / "texts.csv"
    _write_texts(texts_file, toy_corpus[0])
    return {"default": default_run[1], "self_training/kmeans": out}, texts_file


# a model's own read-outs, and candidates the run kept
TARGETS = ["head", "kmeans", "umap_kmeans", BERTOPIC_WAY, "pretrained/kmeans", "self_training/head", "consensus"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("start", ["default", "self_training/kmeans"])
def test_every_serve_switch_of_a_default_run_serves_that_partition(start, target, starts, toy_corpus, tmp_path, capsys):
    texts = toy_corpus[0]
    folders, texts_file = starts
    folder = tmp_path / "run"
    shutil.copytree(folders[start], folder)
    kept, _ = read_candidates(folder)
    argv = ["refine", "--model", str(folder), "--input", str(texts_file), "--serve", target, "--overwrite"]
    assert main(argv) == 0
    model = AutoModel.from_pretrained(folder)
    served = model.predict(texts)
    assert model.config.served_partition == target
    np.testing.assert_array_equal(served, read_candidates(folder)[0]["served"])
    if target in kept:  # a kept partition: a head fitted to it on this model's embeddings, and it says so
        assert "served by a linear head fitted to it" in capsys.readouterr().out
        assert (served == kept[target]).mean() >= 0.8
    else:  # the model's own read-out: exactly the run's partition of the model that serves
        serving = json.loads((folders[start] / "training_run.json").read_text())["auto"]["choice"]["serving_signal"]
        if serving == "pretrained":  # the first model: its head holds the pretrained k-means centres
            reference = {"head": "pretrained/kmeans", "kmeans": "pretrained/kmeans", "umap_kmeans": BERTOPIC_WAY}
        else:
            reference = {name: f"{serving}/{name}" for name in ("head", "kmeans", "umap_kmeans")}
        np.testing.assert_array_equal(served, kept[reference[target]])


def test_the_first_save_chooses_k_as_a_run_of_one_method_does(tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch):
    """Without K, the first save chooses it once, on the pretrained encoder's embeddings, by the one choice of K a
    run of one method makes too (``choose_k``), and serves that many clusters."""
    import time

    from hf_textcluster.runs import cluster_count, first_save
    from hf_textcluster.runs.request import TrainingRequest

    choices = []
    monkeypatch.setattr(first_save, "choose_k", lambda *a: choices.append(cluster_count.choose_k(*a)) or choices[-1])
    texts = toy_corpus[0]
    request = TrainingRequest(load_texts(texts), str(tmp_path / "run"), encoder=str(tiny_encoder_dir), save=False)
    first = first_save.save_first_model(request, request.dataset, "sccl", {}, 0, time.perf_counter())
    (selection,) = choices
    assert first.k_selection == selection and 2 <= selection["num_clusters"] <= len(texts) - 1
    assert first.model.config.num_clusters == selection["num_clusters"] == len(set(first.labels))
