"""The label-free choice of what a trained model serves, and `hf-textcluster refine`: served after save / load, the
choice recorded, and no label ever used (the same outputs with the label column removed)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from transformers import AutoModel

import hf_textcluster  # noqa: F401
from hf_textcluster.choosing.serving import CANDIDATES, check_serve, serve_partition
from hf_textcluster.cli import main
from hf_textcluster.data import load_texts
from hf_textcluster.runs.train import train_clusterer

TRAIN = dict(
    per_device_train_batch_size=16, bf16=False, save_strategy="no", logging_steps=1, disable_tqdm=True, max_steps=3
)


def _write_csv(path, texts, labels=None):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"] if labels is not None else ["text"])
        for i, text in enumerate(texts):
            writer.writerow([text, labels[i]] if labels is not None else [text])


@pytest.fixture(scope="module")
def trained_sccl(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    texts, labels = toy_corpus
    out = tmp_path_factory.mktemp("sccl") / "run"
    train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(out),
        encoder=str(tiny_encoder_dir),
        training_overrides={**TRAIN, "serve": "head"},
        evaluate=False,
    )  # the paper's output, to refine
    return out


def test_train_serves_the_label_free_choice_by_default_and_records_it(tiny_encoder_dir, toy_corpus, tmp_path):
    """No ``serve`` given (``"auto"``): the end of training chooses among the candidates (from the texts' embeddings
    only: the choice's signature takes no labels; the refine command's test below removes the label column), serves
    the choice, calibrates it and records it."""
    texts, labels = toy_corpus
    out = tmp_path / "run"
    result = train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(out),
        encoder=str(tiny_encoder_dir),
        training_overrides=TRAIN,
        evaluate=False,
    )
    assert result.trainer.args.serve == "auto"
    serving = json.loads((out / "training_run.json").read_text())["serving"]
    assert serving["served"] in CANDIDATES and serving["criterion"]
    assert set(serving["scores"]) <= set(CANDIDATES) and serving["served"] in serving["scores"]
    assert serving == {**result.trainer.serving_choice}
    model = AutoModel.from_pretrained(out)
    assert model.config.served_partition == serving["served"] and model.is_calibrated
    # what was saved is what the trained model served at the end of training
    np.testing.assert_array_equal(model.predict(texts), result.model.predict(texts))


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
    card = generate_model_card(model, training_run={"method": "sccl", "serving": choice.to_dict()}, texts=texts)
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
    model.init_clusters_from_kmeans(np.repeat(centre[None], model.config.num_clusters, axis=0))
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

    from hf_textcluster.data import add_augmented_views
    from hf_textcluster.models.sccl import SCCLTrainer
    from hf_textcluster.training.trainer import ClusteringTrainingArguments

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
