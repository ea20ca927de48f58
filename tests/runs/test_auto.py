"""`train --method auto` with its two fine-tuning signals named: both trained, every candidate and a consensus kept,
one chosen without labels and served by one saved model (through AutoModel and the pipeline), the same with the label
column removed. (The default, the objectives on cached embeddings: tests/runs/test_auto_cached.py.)"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import AutoModel, pipeline

import hf_textcluster  # noqa: F401
from hf_textcluster import train_clusterer
from hf_textcluster.choosing.candidate_choice import BERTOPIC_WAY, DEFAULT_AUTO_CRITERION, GUARD_CRITERIA
from hf_textcluster.data import load_texts
from hf_textcluster.runs.auto import AUTO_SCHEDULE, train_auto
from hf_textcluster.runs.candidate_file import read_candidates, texts_match
from hf_textcluster.runs.recipes import load_recipe
from hf_textcluster.runs.request import TrainingRequest
from hf_textcluster.runs.saving import CANDIDATES_FILE
from hf_textcluster.runs.schedule import plan_schedule
from hf_textcluster.runs.signals import CONSENSUS, SIGNALS

TRAIN = dict(
    per_device_train_batch_size=16, bf16=False, save_strategy="no", logging_steps=1, disable_tqdm=True, max_steps=2
)


def _train(encoder, texts, labels, out, keep_signals=False, **overrides):
    return train_clusterer(
        "auto",
        load_texts(texts, labels),
        str(out),
        encoder=str(encoder),
        num_clusters=3,
        training_overrides={**TRAIN, **overrides},
        evaluate=False,
        keep_signals=keep_signals,
        signals=tuple(SIGNALS),
    )


@pytest.fixture(scope="module")
def auto_trained(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    """A run that keeps its signals' models (re-scoring its candidates needs them)."""
    texts, labels = toy_corpus
    out = tmp_path_factory.mktemp("auto") / "run"
    return _train(tiny_encoder_dir, texts, labels, out, keep_signals=True), out


def test_auto_trains_every_signal_and_keeps_every_candidate(auto_trained, toy_corpus):
    result, out = auto_trained
    texts = toy_corpus[0]
    run = json.loads((out / "training_run.json").read_text())
    record = run["auto"]
    assert set(record["signals"]) == set(SIGNALS)
    for signal in record["signals"].values():
        assert signal["steps"] == 2 and (out / signal["folder"] / "model.safetensors").is_file()
    assert record["signals"]["self_training"]["config"] == {"mlm_loss_weight": 0.0}
    names = set(record["candidates"])
    # each signal's six read-outs, the pretrained encoder's two, and the consensus
    assert {f"{s}/{c}" for s in SIGNALS for c in ("head", "kmeans", "umap_kmeans")} <= names
    assert {"pretrained/kmeans", "pretrained/umap_kmeans", CONSENSUS} <= names
    # train computes the criterion that chooses and its parts, nothing else
    assert set(record["criteria"]) == {"agreement", DEFAULT_AUTO_CRITERION, *GUARD_CRITERIA}
    assert all(set(values) == set(record["criteria"]) for values in record["candidates"].values())
    partitions, metadata = read_candidates(out)
    assert set(partitions) == names | {"served"} and texts_match(texts, metadata)
    assert not texts_match(texts[:-1], metadata)
    for name, labels in partitions.items():
        assert labels.shape == (len(texts),) and labels.min() >= 0 and labels.max() < 3, name
        if name != "served":
            np.testing.assert_array_equal(labels, result.candidates[name])


