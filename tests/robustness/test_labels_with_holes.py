"""Labels with holes: a text without a known class is clustered but left out of every score, with one warning that
says how many; it is never a class of its own and never changes the K that `evaluate --baseline` takes from the
classes; labels that are all missing are one line naming the column. One rule (``missing_labels``) for loading,
evaluation, the report and the benchmark."""

from __future__ import annotations

import csv
import logging

import numpy as np
import pytest

from hf_textcluster.cli import main
from hf_textcluster.data import load_text_file, load_texts
from hf_textcluster.evaluation.metrics import clustering_scores
from hf_textcluster.modeling.input_checks import missing_labels


def _write(path, texts, labels):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows(zip(texts, labels))
    return path


def _holed(toy_corpus, holes=(5, 17, 60)):
    texts, labels = toy_corpus
    return texts, [("" if i in holes else f"topic{label}") for i, label in enumerate(labels)]


def test_missing_labels_is_the_one_rule():
    assert missing_labels(["a", "", "  ", None, float("nan"), "b", -1], encoded=False).tolist() == [
        False,
        True,
        True,
        True,
        True,
        False,
        False,  # a raw -1 is a class (e.g. a sentiment)
    ]
    assert missing_labels(np.array([0, -1, 2])).tolist() == [False, True, False]  # class ids: -1 is "no label"


def test_a_file_with_empty_labels_warns_once_and_keeps_them_out_of_the_classes(toy_corpus, tmp_path, caplog):
    texts, labels = _holed(toy_corpus)
    path = _write(tmp_path / "holes.csv", texts, labels)
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        dataset = load_text_file(path, label_column="label")
    said = [r.getMessage() for r in caplog.records if "no label" in r.getMessage()]
    assert said == [
        f"3 of 120 texts have no label in column 'label' of {path}: they are clustered but left out of "
        "the scores (never a class of their own)."
    ]
    assert dataset.features["label"].names == ["topic0", "topic1", "topic2"]
    assert [dataset["label"][i] for i in (5, 17, 60)] == [-1, -1, -1] and len(dataset) == 120


def test_scores_leave_the_unlabelled_texts_out(toy_corpus):
    rng = np.random.default_rng(0)
    labels = np.array(toy_corpus[1])
    clusters = rng.integers(0, 3, size=len(labels))
    holed = labels.copy()
    holed[[5, 17, 60]] = -1
    keep = holed != -1
    assert clustering_scores(holed, clusters) == clustering_scores(labels[keep], clusters[keep])
    with pytest.raises(ValueError, match="holds no label at all"):
        clustering_scores(np.full(4, -1), np.arange(4))


def test_all_labels_empty_is_one_line_naming_the_column(toy_corpus, tmp_path):
    path = _write(tmp_path / "empty.csv", toy_corpus[0], [""] * len(toy_corpus[0]))
    with pytest.raises(ValueError, match=rf"column 'label' of {path} holds no label at all \(120 empty values\)"):
        load_text_file(path, label_column="label")
    with pytest.raises(ValueError, match="`labels` holds no label at all"):
        load_texts(["a b", "c d"], [None, ""])


def test_evaluate_takes_k_from_the_classes_and_scores_the_labelled_texts(toy_corpus, tmp_path, capsys, caplog):
    texts, labels = _holed(toy_corpus)
    path = _write(tmp_path / "holes.csv", texts, labels)
    argv = ["evaluate", "--baseline", "tfidf-kmeans", "--input", str(path), "--label-column", "label"]
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        assert main(argv) == 0
    assert "K=3, 3 classes" in capsys.readouterr().out
    assert sum("3 of 120 texts have no label" in r.getMessage() for r in caplog.records) == 1
    empty = _write(tmp_path / "empty.csv", texts, [""] * len(texts))
    assert main([*argv[:4], str(empty), "--label-column", "label"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(err) == 1 and "column 'label'" in err[0] and "no label at all" in err[0]


def test_the_report_confusion_has_no_class_for_missing_labels():
    pytest.importorskip("plotly.graph_objects")
    from hf_textcluster.apps.report_sections import scores_line
    from hf_textcluster.figures.clusters import confusion_figure

    labels = np.array([0] * 10 + [1] * 10 + [-1] * 3)
    clusters = np.array([1] * 10 + [0] * 10 + [0, 1, 1])
    fig = confusion_figure(labels, clusters, ["a", "b"], {0: "x", 1: "y"})
    line = scores_line(labels, clusters)
    assert list(fig.data[0].y) == ["a", "b"]
    assert line.startswith("ACC 100.0") and "on 20 texts, 2 classes" in line and "3 texts without a label" in line


def test_tfidf_on_texts_without_words_names_the_input_and_column(tmp_path, capsys):
    texts = [c for c in "abcdefghij"] * 4  # one-character texts: scikit-learn's "empty vocabulary"
    path = _write(tmp_path / "short.csv", texts, [str(i % 2) for i in range(len(texts))])
    argv = ["evaluate", "--baseline", "tfidf-kmeans", "--input", str(path), "--label-column", "label"]
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(err) == 1 and err[0].startswith(f"error: --input {path} (column 'text'): `texts`: none of the 40"), err
    assert "embeddings-kmeans" in err[0]
