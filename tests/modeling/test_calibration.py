"""Calibration: the confidence (rank of the centre margin among the calibration texts) and the outlier flag
(distance to the cluster's centre beyond its calibrated quantile), recomputed directly; saving, old checkpoints, the
pipeline's two paths, the CLI and the trainer."""

import copy
import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel, pipeline

import hf_textcluster  # noqa: F401
from hf_textcluster import SCCLModel
from hf_textcluster.choosing.serving import serve_partition
from hf_textcluster.cli import main
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.modeling.calibration import MIN_CLUSTER_SIZE, QUANTILE_LEVELS
from hf_textcluster.modeling.input_checks import CANDIDATES
from hf_textcluster.models.building import from_encoder_pretrained

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "saved_models"
LEVELS = np.linspace(0, 1, QUANTILE_LEVELS)


@pytest.fixture(scope="module")
def calibrated(tiny_encoder_dir, toy_corpus):
    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    return model.calibrate(toy_corpus[0], precision="fp32")


@pytest.fixture(scope="module")
def calibrated_dir(calibrated, tmp_path_factory):
    path = tmp_path_factory.mktemp("calibrated")
    calibrated.save_pretrained(path)
    return path


def _centre_margins(unit, centres, clusters):
    """(d_other - d_own) / (d_other + d_own): cosine distances to the own cluster's centre and the nearest other one."""
    distances = 1 - unit @ centres.T
    rows = np.arange(len(unit))
    own = distances[rows, clusters].copy()
    distances[rows, clusters] = np.inf
    other = distances.min(1)
    return (other - own) / (other + own)


def _direct(model, texts):
    """Embeddings, probabilities, clusters, centre margins and unit embeddings, recomputed from the served
    partition (the centres are the clusters' mean unit embeddings)."""
    embeddings = model.embed(texts, precision="fp32")
    probs = model.predict_proba(texts, precision="fp32")
    clusters = probs.argmax(-1)
    unit = embeddings / np.linalg.norm(embeddings, axis=-1, keepdims=True)
    centres = np.stack([unit[clusters == k].mean(0) for k in range(probs.shape[1])])
    centres /= np.linalg.norm(centres, axis=-1, keepdims=True)
    return embeddings, probs, clusters, _centre_margins(unit, centres, clusters), unit


def test_calibration_is_the_direct_recomputation(calibrated, toy_corpus):
    texts = toy_corpus[0]
    _, probs, clusters, margins, unit = _direct(calibrated, texts)
    assert calibrated.is_calibrated and calibrated.config.num_calibration_texts == len(texts)
    np.testing.assert_allclose(calibrated.calibration.margin_quantiles.numpy(), np.quantile(margins, LEVELS), atol=1e-5)
    assert calibrated.config.confidence_measure == "centre_margin"
    sizes = np.bincount(clusters, minlength=3)
    np.testing.assert_array_equal(calibrated.calibration.cluster_sizes.numpy(), sizes)
    distances = np.empty(len(texts))
    for k in range(3):
        centre = unit[clusters == k].mean(0)
        centre /= np.linalg.norm(centre)
        np.testing.assert_allclose(calibrated.calibration.centres[k].numpy(), centre, atol=1e-5)
        distances[clusters == k] = 1 - unit[clusters == k] @ centre
    for k in range(3):  # clusters too small for their own tail use the pooled distances of all texts
        expected = distances[clusters == k] if sizes[k] >= MIN_CLUSTER_SIZE else distances
        np.testing.assert_allclose(
            calibrated.calibration.distance_quantiles[k].numpy(), np.quantile(expected, LEVELS), atol=1e-5
        )