def test_the_choice_is_the_best_by_its_criterion_and_is_served_after_save_and_load(auto_trained, toy_corpus):
    result, out = auto_trained
    texts = toy_corpus[0]
    record = json.loads((out / "training_run.json").read_text())["auto"]
    choice = record["choice"]
    values = {name: v[choice["criterion"]] for name, v in record["candidates"].items()}
    assert values[choice["pick"]] == max(values.values())
    # served: the pick, unless it does not beat the BERTopic way in every guard's view
    pick, umap = record["candidates"][choice["pick"]], record["candidates"][BERTOPIC_WAY]
    beats = choice["pick"] == BERTOPIC_WAY or all(pick[g] > umap[g] for g in GUARD_CRITERIA)
    assert choice["served"] == (choice["pick"] if beats else BERTOPIC_WAY)
    model = AutoModel.from_pretrained(out)
    assert model.config.served_partition == choice["served"] and model.is_calibrated
    # the first saved model (the pretrained encoder, with the first signal's model class) or a trained signal's
    signal = choice["serving_signal"]
    method = record["signals"]["contrastive" if signal == "pretrained" else signal]["method"]
    assert model.config.model_type == method
    served = read_candidates(out)[0]["served"]
    np.testing.assert_array_equal(model.predict(texts), served)
    clusterer = pipeline("text-clustering", model=str(out))
    assert [r["cluster"] for r in clusterer(texts)] == served.tolist()
    # the served clusters are the chosen candidate's as the serving head reproduces it, and the record says how far
    agreement = (served == result.candidates[choice["served"]]).mean()
    assert agreement == pytest.approx(choice["head_agreement"], abs=1e-4)
    if choice["served"].split("/")[0] == choice["serving_signal"]:
        assert agreement == 1.0


def test_the_served_model_is_calibrated_and_named_as_encoding_its_texts_again_would(auto_trained, toy_corpus):
    from hf_textcluster.representation import name_clusters

    result, out = auto_trained
    texts = toy_corpus[0]
    model = AutoModel.from_pretrained(out)  # calibrated and named from what auto had computed
    seed = json.loads((out / "training_run.json").read_text())["seed"]
    again = AutoModel.from_pretrained(out)
    again.calibrate(texts, random_state=seed, precision=result.trainer.precision)
    for name, value in model.calibration.state_dict().items():
        torch.testing.assert_close(value, again.calibration.state_dict()[name], rtol=1e-4, atol=1e-5)
    assert name_clusters(again, texts, random_state=seed, precision=result.trainer.precision).names == {
        int(k): v for k, v in model.config.id2label.items()
    }


def test_a_candidate_of_another_space_is_served_by_a_linear_head(tiny_encoder_dir, toy_corpus, tmp_path):
    texts, labels = toy_corpus
    out = tmp_path / "run"
    result = _train(tiny_encoder_dir, texts, labels, out, serve="pretrained/kmeans")
    record = result.auto["choice"]
    assert record["served"] == "pretrained/kmeans" and record["criterion"] is None
    model = AutoModel.from_pretrained(out)
    assert model.config.served_partition == "pretrained/kmeans" and model.config.refined_head_dim > 0
    np.testing.assert_array_equal(model.predict(texts), result.served_labels)
    assert record["head_agreement"] == pytest.approx(  # recorded to 4 places
        float((result.served_labels == result.candidates["pretrained/kmeans"]).mean()), abs=1e-4
    )


def test_the_served_partition_is_identical_without_the_label_column(
    auto_trained, tiny_encoder_dir, toy_corpus, tmp_path
):
    result, out = auto_trained
    texts = toy_corpus[0]
    plain = _train(tiny_encoder_dir, texts, None, tmp_path / "plain")
    assert plain.auto["choice"] == result.auto["choice"]
    assert plain.auto["candidates"] == result.auto["candidates"]
    np.testing.assert_array_equal(plain.served_labels, result.served_labels)
    np.testing.assert_array_equal(
        AutoModel.from_pretrained(tmp_path / "plain").predict(texts), AutoModel.from_pretrained(out).predict(texts)
    )


