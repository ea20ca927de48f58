"""The label-free choice of what a trained model serves, and `hf-textcluster refine`: served after save / load, the
choice recorded, and no label ever used (the same outputs with the label column removed)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch
from transformers import AutoModel

import hf_textcluster  # noqa: F401
from hf_textcluster import train_clusterer
from hf_textcluster.choosing.serving import serve_partition
from hf_textcluster.cli import main
from hf_textcluster.data import load_texts
from hf_textcluster.editing.clusters import init_clusters_from_kmeans
from hf_textcluster.modeling.input_checks import CANDIDATES, check_serve
from hf_textcluster.runs.record import RunRecord

TRAIN = dict(
    per_device_train_batch_size=16, bf16=False, save_strategy="no", logging_steps=1, disable_tqdm=True, max_steps=3
)


def _write_csv(path, texts, labels=None):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"] if labels is not None else ["text"])
        for i, text in enumerate(texts):
            writer.writerow([text, labels[i]] if labels is not None else [text])


def _train_sccl(encoder, corpus, out, **overrides):
    texts, labels = corpus
    return train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(out),
        encoder=str(encoder),
        training_overrides={**TRAIN, **overrides},
        evaluate=False,
    )


@pytest.fixture(scope="module")
def trained_sccl(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("sccl") / "run"
    _train_sccl(tiny_encoder_dir, toy_corpus, out, serve="head")  # the paper's output, to refine
    return out


def test_train_serves_the_label_free_choice_by_default_and_records_it(tiny_encoder_dir, toy_corpus, tmp_path):
    """No ``serve`` given (``"auto"``): the end of training chooses among the candidates (from the texts' embeddings
    only: the choice's signature takes no labels; the refine command's test below removes the label column), serves
    the choice, calibrates it and records it."""
    texts = toy_corpus[0]
    out = tmp_path / "run"
    result = _train_sccl(tiny_encoder_dir, toy_corpus, out)
    assert result.trainer.args.serve == "auto"
    serving = json.loads((out / "training_run.json").read_text())["serving"]
    assert serving["served"] in CANDIDATES and serving["criterion"]
    assert set(serving["scores"]) <= set(CANDIDATES) and serving["served"] in serving["scores"]
    assert serving == {**result.trainer.serving_choice}
    model = AutoModel.from_pretrained(out)
    assert model.config.served_partition == serving["served"] and model.is_calibrated
    # what was saved is what the trained model served at the end of training
    np.testing.assert_array_equal(model.predict(texts), result.model.predict(texts))
    # the choice's served clusters of the training texts (which naming reads) are the served model's
    np.testing.assert_array_equal(result.trainer.served_labels, model.predict(texts))


def test_the_choice_calibrates_and_names_from_its_own_pass(tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch):
    """After training, the choice encodes the training texts once; calibration and naming take what they need from
    that pass, and come out as encoding the texts again gives."""
    from hf_textcluster.modeling.modeling_utils import TextClusteringPreTrainedModel
    from hf_textcluster.representation import name_clusters

    texts = toy_corpus[0]
    passes = []
    encode = TextClusteringPreTrainedModel._encode_texts

    def counting(self, batch_texts, *args, **kwargs):
        passes.append(len(batch_texts))
        return encode(self, batch_texts, *args, **kwargs)

    monkeypatch.setattr(TextClusteringPreTrainedModel, "_encode_texts", counting)
    out = tmp_path / "run"
    result = _train_sccl(tiny_encoder_dir, toy_corpus, out, health_check_steps=0)
    # the k-means start's pass and the choice's: calibration and naming encode nothing
    assert passes == [len(texts), len(texts)]
    monkeypatch.setattr(TextClusteringPreTrainedModel, "_encode_texts", encode)
    model, seed, precision = AutoModel.from_pretrained(out), result.trainer.args.seed, result.trainer.precision
    again = AutoModel.from_pretrained(out)
    again.calibrate(texts, random_state=seed, precision=precision)
    for name, value in model.calibration.state_dict().items():
        torch.testing.assert_close(value, again.calibration.state_dict()[name], rtol=1e-4, atol=1e-5)
    assert name_clusters(again, texts, random_state=seed, precision=precision).names == {
        int(k): v for k, v in model.config.id2label.items()
    }


def test_refine_command_serves_the_choice_and_ignores_the_label_column(trained_sccl, toy_corpus, tmp_path, capsys):
    texts, labels = toy_corpus
    _write_csv(tmp_path / "labelled.csv", texts, labels)
    _write_csv(tmp_path / "plain.csv", texts)
    served = []
    for name in ("labelled", "plain"):
        out = tmp_path / f"refined-{name}"
        assert (
            main(
                [
                    "refine",
                    "--model",
                    str(trained_sccl),
                    "--input",
                    str(tmp_path / f"{name}.csv"),
                    "--output-dir",
                    str(out),
                ]
            )
            == 0
        )
        model = AutoModel.from_pretrained(out)
        run = json.loads((out / "training_run.json").read_text())
        assert run["serving"]["served"] == model.config.served_partition
        assert run["method"] == "sccl"  # the training record is kept
        served.append((model.config.served_partition, model.predict(texts)))
    assert served[0][0] == served[1][0]
    np.testing.assert_array_equal(served[0][1], served[1][1])
    printed = capsys.readouterr().out
    assert "now serves its" in printed and "chosen by" in printed


def test_refine_command_serves_a_named_partition(trained_sccl, toy_corpus, tmp_path):
    texts, _ = toy_corpus
    _write_csv(tmp_path / "plain.csv", texts)
    out = tmp_path / "kmeans"
    assert (
        main(
            [
                "refine",
                "--model",
                str(trained_sccl),
                "--input",
                str(tmp_path / "plain.csv"),
                "--serve",
                "kmeans",
                "--output-dir",
                str(out),
            ]
        )
        == 0
    )
    model = AutoModel.from_pretrained(out)
    assert model.config.served_partition == "kmeans" and model.config.refined_head_dim == 0
    assert model.is_calibrated


def test_serve_is_checked(trained_sccl):
    with pytest.raises(ValueError, match="`serve` must be one of"):
        check_serve("best")
    model = AutoModel.from_pretrained(trained_sccl)
    with pytest.raises(ValueError, match="`candidates` must be one of"):
        serve_partition(
            model, np.zeros((4, model.config.encoder.hidden_size), dtype=np.float32), candidates=("head", "oracle")
        )


def test_the_card_says_what_is_served_and_how_it_was_chosen(trained_sccl, toy_corpus, tmp_path):
    from hf_textcluster.hub.model_card import generate_model_card

    texts, _ = toy_corpus
    model = AutoModel.from_pretrained(trained_sccl)
    assert "**Served partition:** `head`: the method's own cluster head" in generate_model_card(model, texts=texts)
    choice = serve_partition(model, model.embed(texts), candidates=("head", "kmeans", "kmeans+refined"))
    model.calibrate(texts)
    card = generate_model_card(model, training_run=RunRecord(method="sccl", serving=choice.to_dict()), texts=texts)
    line = next(row for row in card.splitlines() if row.startswith("- **Served partition:**"))
    assert f"`{choice.served}`" in line and "chosen without labels by" in line
    assert all(name in line for name in choice.scores)
    if choice.served.endswith("+refined"):
        assert "refined by iterative classification" in line


def test_a_collapsed_head_is_not_refined_and_the_choice_serves_another_partition(trained_sccl, toy_corpus):
    """A head that puts every text in one cluster (every centre the same) has no partition to refine: the choice
    leaves its refined candidate out instead of failing at the end of training, and serves a real partition."""
    import torch

    texts, _ = toy_corpus
    model = AutoModel.from_pretrained(trained_sccl)
    embeddings = model.embed(texts)
    with torch.no_grad():
        centre = model.kmeans_features(torch.from_numpy(embeddings)).mean(0).numpy()
    init_clusters_from_kmeans(model, np.repeat(centre[None], model.config.num_clusters, axis=0))
    assert np.unique(model.predict(texts)).size == 1
    with pytest.raises(ValueError, match="only one cluster"):
        serve_partition(model, embeddings, serve="head+refined")
    choice = serve_partition(model, embeddings)
    assert "head" in choice.scores and "head+refined" not in choice.scores
    assert choice.served != "head" and np.unique(model.predict(texts)).size > 1


def test_training_a_model_that_serves_a_refined_partition_trains_the_methods_head(trained_sccl, toy_corpus, tmp_path):
    """The losses train the method's head: training continues from it (a refined head in front would take its
    gradients), and the end of training sets what is served again."""
    import torch

    from hf_textcluster import SCCLTrainer
    from hf_textcluster.data import add_augmented_views
    from hf_textcluster.training.arguments import ClusteringTrainingArguments

    texts, labels = toy_corpus
    model = AutoModel.from_pretrained(trained_sccl)
    serve_partition(model, model.embed(texts), serve="kmeans+refined")
    assert model.config.refined_head_dim
    centroids = model.cluster_head.centroids.detach().clone()
    args = ClusteringTrainingArguments(output_dir=str(tmp_path / "more"), serve="head", **TRAIN)
    dataset = add_augmented_views(load_texts(texts, labels), "word_deletion")
    SCCLTrainer(model=model, args=args, train_dataset=dataset).train()
    assert not torch.equal(centroids, model.cluster_head.centroids.detach())
    assert model.config.refined_head_dim == 0 and model.config.served_partition == "head"


def test_serving_the_head_after_a_refined_partition_serves_and_records_the_head(trained_sccl, toy_corpus, tmp_path):
    """`refine --serve head` on a model serving a refined partition: config.json, training_run.json and the printed
    line all say `head`, and the model predicts what its method's head does; running it again changes nothing."""
    import torch

    texts, _ = toy_corpus
    _write_csv(tmp_path / "plain.csv", texts)
    refined = tmp_path / "refined"
    model = AutoModel.from_pretrained(trained_sccl)
    serve_partition(model, model.embed(texts), serve="kmeans+refined")
    model.save_pretrained(refined)
    assert AutoModel.from_pretrained(refined).config.served_partition == "kmeans+refined"
    for _ in range(2):
        argv = ["refine", "--model", str(refined), "--input", str(tmp_path / "plain.csv"), "--serve", "head"]
        assert main(argv) == 0
        model = AutoModel.from_pretrained(refined)
        assert model.config.served_partition == "head" and model.config.refined_head_dim == 0
        assert json.loads((refined / "training_run.json").read_text())["serving"]["served"] == "head"
        embeddings = torch.from_numpy(model.embed(texts))
        with torch.no_grad():
            head = model.head_probabilities(embeddings).argmax(-1).numpy()
        assert np.array_equal(model.predict(texts), head)


