"""The benchmark's `update` section: the held-out class chosen by a fixed rule, the split, the scores of the new
cluster, a tiny run end to end (resumable), and its table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # training/ is a folder of the checkout, not installed
from training.bench import precomputed, update  # noqa: E402
from training.bench.__main__ import main  # noqa: E402


def test_the_held_out_class_is_the_one_of_median_size():
    labels = np.array([0] * 5 + [1] * 9 + [2] * 2 + [3] * 7 + [4] * 7)
    assert update.held_out_class(labels) == 3  # sizes 2, 5, 7, 7, 9: the lower median, the smaller id of the tie
    train, later, held = update.split_for_update(labels, seed=0)
    assert held == 3 and not np.isin(train, later).any()
    assert (labels[train] != 3).all() and (labels[later] == 3).any()
    assert len(train) + len(later) == len(labels) - int(((labels == 3) & ~np.isin(np.arange(30), later)).sum())
    again = update.split_for_update(labels, seed=0)
    assert np.array_equal(again[0], train) and np.array_equal(again[1], later)


def test_new_cluster_scores_take_the_added_cluster_holding_most_of_the_class():
    final = np.array([0, 0, 3, 3, 3, 4, 1])
    held = np.array([False, False, True, True, False, True, False])
    assert update.new_cluster_scores(final, [3, 4], held) == pytest.approx((2 / 3, 2 / 3))
    assert update.new_cluster_scores(final, [], held) == (0.0, 0.0)


def test_a_tiny_run_writes_its_row_and_resumes(bench_store, tiny_encoder_dir, toy_corpus, monkeypatch, capsys):
    import datasets

    import hf_textcluster.data

    texts, labels = toy_corpus
    toy = datasets.Dataset.from_dict(
        {"text": texts, "label": labels},
        features=datasets.Features(
            {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["a", "b", "c"])}
        ),
    )
    monkeypatch.setattr(hf_textcluster.data, "load_benchmark", lambda *args, **kwargs: toy)
    monkeypatch.setattr(precomputed, "load_with_views", lambda *args, **kwargs: toy)  # the recipe's views: none here
    args = ["update", "--datasets", "stackoverflow", "--seeds", "0", "--encoder", str(tiny_encoder_dir)]
    small = ["--max-steps", "2", "--training", "per_device_train_batch_size=16"]
    assert main([*args, *small, "--batches", "2"]) == 0
    rows = json.loads(bench_store.RESULTS_JSON.read_text())["rows"]
    (row,) = rows
    assert row["section"] == "update" and row["held_out_class"] == 1 and row["variant"] == "check run"
    assert 0 < row["acc"] <= 1 and 0 < row["retrained_acc"] <= 1 and 0 <= row["precision"] <= 1
    assert main([*args, *small]) == 0  # stored: not measured again
    assert "stored (--redo" in capsys.readouterr().out


def test_the_table_has_one_line_per_method_and_corpus(bench_store):
    row = {
        "section": "update",
        "method": "sccl",
        "dataset": "stackoverflow",
        "k": 20,
        "run": "r",
        "acc": 0.7,
        "nmi": 0.6,
        "retrained_acc": 0.72,
        "retrained_nmi": 0.61,
        "new_clusters": 1,
        "precision": 0.8,
        "recall": 0.75,
    }
    store = {
        "rows": [{**row, "seed": 0}, {**row, "seed": 1, "variant": "check run"}],
        "runs": {"r": {"command": "bench.py", "date": "2026-11-25", "machine": "test", "versions": {}}},
    }
    table = update.render(store, store["rows"])
    assert "| sccl | stackoverflow | 20 | 70.0 / 60.0 | 72.0 / 61.0 | 1.0 | 0.80 | 0.75 | 1 |" in table
    assert update.render(store, [store["rows"][1]]) == []
