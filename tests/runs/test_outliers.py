"""Outliers as an option (BERTopic's topic -1 and ``reduce_outliers``): ``train --outliers`` leaves the texts far
from every cluster at -1 (calibration's 0.99 distance threshold) and the model flags them when it predicts;
``reduce_outliers`` puts them in their nearest cluster and the model stops flagging; without the option no text is
ever -1."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import shutil

import numpy as np
import pytest
from transformers import AutoModel, pipeline

from hf_textcluster import Clusterer
from hf_textcluster.choosing import cached
from hf_textcluster.cli import main
from hf_textcluster.evaluation.metrics import clustering_scores
from hf_textcluster.representation.ctfidf import TOKEN_PATTERN
from hf_textcluster.representation.summary import read_cluster_summary
from hf_textcluster.runs.first_save import calibrate_and_name
from hf_textcluster.runs.folder import RunFolder
from hf_textcluster.runs.request import TrainingRequest

TRAIN = {"per_device_train_batch_size": 16, "bf16": False, "disable_tqdm": True, "max_steps": 2}
# Texts of no topic's words (characters the tiny vocabulary spells one by one): far from every cluster.
FAR = ["q ? z ? x ? q ? z ? x ? q", "z z z ? ? ? x x x ? ? ? q q", "? ? ? ? ? ? ? ? ? ? ? ? ? ? ?"]


def _fit(encoder, texts, out, **options) -> Clusterer:
    clusterer = Clusterer(3, method="sccl", encoder=str(encoder), evaluate=False, training_overrides=TRAIN, **options)
    return clusterer.fit(texts, out)


@pytest.fixture(scope="module")
def texts(toy_corpus):
    return [*toy_corpus[0], *FAR]


@pytest.fixture(scope="module")
def trained(tiny_encoder_dir, texts, tmp_path_factory):
    """``train --outliers`` on the toy corpus and the planted far texts: the run folder and what it printed."""
    root = tmp_path_factory.mktemp("outliers")
    data, out = root / "texts.txt", root / "run"
    data.write_text("\n".join(texts) + "\n", encoding="utf-8")
    argv = ["train", "--method", "sccl", "--input", str(data), "--num-clusters", "3", "--output-dir", str(out)]
    argv += ["--encoder", str(tiny_encoder_dir), "--max-steps", "2", "--per-device-train-batch-size", "16"]
    with contextlib.redirect_stdout(io.StringIO()) as said:
        assert main([*argv, "--outliers", "--precision", "fp32"]) == 0
    return out, said.getvalue()


@pytest.fixture()
def flagged(trained):
    clusterer = Clusterer.load(trained[0])
    assert clusterer.texts is not None  # found again through training_run.json
    return clusterer


def test_training_with_outliers_leaves_the_far_texts_at_minus_one(flagged, texts, trained):
    labels = flagged.labels_
    far = labels[-len(FAR) :]
    assert (far == -1).any(), far
    assert 0 < (labels == -1).sum() <= 0.05 * len(texts)  # the 0.99 threshold: a few texts, not a share to tune
    np.testing.assert_array_equal(np.asarray(RunFolder(flagged.path).read_assignments()), labels)  # saved so
    model = AutoModel.from_pretrained(flagged.path)
    assert model.config.flag_outliers is True
    assert (model.predict(texts) >= 0).all()  # the served model's own predict never says -1
    said = trained[1]
    assert f"   -1  {(labels == -1).sum()} outliers" in said and "reduce-outliers --model" in said
    keywords = read_cluster_summary(model.config)["outlier_keywords"]
    assert keywords and f"most often: {', '.join(keywords[:5])};" in said  # what the outliers are about


def test_without_the_option_no_text_is_an_outlier(tiny_encoder_dir, texts, tmp_path):
    clusterer = _fit(tiny_encoder_dir, texts, tmp_path / "run")
    assert (clusterer.labels_ >= 0).all()
    assert clusterer.model.config.flag_outliers is False
    assert (np.asarray(RunFolder(tmp_path / "run").read_assignments()) >= 0).all()
    assert (clusterer.cluster_info()["cluster"] >= 0).all()
    assert pipeline("text-clustering", model=clusterer.model)(FAR[-1])["cluster"] >= 0


def test_the_first_save_of_the_default_flags_outliers_when_asked(toy_model, texts, tmp_path):
    model = copy.deepcopy(toy_model)
    request = TrainingRequest("stackoverflow", str(tmp_path), outliers=True)
    names = calibrate_and_name(model, texts, model.embed(texts), request, calibration=1000, encoding={})
    assert model.config.flag_outliers is True and (names.assignments.clusters == -1).any()
    assert read_cluster_summary(model.config)["outliers"] == (names.assignments.clusters == -1).sum()


def test_predict_and_the_pipeline_flag_a_far_text_after_an_outliers_train(flagged, texts):
    far = [text for text, label in zip(texts, flagged.labels_) if label == -1]
    assert (flagged.predict(far) == -1).all()
    assert flagged.predict(texts[:3]).tolist() == flagged.labels_[:3].tolist()
    model = AutoModel.from_pretrained(flagged.path)
    clusterer = pipeline("text-clustering", model=model)
    assert [r["cluster"] for r in clusterer(far)] == [-1] * len(far)  # the config's default
    assert clusterer(far[0], flag_outliers=False)["cluster"] >= 0
    assert clusterer(far[0], top_k=2)[0]["cluster"] >= 0  # top_k: the k most likely, no flagging
    assert pipeline("text-clustering", model=model, flag_outliers=False)(far[0])["cluster"] >= 0


def test_cluster_info_shows_the_outlier_row_first(flagged, capsys):
    table = flagged.cluster_info()
    outliers = int((flagged.labels_ == -1).sum())
    assert table.iloc[0]["cluster"] == -1 and table.iloc[0]["name"] == "outliers"
    assert table.iloc[0]["size"] == outliers
    assert table["size"].sum() == len(flagged.labels_)  # the clusters' sizes leave the outliers out
    recomputed = flagged.cluster_info(flagged.texts)
    assert recomputed.iloc[0]["cluster"] == -1 and recomputed.iloc[0]["size"] == outliers
    assert main(["info", "--model", str(flagged.path)]) == 0
    assert f"     -1  {outliers:>7}" in capsys.readouterr().out


def test_figures_and_scores_take_minus_one(flagged, toy_corpus):
    assert "outliers" in {trace.name.split(": ", 1)[1] for trace in flagged.visualize_documents(map_method="pca").data}
    flagged.visualize_barchart()
    flagged.visualize_hierarchy()
    labels = [*toy_corpus[1], *[3] * len(FAR)]
    assert set(clustering_scores(labels, flagged.labels_)) == {"acc", "nmi", "ari", "purity"}
    # -1 is one cluster of its own, as the benchmark scores BERTopic's outliers
    assert clustering_scores([0, 0, 1, 1], [-1, -1, 0, 0])["acc"] == 1.0


def test_reduce_outliers_puts_every_text_in_a_cluster_and_is_saved(flagged, tmp_path):
    folder = shutil.copytree(flagged.path, tmp_path / "model")
    clusterer = Clusterer.load(folder)
    outliers = int((flagged.labels_ == -1).sum())
    far = [text for text, label in zip(flagged.texts, flagged.labels_) if label == -1]
    clusterer.reduce_outliers().save()
    assert clusterer.run.edits[-1]["op"] == "reduce_outliers" and clusterer.run.edits[-1]["moved"] == outliers
    again = Clusterer.load(folder)
    assert again.model.config.flag_outliers is False
    assert (again.predict(far) >= 0).all()
    assert (np.asarray(RunFolder(folder).read_assignments()) >= 0).all()
    table = again.cluster_info()
    assert (table["cluster"] >= 0).all() and table["size"].sum() == len(flagged.texts)
    with pytest.raises(ValueError, match="flags no outliers"):
        again.reduce_outliers(flagged.texts)


def test_the_reduce_outliers_command(trained, tmp_path, capsys):
    out = shutil.copytree(trained[0], tmp_path / "model")
    outliers = json.loads((out / "config.json").read_text())["cluster_summary"]["outliers"]
    assert outliers > 0
    assert main(["reduce-outliers", "--model", str(out)]) == 0
    assert f"Moved {outliers} outlier texts" in capsys.readouterr().out
    assert json.loads((out / "config.json").read_text())["flag_outliers"] is False
    edits = json.loads((out / "training_run.json").read_text())["edits"]
    assert [e["op"] for e in edits] == ["reduce_outliers"]
    assert main(["reduce-outliers", "--model", str(out)]) == 2
    assert "flags no outliers" in capsys.readouterr().err


def test_refine_keeps_the_outliers_of_a_flagging_model(flagged, tmp_path):
    folder = shutil.copytree(flagged.path, tmp_path / "model")
    clusterer = Clusterer.load(folder)
    clusterer.refine(serve="kmeans")
    clusterer.save()
    saved = np.asarray(RunFolder(folder).read_assignments())
    summary = read_cluster_summary(Clusterer.load(folder).model.config)
    assert (saved == -1).sum() == summary["outliers"] > 0  # the file and the summary say the same
    np.testing.assert_array_equal(saved, Clusterer.load(folder).labels_)


@pytest.mark.slow
def test_a_default_run_with_outliers_saves_them_with_their_keywords(
    tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch
):
    """The whole default ``train --outliers`` (no --method), then ``Clusterer.load``: the -1 texts, their count in
    the summary and their row in ``cluster_info``, with keywords of their own texts (BERTopic's topic -1)."""
    monkeypatch.setattr(cached, "ADAPTER_STEPS", 60)  # as in test_auto_cached: the same path, sooner
    # far texts of words (two letters or more, unknown to the tiny vocabulary): keywords c-TF-IDF can count
    texts = [*toy_corpus[0], "qzx vvv ? qzx vvv ? qzx", "zzq xxw zzq xxw ? ? ?", "wwv ? ? ? qqz ? ? ? wwv"]
    data, out = tmp_path / "texts.txt", tmp_path / "run"
    data.write_text("\n".join(texts) + "\n", encoding="utf-8")
    argv = ["train", "--input", str(data), "--encoder", str(tiny_encoder_dir), "--output-dir", str(out)]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*argv, "--num-clusters", "3", "--outliers", "--precision", "fp32"]) == 0
    clusterer = Clusterer.load(out)
    assert clusterer.run.auto is not None  # the default run
    labels = np.asarray(RunFolder(out).read_assignments())
    np.testing.assert_array_equal(clusterer.labels_, labels)
    outliers = int((labels == -1).sum())
    assert outliers > 0
    assert read_cluster_summary(clusterer.model.config)["outliers"] == outliers
    row = clusterer.cluster_info().iloc[0]
    assert row["cluster"] == -1 and row["name"] == "outliers" and row["size"] == outliers
    words = {word for i in np.flatnonzero(labels == -1) for word in re.findall(TOKEN_PATTERN, texts[i].lower())}
    assert row["keywords"] and set(row["keywords"]) <= words
