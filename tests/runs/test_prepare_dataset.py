"""The data step of a run: views an augmenter makes, views a Dataset brings, and a recipe's precomputed views the
package does not read."""

from __future__ import annotations

import datasets

from hf_textcluster.data import load_texts
from hf_textcluster.models import get_method
from hf_textcluster.runs import train as runs

TEXTS = ["reset my password", "vpn drops at night", "printer jams again", "laptop will not boot"]


def with_views() -> datasets.Dataset:
    view = datasets.Value("string", id="sccl_contextual")
    features = datasets.Features({"text": datasets.Value("string"), "text_aug1": view, "text_aug2": view})
    columns = {"text": TEXTS, "text_aug1": [f"a {t}" for t in TEXTS], "text_aug2": [f"b {t}" for t in TEXTS]}
    return datasets.Dataset.from_dict(columns, features=features)


def test_a_dataset_with_views_trains_on_them_as_they_are():
    given = with_views()
    recipe = {"augmentation": "sccl_contextual"}
    assert runs._resolve_augmentation(get_method("sccl"), recipe, given, "recipe") is None
    prepared = runs.prepare_dataset(given, None)
    assert prepared["text_aug1"] == given["text_aug1"] and prepared["text_aug2"] == given["text_aug2"]
    assert runs.views_augmentation(prepared) == "sccl_contextual"  # what training_run.json records


def test_an_augmenter_makes_the_views_and_a_family_name_reads_no_file():
    plain = load_texts(TEXTS)
    assert runs.views_augmentation(runs.prepare_dataset(plain, "word_deletion")) == "word_deletion"
    assert runs.prepare_dataset(plain, "sccl_contextual").column_names == ["text"]  # precomputed: nothing to join
