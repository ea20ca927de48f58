"""The benchmark's precomputed views (training/bench/precomputed.py): joined to a corpus row by row or by the file's
own text, their labels translated to the corpus' ids; the real files when the shared data folder is there."""

from __future__ import annotations

import logging
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from hf_textcluster.data import load_benchmark, load_texts
from hf_textcluster.data.provenance import benchmark_corpus, views_augmentation

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # training/ is a folder of the checkout, not installed
from tests.data.data_test_utils import write_csv  # noqa: E402
from training.bench.precomputed import load_with_views, training_data  # noqa: E402


def views(name, tmp_path, family):
    return load_with_views(name, family, tmp_path, cache_dir=tmp_path / "cache")


@pytest.fixture(scope="module")
def data_dir(data_dir_or_skip):
    return data_dir_or_skip


@pytest.fixture(scope="module")
def session_cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("hf_datasets_cache"))


# ------------------------------------------------------------------------------------------------ real corpora


def test_real_augmented_stackoverflow_is_row_aligned(data_dir, session_cache):
    plain = load_benchmark("stackoverflow", data_dir=data_dir, cache_dir=session_cache)
    ds = load_with_views("stackoverflow", "sccl_contextual", data_dir, cache_dir=session_cache)
    assert ds.column_names == ["text", "label", "text_aug1", "text_aug2"]
    assert ds["text"] == plain["text"] and ds["label"] == plain["label"]  # primary text and labels kept
    assert "sccl_contextual" in ds.info.description and "row-aligned: primary text" in ds.info.description
    assert ds[1]["text_aug1"] == "How do you page that collection with LINQ?"
    assert ds[1]["text_aug2"] == "how do you win a collection with linq?"
    changed = sum(a != t for a, t in zip(ds["text_aug1"], ds["text"]))
    assert changed > 0.9 * ds.num_rows


def test_real_augmented_googlenews_t_uses_the_files_own_text(data_dir, session_cache, caplog):
    plain = load_benchmark("googlenews_t", data_dir=data_dir, cache_dir=session_cache)
    with caplog.at_level(logging.WARNING, logger="training.bench.precomputed"):
        ds = load_with_views("googlenews_t", "sccl_contextual", data_dir, cache_dir=session_cache)
    assert "not row-aligned" in caplog.text and "own text" in caplog.text
    assert ds.num_rows == 11108 and ds.features["label"].names == plain.features["label"].names
    assert "not row-aligned" in ds.info.description and "row-aligned" not in plain.info.description
    assert ds[0]["text"] == "centrepoint winter white gala london"
    assert ds[0]["text_aug1"] == "centrepoint winter white gala glasses"
    assert "kensin" in " ".join(ds["text"][:200])  # Rakib's variant text ("kensington" truncated)
    # The labels are the primary GSDMM ids: every text found in the primary file has the same label there.
    primary = defaultdict(set)
    for text, label in zip(plain["text"], plain["label"]):
        primary[text].add(label)
    matched = [(primary[t], label) for t, label in zip(ds["text"], ds["label"]) if len(primary.get(t, ())) == 1]
    assert len(matched) > 9000 and all(labels == {label} for labels, label in matched)
    assert Counter(ds["label"]) == Counter(plain["label"])


def test_real_aecl_eda_has_one_view_and_no_ts(data_dir, session_cache):
    ds = load_with_views("tweet", "aecl_eda", data_dir, cache_dir=session_cache)
    plain = load_benchmark("tweet", data_dir=data_dir, cache_dir=session_cache)
    assert ds["text_aug2"] == ds["text"] == plain["text"] and ds["label"] == plain["label"]
    assert ds[0]["text_aug1"] == "brain fluid buildup runny delay giffords rehab"
    with pytest.raises(FileNotFoundError, match="AECL published no GoogleNews-TS"):
        load_with_views("googlenews_ts", "aecl_eda", data_dir, cache_dir=session_cache)


# --------------------------------------------------------------------------------------------- synthetic folders


def _stackoverflow_rows(n_per_class=2):
    return [[f"question {i} about topic {label}", str(label)] for label in range(1, 21) for i in range(n_per_class)]


def _write_stackoverflow(tmp_path, rows, aug_rows):
    """The corpus ``rows`` and its sccl_contextual views ``aug_rows`` (label, text, view 1, view 2) in ``tmp_path``."""
    write_csv(tmp_path / "stackoverflow.csv", ["text", "label"], rows)
    path = tmp_path / "augmented" / "sccl_contextual" / "stackoverflow.csv"
    write_csv(path, ["label", "text", "text1", "text2"], aug_rows)


def test_row_aligned_views_keep_primary_text_and_labels(tmp_path):
    rows = _stackoverflow_rows()
    aug_rows = [[str(21 - int(label)), text, f"v1 {text}", f"v2 {text}"] for text, label in rows]  # renumbered
    aug_rows[0][1] = "question 0 about topic 1 (other copy)"  # one text differs (Rakib's copy)
    _write_stackoverflow(tmp_path, rows, aug_rows)
    ds = views("stackoverflow", tmp_path, "sccl_contextual")
    assert ds["text"] == [r[0] for r in rows]
    assert [ds.features["label"].int2str(i) for i in ds["label"][:3]] == ["wordpress", "wordpress", "oracle"]
    assert ds[2]["text_aug1"] == "v1 question 0 about topic 2" and ds[2]["text_aug2"] == "v2 question 0 about topic 2"


