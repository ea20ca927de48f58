"""Your own labelled data, evaluated: `evaluate --input ... --label-column ...` (baselines and trained models), the
metrics as an `evaluate` module, `train --input --label-column` scores, and the run's own texts in its card / push."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from hf_textcluster.cli import main
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.models.building import from_encoder_pretrained

TEAMS = ["db", "code", "ui"]


def write_labelled(path, texts, labels):
    """The toy corpus as a user's file: texts in `body`, string classes in `team`, by the suffix's format."""
    import pandas as pd

    frame = pd.DataFrame({"body": texts, "team": [TEAMS[y] for y in labels]})
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path)
    return path


def scores_of(line: str) -> dict[str, float]:
    return {k.lower(): float(v) for k, v in re.findall(r"\b(ACC|NMI|ARI|PURITY) (-?[\d.]+)", line)}


@pytest.fixture(scope="module")
def labelled_csv(toy_corpus, tmp_path_factory):
    texts, labels = toy_corpus
    return write_labelled(tmp_path_factory.mktemp("own") / "tickets.csv", texts, labels)


@pytest.fixture(scope="module")
def own_run(tiny_encoder_dir, labelled_csv, tmp_path_factory):
    """`hf-textcluster train --input tickets.csv --label-column team` (no --num-clusters) on the tiny encoder, and
    what it printed."""
    import contextlib
    import io

    out_dir = tmp_path_factory.mktemp("runs") / "tickets"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(
            [
                "train",
                "--method",
                "sccl",
                "--input",
                str(labelled_csv),
                "--text-column",
                "body",
                "--label-column",
                "team",
                "--encoder",
                str(tiny_encoder_dir),
                "--augmentation",
                "word_deletion",
                "--output-dir",
                str(out_dir),
                "--max-steps",
                "2",
                "--per-device-train-batch-size",
                "16",
                "--precision",
                "fp32",
                "--save-strategy",
                "no",
                "--disable-tqdm",
                "true",
            ]
        )
    assert code == 0
    return out_dir, stdout.getvalue()


# ----- evaluate --input -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "suffix,method", [(".csv", "tfidf-kmeans"), (".jsonl", "bow-kmeans"), (".parquet", "tfidf-kmeans")]
)
def test_evaluate_a_baseline_on_your_own_labelled_file(suffix, method, toy_corpus, tmp_path, capsys):
    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.runs.baselines import make_baseline

    texts, labels = toy_corpus
    data = write_labelled(tmp_path / f"tickets{suffix}", texts, labels)
    assert (
        main(
            ["evaluate", "--input", str(data), "--text-column", "body", "--label-column", "team", "--baseline", method]
        )
        == 0
    )
    header, scores = capsys.readouterr().out.strip().splitlines()[:2]
    assert header.startswith(f"{method} on {data} (N=120, K=3, 3 classes")  # K: the number of distinct labels
    expected = clustering_scores(labels, make_baseline(method, 3, random_state=0).fit_predict(texts))
    assert scores_of(scores) == {k: round(100 * v, 1) for k, v in expected.items()}


def test_evaluate_your_file_with_another_k(labelled_csv, capsys):
    assert (
        main(
            [
                "evaluate",
                "--input",
                str(labelled_csv),
                "--text-column",
                "body",
                "--label-column",
                "team",
                "--baseline",
                "tfidf-kmeans",
                "--num-clusters",
                "5",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "(N=120, K=5, 3 classes" in out and "ACC" in out and "NMI" in out


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            ["--dataset", "tweet", "--input", "{csv}", "--label-column", "team"],
            "exactly one of --dataset .* or --input",
        ),
        ([], "exactly one of --dataset .* or --input"),
        (["--input", "{csv}", "--text-column", "body"], "evaluate --input needs --label-column .*ACC / NMI"),
        (["--dataset", "tweet", "--label-column", "team"], "--label-column apply to --input"),
        (["--input", "{csv}", "--label-column", "topic", "--text-column", "body"], "no column 'topic'.*'team'"),
    ],
)
def test_evaluate_input_errors_are_one_clear_line(argv, message, labelled_csv, capsys):
    argv = [arg.replace("{csv}", str(labelled_csv)) for arg in argv]
    assert main(["evaluate", "--baseline", "tfidf-kmeans", *argv]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and len(err.strip().splitlines()) == 1, err


def test_evaluate_a_trained_model_on_your_own_labelled_file(own_run, labelled_csv, capsys):
    out_dir, train_out = own_run
    assert (
        main(
            [
                "evaluate",
                "--model",
                str(out_dir),
                "--input",
                str(labelled_csv),
                "--text-column",
                "body",
                "--label-column",
                "team",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith(f"{out_dir} on {labelled_csv} (N=120, K=3, 3 classes")
    head, kmeans = scores_of(lines[1]), scores_of(lines[2])
    assert set(head) == {"acc", "nmi", "ari", "purity"} and lines[2].startswith("k-means on embeddings")
    # the same model on the same texts: the scores `train` printed at its end
    trained = {line.split(":")[0].strip(): scores_of(line) for line in train_out.splitlines() if ": ACC" in line}
    assert trained["cluster head"] == {k: head[k] for k in ("acc", "nmi", "ari")}
    assert trained["k-means on embeddings"] == {k: kmeans[k] for k in ("acc", "nmi", "ari")}

    assert (
        main(
            [
                "evaluate",
                "--model",
                str(out_dir),
                "--input",
                str(labelled_csv),
                "--text-column",
                "body",
                "--label-column",
                "team",
                "--num-clusters",
                "4",
            ]
        )
        == 2
    )
    assert "has 3 clusters" in capsys.readouterr().err


# ----- the metrics as an `evaluate` module ------------------------------------------------------------------------
def test_the_metric_script_loads_offline_and_scores_like_clustering_scores():
    import os

    import evaluate
    import numpy as np

    from hf_textcluster.evaluation.metrics import clustering_metric_path, clustering_scores, load_clustering_metric

    assert os.environ["HF_HUB_OFFLINE"] == "1"
    rng = np.random.default_rng(0)
    references = rng.integers(0, 4, 200)
    predictions = np.where(rng.random(200) < 0.7, (references + 1) % 4, rng.integers(0, 6, 200))
    expected = clustering_scores(references, predictions)
    metric = evaluate.load(clustering_metric_path())
    assert metric.compute(predictions=predictions, references=references) == expected
    assert list(expected) == ["acc", "nmi", "ari", "purity"]
    named = [TEAMS[r % 3] + str(r) for r in references]  # string classes, integer clusters
    assert load_clustering_metric().compute(predictions=predictions, references=named) == clustering_scores(
        named, predictions
    )
    assert load_clustering_metric().compute(predictions=[1, 1, 0], references=[0, 0, 1]) == {
        "acc": 1.0,
        "nmi": 1.0,
        "ari": 1.0,
        "purity": 1.0,
    }


def test_the_trainer_evaluation_goes_through_the_metric_with_the_same_keys(tiny_encoder_dir, toy_corpus, monkeypatch):
    import numpy as np

    import hf_textcluster.training.evaluation as evaluation_module
    from hf_textcluster import SCCLModel
    from hf_textcluster.evaluation.metrics import clustering_scores, load_clustering_metric

    texts, labels = toy_corpus
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, texts)
    loads = []
    monkeypatch.setattr(
        evaluation_module,
        "load_clustering_metric",
        lambda: loads.append(1) or load_clustering_metric(),
    )
    metrics = evaluation_module.evaluate_clusterer(model, texts, labels, random_state=0)
    assert loads == [1]
    assert list(metrics) == [
        "clusters_used",
        "acc",
        "nmi",
        "ari",
        "purity",
        "kmeans_acc",
        "kmeans_nmi",
        "kmeans_ari",
        "kmeans_purity",
    ]
    head = model.predict(texts)
    assert {k: metrics[k] for k in ("acc", "nmi", "ari", "purity")} == pytest.approx(clustering_scores(labels, head))
    assert metrics["clusters_used"] == float(len(np.unique(head)))
    assert evaluation_module.evaluate_clusterer(model, texts, None) == {"clusters_used": metrics["clusters_used"]}


def test_umap_kmeans_scores_the_partition_recluster_umap_serves(tiny_encoder_dir, toy_corpus):
    """``umap_kmeans=True`` adds ``umap_kmeans_*``: the scores of ``fit_kmeans(init="umap")`` on the embeddings (what
    ``recluster --kmeans-init umap`` serves), nothing else changed."""
    from hf_textcluster import SCCLModel
    from hf_textcluster.editing.kmeans import fit_kmeans
    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.training.evaluation import evaluate_clusterer

    texts, labels = toy_corpus
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, texts)
    plain = evaluate_clusterer(model, texts, labels, random_state=0)
    with_umap = evaluate_clusterer(model, texts, labels, random_state=0, umap_kmeans=True)
    served = fit_kmeans(model.embed(texts), 3, random_state=0, init="umap").labels_
    assert {k: v for k, v in with_umap.items() if not k.startswith("umap_")} == plain
    assert {k[len("umap_kmeans_") :]: v for k, v in with_umap.items() if k.startswith("umap_")} == pytest.approx(
        clustering_scores(labels, served)
    )


def test_the_metric_script_is_package_data_of_the_wheel():
    """The script sits in a package folder (setuptools packs every ``hf_textcluster*`` package's modules)."""
    from setuptools import find_packages

    from hf_textcluster.evaluation.metrics import clustering_metric_path

    root = Path(__file__).resolve().parents[2]
    folder = Path(clustering_metric_path())
    assert (folder / "clustering_metrics.py").is_file()
    package = ".".join(folder.relative_to(root).parts)
    assert package in find_packages(str(root), include=["hf_textcluster*"])


# ----- train --input --label-column -------------------------------------------------------------------------------
def test_train_on_your_labelled_file_reports_scores_and_records_the_file(own_run, labelled_csv):
    out_dir, out = own_run
    assert "Scores against the labels of column 'team'" in out
    assert re.search(r"cluster head +: ACC [\d.]+  NMI [\d.]+", out)
    assert re.search(r"k-means on embeddings: ACC [\d.]+  NMI [\d.]+", out)
    run = json.loads((out_dir / "training_run.json").read_text())
    assert run["input"] == {"path": str(labelled_csv.resolve()), "text_column": "body", "label_column": "team"}
    assert "eval_acc" in run["metrics"] and "eval_nmi" in run["metrics"]
    assert json.loads((out_dir / "config.json").read_text())["num_clusters"] == 3  # the number of classes


# ----- card / push read the run's own texts -----------------------------------------------------------------------
def test_card_and_push_find_the_run_own_texts(own_run, tmp_path, monkeypatch, capsys):
    import huggingface_hub

    from hf_textcluster.hub.push import push_model_dir

    run_dir = tmp_path / "run"
    shutil.copytree(own_run[0], run_dir)
    assert main(["card", "--model", str(run_dir)]) == 0
    card = capsys.readouterr().out
    assert "Keywords not computed" not in card and "| share of training texts | top keywords |" in card
    assert "--input tickets.csv" in card and "--text-column body" in card and "--label-column team" in card
    assert "**Training data:** 120 texts of the file `tickets.csv`, trained on two augmented views" in card
    assert "(`word_deletion` views); 120 of its texts give the keywords below" in card

    uploaded = {}

    class FakeApi:  # what push would upload, without a Hub
        def __init__(self, token=None):
            pass

        def create_repo(self, repo_id, **kwargs):
            return type("RepoUrl", (), {"repo_id": repo_id})()

        def upload_folder(self, *, folder_path, **kwargs):
            for path in Path(folder_path).iterdir():
                uploaded[path.name] = path.read_text(encoding="utf-8") if path.suffix in (".md", ".json") else None
            return "commit"

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    assert push_model_dir(run_dir, "org/tickets", label_clusters=True) == "commit"
    assert "Keywords not computed" not in uploaded["README.md"]
    pushed_run = json.loads(uploaded["training_run.json"])
    assert pushed_run["input"]["path"] == "tickets.csv"  # its name only, not the user's folders

    gone = tmp_path / "moved-away.csv"  # as if the user had moved the file
    run = json.loads((run_dir / "training_run.json").read_text())
    run["input"]["path"] = str(gone)
    (run_dir / "training_run.json").write_text(json.dumps(run))
    with pytest.warns(UserWarning, match="is no longer there"):
        assert main(["card", "--model", str(run_dir)]) == 0
    card = capsys.readouterr().out
    assert f"Keywords not computed: the run's input file {gone} is no longer there" in card
