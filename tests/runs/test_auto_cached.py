"""The default ``train``: after its first save it trains the objectives on the pretrained encoder's cached embeddings
(no encoder fine-tuned), chooses among their candidates with the guarded choice, and a cached candidate is served by
the pretrained encoder with a linear head, through AutoModel, the pipeline and ``Clusterer.load``."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from transformers import AutoModel, pipeline

import hf_textcluster  # noqa: F401
from hf_textcluster import train_clusterer
from hf_textcluster.choosing import cached
from hf_textcluster.choosing.candidate_choice import BERTOPIC_WAY
from hf_textcluster.cli import main
from hf_textcluster.data import load_texts
from hf_textcluster.runs.candidate_file import read_candidates
from hf_textcluster.runs.clusterer import Clusterer
from hf_textcluster.runs.folder import RunFolder
from hf_textcluster.runs.signals import CACHED, CACHED_SIGNALS, DEFAULT_SIGNALS

CACHED_CANDIDATES = {"pretrained/scan", "adapter/head", "adapter/kmeans", "adapter/umap_kmeans"}


def _train(encoder, corpus, out, **kwargs):
    """A default run; ``signals`` defaults to both cached objectives (None: the default's own)."""
    texts, labels = corpus
    kwargs.setdefault("signals", tuple(CACHED_SIGNALS))
    return train_clusterer(
        "auto", load_texts(texts, labels), str(out), encoder=str(encoder), num_clusters=3, evaluate=False,
        training_overrides={"bf16": False, **kwargs.pop("overrides", {})}, **kwargs,
    )  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def fewer_adapter_steps():
    """The adapter's 1,500 steps take a minute on the shared test CPU: 60 show the same path."""
    patch = pytest.MonkeyPatch()
    patch.setattr(cached, "ADAPTER_STEPS", 60)
    yield
    patch.undo()


@pytest.fixture(scope="module")
def scan_served(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    """A default run made to serve SCAN's candidate."""
    out = tmp_path_factory.mktemp("cached") / "run"
    return _train(tiny_encoder_dir, toy_corpus, out, overrides={"serve": "pretrained/scan"}), out


def test_the_cached_objectives_fine_tune_nothing(scan_served):
    result, out = scan_served
    record = json.loads((out / "training_run.json").read_text())["auto"]
    assert record["signals"] == {} and set(record["cached"]) == set(CACHED_SIGNALS)
    assert all(entry["seconds"] > 0 for entry in record["cached"].values())
    assert CACHED_CANDIDATES | {"pretrained/kmeans", BERTOPIC_WAY, "consensus"} == set(record["candidates"])
    assert not (out / "signals").exists()


def test_scans_own_head_serves_its_candidate_after_save_and_load(scan_served, toy_corpus):
    result, out = scan_served
    texts = toy_corpus[0]
    choice = result.auto["choice"]
    assert choice["served"] == "pretrained/scan" and choice["serving_signal"] == CACHED
    assert choice["head_agreement"] == 1.0  # SCAN's own linear head: its partition exactly
    model = AutoModel.from_pretrained(out)
    assert model.config.served_partition == "pretrained/scan" and model.is_calibrated
    np.testing.assert_array_equal(model.predict(texts), result.candidates["pretrained/scan"])
    assert [r["cluster"] for r in pipeline("text-clustering", model=str(out))(texts)] == model.predict(texts).tolist()
    clusterer = Clusterer.load(out)
    assert clusterer.cluster_info()["size"].sum() == len(texts)
    np.testing.assert_array_equal(read_candidates(out)[0]["served"], result.served_labels)
    # the model card says what it serves
    from hf_textcluster.hub.card_sections import serving_line

    run = RunFolder(out).read_record()
    assert "SCAN's linear head on the pretrained encoder's embeddings" in serving_line(model.config, run)


def test_an_adapter_candidate_is_distilled_onto_the_pretrained_encoder(tiny_encoder_dir, toy_corpus, tmp_path):
    texts = toy_corpus[0]
    result = _train(tiny_encoder_dir, toy_corpus, tmp_path / "run", overrides={"serve": "adapter/kmeans"})
    choice = result.auto["choice"]
    assert choice["serving_signal"] == CACHED and result.train_seconds > 0
    model = AutoModel.from_pretrained(tmp_path / "run")
    assert model.config.served_partition == "adapter/kmeans" and model.config.refined_head_dim > 0
    np.testing.assert_array_equal(model.predict(texts), result.served_labels)
    agreement = float((result.served_labels == result.candidates["adapter/kmeans"]).mean())
    assert choice["head_agreement"] == pytest.approx(agreement, abs=1e-4)


def test_the_default_choice_is_guarded_and_seeded(tiny_encoder_dir, toy_corpus, scan_served, tmp_path):
    result = _train(tiny_encoder_dir, toy_corpus, tmp_path / "run")
    record = result.auto
    pick, umap = record["candidates"][record["choice"]["pick"]], record["candidates"][BERTOPIC_WAY]
    beats = record["choice"]["pick"] == BERTOPIC_WAY or all(pick[g] > umap[g] for g in record["criteria"][-3:])
    assert record["choice"]["served"] == (record["choice"]["pick"] if beats else BERTOPIC_WAY)
    for name in CACHED_CANDIDATES:  # the same seed, the same candidates as the run that served SCAN's
        np.testing.assert_array_equal(result.candidates[name], scan_served[0].candidates[name], err_msg=name)


def test_refine_switches_among_the_cached_candidates(scan_served, toy_corpus, tmp_path):
    _, out = scan_served
    texts = toy_corpus[0]
    with open(tmp_path / "texts.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["text"], *([t] for t in texts)])
    target = tmp_path / "switched"
    argv = ["refine", "--model", str(out), "--input", str(tmp_path / "texts.csv"), "--output-dir", str(target)]
    assert main([*argv, "--serve", "adapter/head"]) == 0
    model = AutoModel.from_pretrained(target)
    assert model.config.served_partition == "adapter/head"
    np.testing.assert_array_equal(read_candidates(target)[0]["served"], model.predict(texts))


def test_signals_name_the_cached_and_the_fine_tuning_ones(tiny_encoder_dir, toy_corpus, tmp_path, capsys):
    with pytest.raises(
        ValueError, match=r"`signals` \(--signals\) must name distinct signals of scan, adapter, contrastive"
    ):
        _train(tiny_encoder_dir, toy_corpus, tmp_path / "a", signals=["scan", "nope"])
    with pytest.raises(ValueError, match="signals"):
        train_clusterer("sccl", "x", str(tmp_path / "b"), signals=["scan"])
    argv = ["train", "--input", "t.csv", "--num-clusters", "3", "--output-dir", str(tmp_path / "c")]
    with pytest.raises(SystemExit):
        main([*argv, "--signals", "nope"])
    assert "--signals" in capsys.readouterr().err


def test_a_spent_time_budget_keeps_the_first_model(tiny_encoder_dir, toy_corpus, tmp_path, caplog):
    from hf_textcluster.runs.first_save import TrainingStopped

    with pytest.raises(TrainingStopped, match="keeps the clusterer saved first") as stopped:
        _train(tiny_encoder_dir, toy_corpus, tmp_path / "run", time_budget=0.001, signals=None)
    assert stopped.value.budget_spent
    # the estimate said what the default trains before it started: SCAN alone
    assert f"Training {' and '.join(DEFAULT_SIGNALS)} on the pretrained encoder's cached embeddings" in caplog.text
    assert DEFAULT_SIGNALS == ("scan",)
    model = AutoModel.from_pretrained(tmp_path / "run")
    assert model.config.served_partition == BERTOPIC_WAY and model.is_calibrated
    assert set(read_candidates(tmp_path / "run")[0]) == {"pretrained/kmeans", BERTOPIC_WAY, "served"}


def test_the_texts_length_decides_how_much_of_them_the_default_reads(
    tiny_encoder_dir, toy_corpus, scan_served, tmp_path
):
    assert scan_served[0].model.config.max_length == 32  # short texts
    texts, labels = toy_corpus
    long_texts = [" ".join([text] * 8) for text in texts]  # 24-72 words: 32 tokens would cut most of them
    result = _train(tiny_encoder_dir, (long_texts, labels), tmp_path / "run", signals=None)
    assert result.model.config.max_length == 64  # the first length that holds them, within the encoder's 64 positions
    model = AutoModel.from_pretrained(tmp_path / "run")
    assert model.config.max_length == 64
    np.testing.assert_array_equal(model.predict(long_texts), result.served_labels)