def test_refine_refuses_degenerate_texts_as_train_does_and_names_the_input(trained_sccl, toy_corpus, tmp_path, capsys):
    copies, few = tmp_path / "copies.csv", tmp_path / "few.csv"
    _write_csv(copies, [toy_corpus[0][0]] * 40)
    _write_csv(few, toy_corpus[0][:2])
    for path, expected in (
        (copies, r"`num_clusters` \(3\) is larger than the number of distinct texts \(1 of 40"),
        (few, r"`num_clusters` \(3\) is larger than the number of texts \(2\)"),
    ):
        argv = ["refine", "--model", str(trained_sccl), "--input", str(path), "--output-dir", str(tmp_path / "out")]
        assert main(argv) == 2
        lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
        assert len(lines) == 1 and lines[0].startswith(f"error: --input {path}:"), lines
        err = lines[0]
        import re

        assert re.search(expected, err), err
    assert not (tmp_path / "out").exists()


def test_refine_warns_when_its_texts_look_unlike_the_models(trained_sccl, tmp_path, caplog):
    import logging
    import random

    rng = random.Random(0)
    # texts of no word the model saw: nearly all outliers for its calibration
    texts = [" ".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 12))) for _ in range(200)]
    _write_csv(tmp_path / "other.csv", texts)
    model = AutoModel.from_pretrained(trained_sccl)
    assert model.is_calibrated
    argv = ["refine", "--model", str(trained_sccl), "--input", str(tmp_path / "other.csv")]
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        assert main([*argv, "--output-dir", str(tmp_path / "out"), "--serve", "head"]) == 0
    assert any("are outliers for the model's current calibration" in r.getMessage() for r in caplog.records)