def test_confidence_is_the_empirical_share_of_calibration_margins(calibrated, toy_corpus):
    texts = toy_corpus[0]
    _, probs, clusters, margins, _ = _direct(calibrated, texts)
    details = calibrated.predict_with_confidence(texts, precision="fp32")
    np.testing.assert_array_equal(details["cluster"], clusters)
    np.testing.assert_allclose(details["probability"], probs.max(-1), rtol=1e-5)
    share_at_or_below = (margins[None, :] <= margins[:, None] + 1e-7).mean(1)
    # 101 quantiles: the interpolated share is within a quantile step (and a text's own rank) of the exact one
    assert np.abs(details["confidence"] - share_at_or_below).max() <= 0.01 + 1 / len(texts)
    assert details["confidence"].min() >= 0 and details["confidence"].max() == pytest.approx(1.0)
    # on the very texts calibrated on, the ranks spread over [0, 1]: a threshold keeps a known share
    assert (details["confidence"] == 1.0).mean() <= 0.05
    assert ((details["confidence"] > 0.25) & (details["confidence"] < 1)).mean() >= 0.5
    # beyond the calibrated range: 0 on another cluster's centre (margin -1), 1 on its own centre (margin 1)
    calibration = calibrated.calibration
    low, high = float(calibration.margin_quantiles[0]), float(calibration.margin_quantiles[-1])
    assert -1 < low < high < 1
    on_centre_0 = calibration.centres[0:1].repeat(2, 1)
    probs = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # served in cluster 1, then in cluster 0
    assert calibration.confidence(on_centre_0, probs).tolist() == [0.0, 1.0]


def test_outliers_use_their_clusters_calibrated_quantile(calibrated, toy_corpus):
    texts = toy_corpus[0]
    _, _, clusters, _, unit = _direct(calibrated, texts)
    centres = calibrated.calibration.centres.numpy()
    for quantile in (0.5, 0.9, 0.99):
        details = calibrated.predict_with_confidence(texts, outlier_quantile=quantile, precision="fp32")
        distances = 1 - (unit * centres[clusters]).sum(-1)
        np.testing.assert_allclose(details["distance"], distances, atol=1e-5)
        thresholds = np.array(
            [np.interp(quantile, LEVELS, q) for q in calibrated.calibration.distance_quantiles.numpy()]
        )
        np.testing.assert_array_equal(details["is_outlier"], details["distance"] > thresholds[clusters])
        clear = np.abs(distances - thresholds[clusters]) > 1e-5  # a calibration text can sit on its own quantile
        np.testing.assert_array_equal(details["is_outlier"][clear], (distances > thresholds[clusters])[clear])
    assert 0 < details["is_outlier"].sum() <= 0.05 * len(texts)  # q = 0.99 of the very texts calibrated on


def test_flagged_clusters_are_those_beyond_threshold_in_the_pipeline(calibrated_dir, toy_corpus):
    texts = toy_corpus[0]
    model = AutoModel.from_pretrained(calibrated_dir)
    details = model.predict_with_confidence(texts, outlier_quantile=0.8)
    clusterer = pipeline("text-clustering", model=str(calibrated_dir))
    results = clusterer(texts, flag_outliers=True, outlier_quantile=0.8)
    for result, cluster, outlier, confidence in zip(
        results, details["cluster"], details["is_outlier"], details["confidence"]
    ):
        assert result["confidence"] == pytest.approx(float(confidence), abs=1e-5)
        if outlier:
            assert result["cluster"] == -1 and result["label"] == "outlier"
            assert result["nearest_cluster"] == cluster and result["nearest_label"] == f"cluster_{cluster}"
        else:
            assert result["cluster"] == cluster and "nearest_cluster" not in result
    unflagged = clusterer(texts)
    assert [r["cluster"] for r in unflagged] == details["cluster"].tolist()  # off by default


