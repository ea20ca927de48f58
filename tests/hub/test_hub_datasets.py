"""A benchmark ``DatasetDict`` pushed to and loaded back from the stand-in Hub server by repo id (the server is a
stand-in for the Hub, see tests/hub/hub_server.py). Uses the ``tweet`` benchmark when its CSV is available
(``$HF_TEXTCLUSTER_DATA_DIR`` or ../shared/data), else the toy corpus through ``load_texts``."""

from __future__ import annotations

import pytest
from hub_client import run_client, shared_data_dir

pytestmark = pytest.mark.timeout(600)

PUSH_AND_LOAD_DATASET = """
import datasets
from hf_textcluster.data import load_benchmark, load_texts

if PAYLOAD["data_dir"]:
    train = load_benchmark("tweet", data_dir=PAYLOAD["data_dir"])
else:
    train = load_texts(PAYLOAD["texts"], PAYLOAD["labels"])
commit = datasets.DatasetDict({"train": train}).push_to_hub("org/short-texts")
back = datasets.load_dataset("org/short-texts")
emit({
    "splits": sorted(back),
    "rows": back["train"].num_rows,
    "same_texts": back["train"]["text"] == train["text"],
    "same_labels": back["train"]["label"] == train["label"],
    "same_features": back["train"].features == train.features,
    "label_names": back["train"].features["label"].names,
    "commit_url": str(commit),
})
"""


def test_dataset_dict_round_trip_by_repo_id(hub_server, hub_env, toy_corpus):
    data_dir = shared_data_dir()
    texts, labels = toy_corpus
    payload = {"data_dir": str(data_dir) if data_dir else None, "texts": texts, "labels": labels}
    result = run_client(PUSH_AND_LOAD_DATASET, hub_env, payload)
    assert result["splits"] == ["train"]
    assert result["same_texts"] and result["same_labels"] and result["same_features"]
    assert result["rows"] == (2472 if data_dir else len(texts))
    parquet_puts = [r for r in hub_server.state.requests("PUT", r"^/__lfs__/") if r["bytes_in"] > 0]
    assert parquet_puts, "the parquet shard was not uploaded over HTTP"
    downloads = hub_server.state.requests("GET", r"^/datasets/org/short-texts/resolve/[0-9a-f]{40}/data/.*\.parquet$")
    assert downloads and downloads[-1]["bytes_out"] > 0