def test_row_aligned_file_with_another_partition_is_rejected(tmp_path):
    rows = _stackoverflow_rows()
    aug_rows = [[str(i % 20 + 1), text, "a", "b"] for i, (text, _) in enumerate(rows)]
    _write_stackoverflow(tmp_path, rows, aug_rows)
    with pytest.raises(ValueError, match="different partition"):
        views("stackoverflow", tmp_path, "sccl_contextual")


def _googlenews_folder(tmp_path, family="sccl_contextual"):
    """A primary file in GSDMM order and an augmented file in Rakib's form: sorted by cluster, ids 1..K, some
    texts altered (and one whole class with no exact match, so the word-overlap stage is needed)."""
    clusters = {"65": "taylor swift gala", "96": "mourinho chelsea killer", "72": "golden globe johansson",
                "140": "storm cold florida", "89": "welker turnover patriots"}  # fmt: skip
    primary = [[f"{words} story {i} kensington", cid] for i in range(4) for cid, words in clusters.items()]
    write_csv(tmp_path / "googlenews_t.csv", ["text", "label"], primary)
    order = sorted(range(len(primary)), key=lambda i: int(primary[i][1]))  # stably sorted by cluster
    rakib_id = {cid: str(k + 1) for k, cid in enumerate(sorted(clusters, key=int))}
    aug = []
    for i in order:
        text, cid = primary[i]
        if i % 2 or cid == "140":
            text = text.replace("kensington", "kensin")  # Rakib's "lt"/"gt" truncation
        aug.append([rakib_id[cid], text, f"view1 {text}", f"view2 {text}"])
    if family == "aecl_eda":
        aug = [[label, text, view1] for label, text, view1, _ in aug]
        header = ["label", "text0", "text1"]
    else:
        header = ["label", "text", "text1", "text2"]
    write_csv(tmp_path / "augmented" / family / "googlenews_t.csv", header, aug)
    return primary, aug


def test_not_aligned_file_uses_own_text_and_translated_labels(tmp_path, caplog):
    primary, aug = _googlenews_folder(tmp_path)
    with caplog.at_level(logging.WARNING, logger="training.bench.precomputed"):
        ds = views("googlenews_t", tmp_path, "sccl_contextual")
    assert "not row-aligned" in caplog.text
    assert ds["text"] == [row[1] for row in aug]
    assert ds["text_aug1"] == [row[2] for row in aug]
    # Labels are the primary GSDMM ids of the same cluster, not Rakib's 1..K.
    names = ds.features["label"]
    primary_label = {text.replace("kensington", ""): label for text, label in primary}
    for text, label in zip(ds["text"], ds["label"]):
        assert names.int2str(label) == primary_label[text.replace("kensington", "").replace("kensin", "")]


def test_aecl_eda_own_text_second_view_is_the_text(tmp_path):
    _, aug = _googlenews_folder(tmp_path, family="aecl_eda")
    ds = views("googlenews_t", tmp_path, "aecl_eda")
    assert ds["text_aug1"] == [row[2] for row in aug] and ds["text_aug2"] == ds["text"]


def test_missing_augmented_file(tmp_path):
    write_csv(tmp_path / "tweet.csv", ["text", "label"], [["a tweet", "1"]])
    with pytest.raises(FileNotFoundError, match="augmented_dir="):
        views("tweet", tmp_path, "sccl_contextual")


def test_views_name_their_family_and_keep_the_corpus(tmp_path):
    """A training run records what the views are and which corpus they belong to, read from the Dataset."""
    rows = _stackoverflow_rows()
    aug_rows = [[label, text, f"v1 {text}", f"v2 {text}"] for text, label in rows]
    _write_stackoverflow(tmp_path, rows, aug_rows)
    ds = views("stackoverflow", tmp_path, "sccl_contextual")
    assert views_augmentation(ds) == "sccl_contextual" and benchmark_corpus(ds) == "stackoverflow"
    assert views_augmentation(ds.select(range(3))) == "sccl_contextual"
    assert views_augmentation(load_texts(["a", "b"])) is None


def test_training_data_joins_a_recipes_family_and_passes_an_augmenter_on(tmp_path):
    rows = _stackoverflow_rows()
    aug_rows = [[label, text, f"v1 {text}", f"v2 {text}"] for text, label in rows]
    _write_stackoverflow(tmp_path, rows, aug_rows)
    data, augmentation = training_data("sccl", "stackoverflow", "recipe", "cpu", str(tmp_path))
    assert augmentation is None and data["text_aug1"][0] == f"v1 {rows[0][0]}"
    assert training_data("sccl", "stackoverflow", "word_deletion", "cpu", str(tmp_path)) == (
        "stackoverflow",
        "word_deletion",
    )
    assert training_data("decmlm", "stackoverflow", "recipe", "cpu", str(tmp_path)) == ("stackoverflow", "recipe")


def test_unknown_family_and_no_folder(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="Unknown augmentation 'eda'.*sccl_contextual"):
        load_with_views("tweet", "eda", tmp_path)
    monkeypatch.delenv("HF_TEXTCLUSTER_DATA_DIR", raising=False)
    with pytest.raises(ValueError, match="needs the precomputed views"):
        load_with_views("tweet", "aecl_eda")