def test_reusing_the_shared_passes_changes_no_candidate(
    auto_trained, tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch
):
    import contextlib

    from hf_textcluster.runs import auto as auto_module

    result, _ = auto_trained
    texts, labels = toy_corpus
    monkeypatch.setattr(auto_module, "reusing_results", contextlib.nullcontext)  # every pass and fit computed anew
    alone = _train(tiny_encoder_dir, texts, labels, tmp_path / "alone")
    assert alone.auto["candidates"] == result.auto["candidates"]
    for name, partition in result.candidates.items():
        np.testing.assert_array_equal(alone.candidates[name], partition, err_msg=name)


def test_bad_requests_fail_with_one_clear_line(tiny_encoder_dir, toy_corpus, tmp_path):
    texts, labels = toy_corpus
    with pytest.raises(ValueError, match="config_overrides"):
        train_clusterer("auto", load_texts(texts, labels), str(tmp_path / "a"), config_overrides={"eta": 1.0})
    with pytest.raises(ValueError, match="not a candidate"):
        _train(tiny_encoder_dir, texts, labels, tmp_path / "b", serve="nope")


def test_config_under_auto_is_refused_naming_why(tmp_path, capsys):
    from hf_textcluster.cli import main

    argv = ["train", "--input", str(tmp_path / "t.csv"), "--num-clusters", "3", "--output-dir", str(tmp_path / "r")]
    assert main([*argv, "--config", "eta=5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "(--config) configures one method" in err[0] and "--method sccl" in err[0]


@pytest.mark.parametrize("signal", sorted(SIGNALS))
def test_the_schedule_depends_on_the_number_of_texts_only(signal):
    recipe = {**load_recipe(SIGNALS[signal].method, "cpu"), "schedule": AUTO_SCHEDULE}
    assert recipe["training"]["per_device_train_batch_size"] == 64
    assert plan_schedule(recipe, 20_000).max_steps == 300  # the recipe's steps on a corpus of thousands
    small = plan_schedule(recipe, 1_000)  # about eight passes on a small one
    assert small.max_steps == 125 and small.source == "corpus" and "8 epochs, at least 100" in small.rule
    assert plan_schedule(recipe, 10).max_steps == 100
    assert plan_schedule(recipe, 1_000, {"max_steps": 7}).source == "explicit"  # the user's steps win
    # a recipe that counts epochs (the paper's DEC-MLM) is capped by the block
    epochs = {"training": {"per_device_train_batch_size": 16, "num_train_epochs": 10}, "schedule": AUTO_SCHEDULE}
    assert plan_schedule(epochs, 20_000).max_steps == 300


def test_each_signal_records_the_schedule_that_sized_it(
    auto_trained, tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch
):
    from hf_textcluster.runs import auto as auto_module

    # a block of 2 steps on the 120 texts, to keep the run short
    monkeypatch.setattr(auto_module, "AUTO_SCHEDULE", {**AUTO_SCHEDULE, "epochs": 0.1, "min_steps": 2})
    texts, labels = toy_corpus
    overrides = {key: value for key, value in TRAIN.items() if key != "max_steps"}
    out = tmp_path / "run"
    request = TrainingRequest(
        load_texts(texts, labels),
        str(out),
        encoder=str(tiny_encoder_dir),
        num_clusters=3,
        evaluate=False,
        training_overrides=overrides,
        keep_signals=True,
        signals=["self_training"],
    )
    train_auto(request)
    schedule = json.loads((out / "signals" / "self_training" / "training_run.json").read_text())["schedule"]
    assert schedule["source"] == "corpus" and schedule["max_steps"] == 2
    given = json.loads((auto_trained[1] / "signals" / "contrastive" / "training_run.json").read_text())["schedule"]
    assert given["source"] == "explicit" and given["max_steps"] == 2


def test_candidates_file_is_safetensors(auto_trained):
    _, out = auto_trained
    from safetensors import safe_open

    with safe_open(str(out / CANDIDATES_FILE), framework="numpy") as f:
        assert f.metadata()["num_train_texts"] == "120"


def _write_texts(path, texts, labels=None):
    import csv

    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"] if labels is not None else ["text"])
        for i, text in enumerate(texts):
            writer.writerow([text, labels[i]] if labels is not None else [text])


def test_refine_switches_to_a_kept_candidate_without_training(auto_trained, toy_corpus, tmp_path, capsys):
    from hf_textcluster.cli import main

    result, out = auto_trained
    texts = toy_corpus[0]
    _write_texts(tmp_path / "texts.csv", texts)
    name = "self_training/kmeans"
    target = tmp_path / "switched"
    args = ["refine", "--model", str(out), "--input", str(tmp_path / "texts.csv"), "--output-dir", str(target)]
    assert main([*args, "--serve", name]) == 0
    model = AutoModel.from_pretrained(target)
    assert model.config.served_partition == name and model.is_calibrated
    served = model.predict(texts)
    # a linear head fitted to the kept partition reproduces it (up to what it can express)
    assert (served == result.candidates[name]).mean() >= 0.9
    partitions, _ = read_candidates(target)  # kept with the new model, its served clusters updated
    np.testing.assert_array_equal(partitions["served"], served)
    assert json.loads((target / "training_run.json").read_text())["serving"]["served"] == name
    assert "now serves its self_training/kmeans partition" in capsys.readouterr().out
    # other texts than the run's, or a name it did not keep: one clear line, exit status 2
    _write_texts(tmp_path / "other.csv", texts[:-1])
    other = ["refine", "--model", str(out), "--input", str(tmp_path / "other.csv"), "--output-dir", str(tmp_path / "x")]
    assert main([*other, "--serve", name]) == 2
    assert "training texts" in capsys.readouterr().err
    assert main([*args, "--overwrite", "--serve", "contrastive/nope"]) == 2
    assert "not a kept candidate" in capsys.readouterr().err


def test_evaluate_scores_every_kept_candidate(auto_trained, toy_corpus, tmp_path, capsys):
    from hf_textcluster.cli import main
    from hf_textcluster.evaluation.metrics import clustering_scores

    result, out = auto_trained
    texts, labels = toy_corpus
    _write_texts(tmp_path / "labelled.csv", texts, labels)
    args = ["evaluate", "--model", str(out), "--input", str(tmp_path / "labelled.csv"), "--label-column", "label"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert f"The candidates it kept ({len(result.candidates)})" in printed
    acc = clustering_scores(labels, result.candidates[CONSENSUS])["acc"]
    line = next(line for line in printed.splitlines() if line.strip().startswith(CONSENSUS))
    assert f"ACC {100 * acc:.1f}" in line
    _write_texts(tmp_path / "fewer.csv", texts[:60], labels[:60])
    assert main([*args[:3], "--input", str(tmp_path / "fewer.csv"), "--label-column", "label"]) == 0
    assert "not of these" in capsys.readouterr().out


def test_rescoring_a_kept_run_reproduces_its_criteria(auto_trained, toy_corpus):
    from training.bench.rescoring import rescore_kept_candidates

    result, out = auto_trained
    record = json.loads((out / "training_run.json").read_text())["auto"]
    values = rescore_kept_candidates(out, toy_corpus[0], random_state=0, criteria=record["criteria"])
    assert set(values) == set(record["criteria"])
    for criterion, scores in values.items():
        # the shared space's silhouette is computed on embeddings encoded again from the saved models: float rounding
        tolerance = 2e-5 if criterion == "silhouette_shared" else 2e-6
        for name, value in scores.items():
            assert value == pytest.approx(record["candidates"][name][criterion], abs=tolerance), (criterion, name)
    # the benchmark's own criteria too, for every kept candidate
    extra = rescore_kept_candidates(out, toy_corpus[0], random_state=0, criteria=["knn_holdout", "agreement_ari"])
    assert set(extra["knn_holdout"]) == set(extra["agreement_ari"]) == set(record["candidates"])
    with pytest.raises(ValueError, match="not the training texts"):
        rescore_kept_candidates(out, toy_corpus[0][:-1])


def test_a_lexical_rescore_without_a_lexical_space_falls_back_on_the_embeddings(auto_trained, toy_corpus, monkeypatch):
    from hf_textcluster.choosing import criteria as criteria_module
    from training.bench import rescoring
    from training.bench.rescoring import rescore_kept_candidates

    # texts that share too few words for a lexical space: the vote falls back on the embeddings, as in training
    for module in (criteria_module, rescoring):
        monkeypatch.setattr(module, "lexical_space", lambda texts, random_state=0: None)
    _, out = auto_trained
    values = rescore_kept_candidates(out, toy_corpus[0], random_state=0, criteria=[DEFAULT_AUTO_CRITERION])
    assert all(np.isfinite(v) for v in values[DEFAULT_AUTO_CRITERION].values())


def test_the_default_train_command_runs_to_its_summary_and_names_the_served_clusters(
    tiny_encoder_dir, toy_corpus, tmp_path, capsys
):
    from hf_textcluster.cli import main
    from hf_textcluster.representation import BaseRepresentation, ClassTfidfRepresentation

    texts, labels = toy_corpus
    _write_texts(tmp_path / "texts.csv", texts, labels)
    out = tmp_path / "run"
    argv = ["train", "--input", str(tmp_path / "texts.csv"), "--encoder", str(tiny_encoder_dir)]
    argv += ["--output-dir", str(out), "--num-clusters", "3", "--max-steps", "2", "--per-device-train-batch-size", "16"]
    argv += ["--precision", "fp32", "--keep-checkpoints", "--save-steps", "1", "--signals", *SIGNALS]
    assert main(argv) == 0  # no --method: auto
    printed = capsys.readouterr().out
    # --keep-checkpoints holds under auto: each signal's run keeps its checkpoints
    for signal in SIGNALS:
        assert sorted(p.name for p in (out / "signals" / signal).glob("checkpoint-*")), signal
    model = AutoModel.from_pretrained(out)
    served = model.predict(texts)
    assert f"Saved the clusterer to {out}" in printed and " MB)" in printed
    assert f"Serves {model.config.served_partition} (" in printed
    # the names are those of the served clusters (not of a signal's head, which auto may not serve)
    expected = BaseRepresentation.labels(ClassTfidfRepresentation().extract(texts, served, 3))
    assert {int(k): v for k, v in model.config.id2label.items()} == expected
    assert all(name in printed for name in expected.values())


def test_auto_saves_the_training_texts_clusters_and_their_summary(auto_trained):
    from hf_textcluster.runs.clusterer import Clusterer
    from hf_textcluster.runs.folder import RunFolder

    result, out = auto_trained
    saved = RunFolder(out).read_assignments()
    assert np.array_equal(saved, result.served_labels)
    # from calibration's pass (the first saved model's, or the trained signal's)
    assert np.array_equal(result.cluster_names.assignments.clusters, saved)
    table = Clusterer.load(out).cluster_info()
    assert table["size"].tolist() == np.bincount(saved, minlength=3).tolist()


def test_auto_records_its_estimate_and_its_phases(auto_trained):
    _, out = auto_trained
    run = json.loads((out / "training_run.json").read_text())
    assert run["auto"]["estimate_seconds"] > 0
    seconds = run["seconds"]
    # each signal's own phases under its name, then the run's own after training
    for phase in ("data", "estimate", "contrastive/train", "contrastive/train/init", "self_training/train"):
        assert seconds[phase] >= 0, phase
    assert {"first_save", "candidates", "criteria", "serve"} <= set(seconds)
    assert seconds["contrastive/train"] >= seconds["contrastive/train/init"]
    signal = json.loads((out / "signals" / "contrastive" / "training_run.json").read_text())
    assert "frozen_layers" not in signal["training_overrides"]  # every layer trains unless --frozen-layers says
    assert set(signal["seconds"]) >= {"train", "train/init", "model"}  # a signal's own phases, without its name