def test_round_trip_keeps_the_calibration(calibrated, calibrated_dir):
    loaded, info = AutoModel.from_pretrained(calibrated_dir, output_loading_info=True)
    assert not any(info[key] for key in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    assert loaded.is_calibrated and loaded.config.num_calibration_texts == calibrated.config.num_calibration_texts
    for name, tensor in calibrated.calibration.state_dict().items():
        torch.testing.assert_close(loaded.calibration.state_dict()[name], tensor, rtol=0, atol=0)


@pytest.mark.parametrize("method", sorted(p.name for p in FIXTURES.iterdir()))
def test_an_uncalibrated_checkpoint_says_how_to_calibrate(method, toy_corpus, tmp_path):
    model = AutoModel.from_pretrained(FIXTURES / method)
    assert not model.is_calibrated and not model.calibration.centres.any()
    with pytest.raises(ValueError, match=r"model\.calibrate\(texts\)"):
        model.predict_with_confidence(["a text"])
    clusterer = pipeline("text-clustering", model=model, tokenizer=model.tokenizer)
    assert clusterer("how do i join two tables")["confidence"] is None
    with pytest.raises(ValueError, match=r"not calibrated.*model\.calibrate\(texts\)"):
        clusterer(["a text"], flag_outliers=True)
    # calibrating it later and saving makes a calibrated checkpoint
    model.calibrate(toy_corpus[0]).save_pretrained(tmp_path)
    assert AutoModel.from_pretrained(tmp_path).is_calibrated


def test_list_path_equals_per_text_path(calibrated_dir, toy_corpus):
    clusterer = pipeline("text-clustering", model=str(calibrated_dir))
    texts = toy_corpus[0][:40]
    for options in ({}, {"flag_outliers": True, "outlier_quantile": 0.7}):
        batched = clusterer(texts, batch_size=7, **options)
        streamed = list(clusterer((t for t in texts), batch_size=7, **options))
        assert len(batched) == len(streamed) == len(texts)
        for a, b in zip(batched, streamed):
            assert set(a) == set(b)
            assert {k: v for k, v in a.items() if k not in ("score", "confidence")} == {
                k: v for k, v in b.items() if k not in ("score", "confidence")
            }
            assert a["score"] == pytest.approx(b["score"], abs=1e-5)
            assert a["confidence"] == pytest.approx(b["confidence"], abs=1e-4)
        if options:
            assert any(r["cluster"] == -1 for r in batched)
    ranked = clusterer(texts[:3], top_k=2)
    # the first row is the text's result without top_k (its confidence included); the others rank the rest
    assert all(len(row) == 2 and set(row[0]) == {"cluster", "label", "score", "confidence"} for row in ranked)
    assert all(set(row[1]) == {"cluster", "label", "score"} for row in ranked)
    assert [row[0]["cluster"] for row in ranked] == [r["cluster"] for r in clusterer(texts[:3])]


@pytest.mark.parametrize(
    "options,match",
    [
        ({"flag_outliers": "yes"}, "flag_outliers"),
        ({"flag_outliers": True, "outlier_quantile": 0}, "outlier_quantile"),
        ({"flag_outliers": True, "outlier_quantile": 1.5}, "outlier_quantile"),
        ({"flag_outliers": True, "outlier_quantile": True}, "outlier_quantile"),
        ({"outlier_quantile": 0.9}, "applies with `flag_outliers=True`"),
        ({"flag_outliers": True, "top_k": 2}, "top_k"),
    ],
)
def test_bad_pipeline_options_are_clear_errors(calibrated_dir, options, match):
    clusterer = pipeline("text-clustering", model=str(calibrated_dir))
    for inputs in (["a text"], "a text"):
        with pytest.raises(ValueError, match=match):
            clusterer(inputs, **options)


def test_bad_calibration_arguments_are_clear_errors(calibrated, tiny_encoder_dir):
    for bad in (0, 1, -3, 2.5, True):
        with pytest.raises(ValueError, match="sample_size"):
            calibrated.calibrate(["a text", "another"], sample_size=bad)
    with pytest.raises(ValueError, match="outlier_quantile"):
        calibrated.predict_with_confidence(["a text"], outlier_quantile=2)
    with pytest.raises(TypeError, match="list of strings"):
        calibrated.calibrate("one string")
    fresh = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    with pytest.raises(RuntimeError, match="never initialised"):
        fresh.calibrate(["a text", "another"])


def test_calibration_samples_with_its_seed(calibrated, toy_corpus):
    texts = toy_corpus[0]
    state = {k: v.clone() for k, v in calibrated.calibration.state_dict().items()}
    try:
        first = calibrated.calibrate(texts, sample_size=50, random_state=1).calibration.margin_quantiles.clone()
        assert calibrated.config.num_calibration_texts == 50
        again = calibrated.calibrate(texts, sample_size=50, random_state=1).calibration.margin_quantiles
        torch.testing.assert_close(again, first)
    finally:
        calibrated.calibration.load_state_dict(state)
        calibrated.config.num_calibration_texts = len(texts)


def test_calibrating_from_given_embeddings_equals_encoding_the_texts(calibrated, toy_corpus):
    texts = toy_corpus[0]
    state = {k: v.clone() for k, v in calibrated.calibration.state_dict().items()}
    try:
        encoded = calibrated.calibrate(texts, sample_size=50, random_state=1, precision="fp32").calibration
        encoded = {k: v.clone() for k, v in encoded.state_dict().items()}
        embeddings = calibrated.embed(texts, precision="fp32")
        given = calibrated.calibrate(texts, sample_size=50, random_state=1, embeddings=embeddings).calibration
        assert calibrated.config.num_calibration_texts == 50
        for name, value in given.state_dict().items():
            torch.testing.assert_close(value, encoded[name], rtol=1e-5, atol=1e-6)
        with pytest.raises(ValueError, match="`embeddings` must be `model.embed"):
            calibrated.calibrate(texts, embeddings=embeddings[:-1])
        with pytest.raises(ValueError, match="`embeddings` must be `model.embed"):
            calibrated.calibrate(texts, embeddings=embeddings[:, :-1])
    finally:
        calibrated.calibration.load_state_dict(state)
        calibrated.config.num_calibration_texts = len(texts)


def test_trainer_calibrates_at_the_end_of_training(tiny_encoder_dir, toy_corpus, tmp_path):
    from hf_textcluster import train_clusterer
    from hf_textcluster.data import load_texts

    texts, labels = toy_corpus
    overrides = dict(per_device_train_batch_size=16, bf16=False, save_strategy="no", disable_tqdm=True, max_steps=2)
    result = train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(tmp_path / "run"),
        encoder=str(tiny_encoder_dir),
        training_overrides={**overrides, "calibration_sample_size": 50},
        evaluate=False,
    )
    model = AutoModel.from_pretrained(result.output_dir)
    assert model.is_calibrated and model.config.num_calibration_texts == 50
    expected = result.model.calibration.margin_quantiles.clone()
    # the same seeded sample of the trained model's training texts, at the precision the trainer used (bf16=False)
    result.model.calibrate(texts, sample_size=50, random_state=0, precision="fp32")
    torch.testing.assert_close(model.calibration.margin_quantiles, expected)
    torch.testing.assert_close(result.model.calibration.margin_quantiles, expected)
    off = train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(tmp_path / "off"),
        encoder=str(tiny_encoder_dir),
        training_overrides={**overrides, "calibration_sample_size": 0},
        evaluate=False,
    )
    assert not off.model.is_calibrated