def test_the_umap_candidates_serve_umaps_own_clusters(toy_model, monkeypatch):
    """``umap_kmeans`` (and its refinement) start from the clusters k-means found in the UMAP space, not from the
    nearest of their means in the embedding space (which moves texts between clusters)."""
    import hf_textcluster.choosing.serving as serving
    from hf_textcluster.choosing.serving import candidate_partitions, partition_features
    from hf_textcluster.editing.kmeans import fit_kmeans

    embeddings = np.random.default_rng(0).normal(size=(200, toy_model.config.encoder.hidden_size)).astype(np.float32)
    features = partition_features(toy_model, embeddings)
    fitted = fit_kmeans(features, toy_model.config.num_clusters, random_state=0, init="umap")
    assert (fitted.groups_ != fitted.labels_).any()  # on these points the two differ: the test can tell them apart
    given = {}
    for name in ("distil_partition", "refine_partition"):
        original = getattr(serving, name)

        def spy(features, labels, *args, _name=name, _original=original, **kwargs):
            given[_name] = np.asarray(labels).copy()
            return _original(features, labels, *args, **kwargs)

        monkeypatch.setattr(serving, name, spy)
    partitions, how = candidate_partitions(
        toy_model, embeddings, candidates=("umap_kmeans", "umap_kmeans+refined"), random_state=0
    )
    np.testing.assert_array_equal(given["distil_partition"], fitted.groups_)
    np.testing.assert_array_equal(given["refine_partition"], fitted.groups_)
    np.testing.assert_array_equal(partitions["umap_kmeans"], how["umap_kmeans"].labels)
