"""The table of a model's clusters (`cluster_info`): from the summary saved with the model, or recomputed from texts;
what a config carries is read bounded and on one line; renaming clusters."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from transformers import AutoModel

import hf_textcluster  # noqa: F401
from hf_textcluster.editing import merge_clusters
from hf_textcluster.hub import save_pretrained
from hf_textcluster.representation import name_clusters, rename_clusters
from hf_textcluster.representation.summary import (
    COLUMNS,
    MAX_KEYWORD_CHARS,
    MAX_KEYWORDS,
    MAX_REPRESENTATIVE_TEXTS,
    MAX_TEXT_CHARS,
    Assignments,
    cluster_info,
    merge_summaries,
    read_cluster_summary,
)


@pytest.fixture(scope="module")
def named(toy_model, toy_corpus):
    """A calibrated, named copy of the toy model (its summary computed on every toy text)."""
    texts = toy_corpus[0]
    model = copy.deepcopy(toy_model).calibrate(texts)
    name_clusters(model, texts, sample_size=None)
    return model


def test_the_saved_summary_gives_the_table_after_reload(named, toy_corpus, tmp_path):
    texts = toy_corpus[0]
    named.save_pretrained(tmp_path)
    loaded = AutoModel.from_pretrained(tmp_path)
    table = cluster_info(loaded)  # nothing encoded: from config.json alone
    assert list(table.columns) == list(COLUMNS) and list(table["cluster"]) == [0, 1, 2]
    clusters = named.predict(texts)
    assert list(table["size"]) == np.bincount(clusters, minlength=3).tolist()
    assert list(table["name"]) == [named.config.id2label[k] for k in range(3)]
    confidence = named.predict_with_confidence(texts)["confidence"]
    for k, row in table.iterrows():
        assert row["mean_confidence"] == pytest.approx(confidence[clusters == k].mean(), abs=1e-4)
        assert 3 <= len(row["keywords"]) <= MAX_KEYWORDS and " · ".join(row["keywords"][:3]) == row["name"]
        assert 1 <= len(row["representative_texts"]) <= MAX_REPRESENTATIVE_TEXTS
    # the representative texts are the cluster's texts nearest its centre, nearest first
    out = named.predict_with_confidence(texts)
    members = np.flatnonzero(out["cluster"] == 0)
    nearest = [texts[i] for i in members[np.argsort(out["distance"][members], kind="stable")]]
    assert table.loc[0, "representative_texts"] == list(dict.fromkeys(nearest))[:MAX_REPRESENTATIVE_TEXTS]


def test_texts_recompute_the_table(named, toy_corpus):
    texts = toy_corpus[0][:30]
    table = cluster_info(named, texts)
    assert table["size"].sum() == 30
    assert np.array_equal(table["size"].to_numpy(dtype=int), np.bincount(named.predict(texts), minlength=3))
    assert all(t in texts for row in table["representative_texts"] for t in row)
    saved = cluster_info(named)
    assert saved["size"].sum() == len(toy_corpus[0])  # the saved summary is unchanged by the recomputation


def test_an_uncalibrated_model_reports_its_mean_probability(toy_model, toy_corpus):
    texts = toy_corpus[0]
    model = copy.deepcopy(toy_model)
    table = cluster_info(model, texts)
    probabilities = model.predict_proba(texts)
    clusters = probabilities.argmax(axis=1)
    for k, row in table.iterrows():
        assert row["mean_confidence"] == pytest.approx(probabilities[clusters == k, k].mean(), abs=1e-4)


def test_without_a_summary_texts_are_required(toy_model):
    model = copy.deepcopy(toy_model)
    vars(model.config).pop("cluster_summary", None)
    with pytest.raises(ValueError, match="`texts` is required"):
        cluster_info(model)


def test_an_edit_drops_the_summary_it_would_contradict(named, toy_corpus):
    merged = merge_clusters(named, [[0, 1]])
    assert read_cluster_summary(merged.config) is None
    with pytest.raises(ValueError, match="`texts` is required"):
        cluster_info(merged)
    assert cluster_info(merged, toy_corpus[0])["size"].sum() == len(toy_corpus[0])


def test_merging_summaries_without_texts_adds_sizes_and_weights_confidences():
    old = {
        "num_texts": 6,
        "clusters": [
            {"size": 1, "mean_confidence": 0.2, "keywords": ["a", "b"], "texts": ["s"]},
            {"size": 2, "mean_confidence": 0.9, "keywords": ["c"], "texts": ["t", "u"]},
            {"size": 3, "mean_confidence": 0.5, "keywords": ["b", "d"], "texts": ["v"]},
        ],
    }
    merged = merge_summaries(old, [0, 1, 0], 2)
    first = merged["clusters"][0]
    assert first["size"] == 4 and first["mean_confidence"] == pytest.approx((0.2 + 1.5) / 4, abs=1e-4)
    assert first["keywords"] == ["b", "a", "d"] and first["texts"] == ["v", "s"]  # the largest member first
    assert merged["clusters"][1] == old["clusters"][1]


def test_what_a_config_carries_is_bounded_and_on_one_line(named, tmp_path):
    named.save_pretrained(tmp_path)
    config_file = tmp_path / "config.json"
    config = json.loads(config_file.read_text())
    entry = config["cluster_summary"]["clusters"][0]
    entry["keywords"] = ["<b>x</b>\n# heading"] + [f"w{i}" for i in range(10_000)] + [5, None]
    entry["texts"] = ["\x1b[31mred\x1b[0m\nline two " + "y" * 100_000, {"a": 1}, "t2", "t3", "t4"]
    entry["size"], entry["mean_confidence"] = -4, 7.5
    config_file.write_text(json.dumps(config))
    table = cluster_info(AutoModel.from_pretrained(tmp_path))
    keywords, texts = table.loc[0, "keywords"], table.loc[0, "representative_texts"]
    assert len(keywords) == MAX_KEYWORDS and "\n" not in keywords[0]
    assert len(texts) == MAX_REPRESENTATIVE_TEXTS and all(len(t) <= MAX_TEXT_CHARS for t in texts)
    assert not any(ch in t for t in texts for ch in "\n\x1b")
    assert table["size"].isna()[0] and table["mean_confidence"].isna()[0]
    config["cluster_summary"]["clusters"] = config["cluster_summary"]["clusters"][:2]  # not this model's clusters
    config_file.write_text(json.dumps(config))
    with pytest.raises(ValueError, match="`texts` is required"):
        cluster_info(AutoModel.from_pretrained(tmp_path))


def test_the_outliers_have_keywords_of_their_own_and_no_name(toy_model, toy_corpus):
    model = copy.deepcopy(toy_model)
    far = ["kubernetes helm chart", "kubernetes pod helm"]  # words no toy text has
    texts = [*toy_corpus[0], *far]
    clusters = np.concatenate([model.predict(toy_corpus[0]), [-1, -1]])
    names = name_clusters(model, texts, assignments=Assignments(clusters), sample_size=None)
    assert set(names.names) == set(names.keywords) == {0, 1, 2}  # -1 is not named
    assert not {"kubernetes", "helm"} & {word for words in names.keywords.values() for word in words}
    table = cluster_info(model)
    outliers = table.iloc[0]
    assert outliers["cluster"] == -1 and outliers["name"] == "outliers" and outliers["size"] == 2
    # c-TF-IDF with the outliers as one more class: their words, the most frequent first
    assert sorted(outliers["keywords"][:2]) == ["helm", "kubernetes"]
    assert set(outliers["keywords"]) == {"kubernetes", "helm", "chart", "pod"}
    assert read_cluster_summary(model.config)["outlier_keywords"] == outliers["keywords"]
    assert outliers["representative_texts"] == far  # the outliers themselves, as BERTopic's topic -1 shows them


def test_the_outlier_row_is_read_bounded_and_an_older_summary_without_its_words_and_texts_loads(named, tmp_path):
    named.save_pretrained(tmp_path)
    config_file = tmp_path / "config.json"
    config = json.loads(config_file.read_text())
    summary = config["cluster_summary"]
    summary["outliers"] = 4
    summary["outlier_keywords"] = ["<b>x</b>\n# heading", "y" * 1000, *[f"w{i}" for i in range(10_000)], 5, None]
    summary["outlier_texts"] = ["a\n\x1b[31mred", "z" * 100_000, *[f"t{i}" for i in range(10_000)]]
    config_file.write_text(json.dumps(config))
    row = cluster_info(AutoModel.from_pretrained(tmp_path)).iloc[0]
    keywords, texts = row["keywords"], row["representative_texts"]
    assert len(keywords) == MAX_KEYWORDS and keywords[0] == "<b>x</b> # heading"  # escaped where it is shown
    assert all(len(word) <= MAX_KEYWORD_CHARS for word in keywords)
    assert len(texts) == MAX_REPRESENTATIVE_TEXTS and all(len(t) <= MAX_TEXT_CHARS for t in texts)
    assert not any(ch in t for t in texts for ch in "\n\x1b")
    del summary["outlier_keywords"], summary["outlier_texts"]  # a summary saved before the outliers had them
    config_file.write_text(json.dumps(config))
    row = cluster_info(AutoModel.from_pretrained(tmp_path)).iloc[0]
    assert row["cluster"] == -1 and row["size"] == 4 and row["keywords"] == row["representative_texts"] == []


def test_rename_clusters_sets_id2label_and_refuses_bad_names(named):
    model = copy.deepcopy(named)
    names = rename_clusters(model, {1: "refunds", "2": "billing"})
    assert names == {0: named.config.id2label[0], 1: "refunds", 2: "billing"}
    assert model.config.label2id["refunds"] == 1 and cluster_info(model).loc[1, "name"] == "refunds"
    with pytest.raises(ValueError, match="not a cluster of this model: give ids from 0 to 2"):
        rename_clusters(model, {3: "x"})
    with pytest.raises(ValueError, match="names must be unique"):
        rename_clusters(model, {0: "billing"})
    with pytest.raises(ValueError, match="1 to 100 characters"):
        rename_clusters(model, {0: "  "})
    assert model.config.id2label[0] == named.config.id2label[0]  # a refused rename changes nothing


def test_remote_code_loads_a_model_with_a_summary_and_ships_no_table_code(named, tmp_path):
    from transformers.dynamic_module_utils import get_class_from_dynamic_module

    save_pretrained(named, tmp_path, remote_code=True)
    config = json.loads((tmp_path / "config.json").read_text())
    remote_class = get_class_from_dynamic_module(config["auto_map"]["AutoModel"], str(tmp_path))
    remote = remote_class.from_pretrained(tmp_path)
    assert remote.config.cluster_summary == named.config.cluster_summary
    assert not hasattr(remote, "cluster_info")  # the table is the package's (Clusterer.cluster_info)
    assert cluster_info(remote).equals(cluster_info(named))


def test_a_summary_set_to_none_publishes_no_text(named, toy_corpus, tmp_path):
    model = copy.deepcopy(named)
    model.config.cluster_summary = None
    model.save_pretrained(tmp_path)
    saved = (tmp_path / "config.json").read_text()
    assert not any(text in saved for text in toy_corpus[0])
    with pytest.raises(ValueError, match="`texts` is required"):
        cluster_info(AutoModel.from_pretrained(tmp_path))