def test_bad_calibration_sample_size_in_training_arguments(tmp_path):
    from hf_textcluster.training.arguments import ClusteringTrainingArguments

    for bad in (-1, 1, 2.5):
        with pytest.raises(ValueError, match="calibration_sample_size"):
            ClusteringTrainingArguments(output_dir=str(tmp_path), calibration_sample_size=bad)


def test_cli_calibrate_then_predict_with_outliers(calibrated, tmp_path, toy_corpus, capsys):
    texts = toy_corpus[0]
    model_dir = tmp_path / "model"
    shutil.copytree(FIXTURES / "sccl", model_dir)
    (tmp_path / "train.txt").write_text("\n".join(texts) + "\n")
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(texts[:6]) + "\n")
    assert main(["predict", "--model", str(model_dir), "--input", str(queries), "--flag-outliers"]) == 2
    assert "hf-textcluster calibrate" in capsys.readouterr().err
    assert (
        main(
            [
                "calibrate",
                "--model",
                str(model_dir),
                "--input",
                str(tmp_path / "train.txt"),
                "--calibration-sample",
                "100",
            ]
        )
        == 0
    )
    assert "100 texts" in capsys.readouterr().out
    assert json.loads((model_dir / "config.json").read_text())["num_calibration_texts"] == 100
    assert (
        main(
            [
                "predict",
                "--model",
                str(model_dir),
                "--input",
                str(queries),
                "--flag-outliers",
                "--outlier-quantile",
                "0.5",
            ]
        )
        == 0
    )
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [line["text"] for line in lines] == texts[:6]
    assert all(0 <= line["confidence"] <= 1 for line in lines)
    assert all(line["cluster"] == -1 and line["label"] == "outlier" or "nearest_cluster" not in line for line in lines)
    assert main(["predict", "--model", str(model_dir), "--input", str(queries), "--outlier-quantile", "0.5"]) == 2
    assert "--outlier-quantile applies with --flag-outliers" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # refused before the model is loaded, in one line
        main(
            [
                "predict",
                "--model",
                str(model_dir),
                "--input",
                str(queries),
                "--flag-outliers",
                "--outlier-quantile",
                "7",
            ]
        )
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--outlier-quantile" in err[0]


def test_cli_recluster_serves_kmeans_on_the_trained_embeddings(tmp_path, toy_corpus, capsys):
    texts = toy_corpus[0]
    model_dir = tmp_path / "model"
    shutil.copytree(FIXTURES / "sccl", model_dir)
    (tmp_path / "train.txt").write_text("\n".join(texts) + "\n")
    expected = initialize_clusters(AutoModel.from_pretrained(model_dir), texts, random_state=3)
    assert (
        main(
            [
                "recluster",
                "--model",
                str(model_dir),
                "--input",
                str(tmp_path / "train.txt"),
                "--seed",
                "3",
                "--calibration-sample",
                "100",
                "--output-dir",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )
    assert "Re-clustered" in capsys.readouterr().out
    reclustered = AutoModel.from_pretrained(tmp_path / "out")
    np.testing.assert_array_equal(reclustered.predict(texts), expected)
    assert reclustered.config.num_calibration_texts == 100  # calibrated on the new clusters
    # and named after the new clusters' keywords (the fixture from before names had `cluster_<k>`)
    assert all(name != f"cluster_{k}" for k, name in reclustered.config.id2label.items())
    assert main(["recluster", "--model", str(tmp_path / "nowhere"), "--input", str(tmp_path / "train.txt")]) == 2
    assert "--model" in capsys.readouterr().err


def test_model_card_says_whether_calibrated(calibrated, tiny_encoder_dir):
    from hf_textcluster.hub.card_limitations import calibration_lines

    assert "Calibrated on 120 training texts" in "\n".join(calibration_lines(calibrated.config))
    fresh = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    assert "Not calibrated" in calibration_lines(fresh.config)[0]


@pytest.mark.parametrize("serve", CANDIDATES)
def test_confidence_spreads_for_every_served_partition(serve, calibrated, toy_corpus):
    """A hard (k-means) or linear (refined, UMAP) served partition saturates the soft assignment at 1.0; the centre
    margin still ranks the texts: few exactly 1.0, most strictly between 0.25 and 1."""
    if serve.startswith("umap") and importlib.util.find_spec("umap") is None:
        pytest.skip("umap-learn is not installed")
    texts = toy_corpus[0]
    model = copy.deepcopy(calibrated)
    serve_partition(model, model.embed(texts, precision="fp32"), serve=serve)
    assert model.config.served_partition == serve and model.is_calibrated == (serve == "head")
    model.calibrate(texts, precision="fp32")
    details = model.predict_with_confidence(texts, precision="fp32")
    confidence = details["confidence"]
    assert (confidence == 1.0).mean() <= 0.05
    assert ((confidence > 0.25) & (confidence < 1.0)).mean() >= 0.5
    # and it ranks: the texts nearest their own centre relative to the next one are the most confident
    order = np.argsort(confidence)
    assert details["distance"][order[-10:]].mean() < details["distance"][order[:10]].mean()
