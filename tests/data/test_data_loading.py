"""load_texts, load_text_file, load_sample and validate_texts: formats and the error messages users see."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from data_test_utils import write_csv

from hf_textcluster.data import CORPORA, load_sample, load_text_file, load_texts
from hf_textcluster.modeling.validation import validate_texts


def test_validate_texts_accepts_sequences_and_keeps_strings():
    assert validate_texts(("a ", " b")) == ["a ", " b"]
    assert validate_texts(np.array(["x", "y"], dtype=object)) == ["x", "y"]
    assert validate_texts(t for t in ["g"]) == ["g"]


@pytest.mark.parametrize(
    "texts, error, pattern",
    [
        (None, TypeError, r"`texts` is None\. Pass a list of strings"),
        ("one text", TypeError, r"got a single str .*Wrap it in a list"),
        (42, TypeError, r"got int"),
        ([], ValueError, r"`texts` is empty"),
        (["ok", 3.5], TypeError, r"item 1 is float \(3\.5\)"),
        (["ok", None], TypeError, r"item 1 is NoneType .*missing values"),
        (["ok", "fine", "   "], ValueError, r"item 2 is empty or only whitespace"),
        (["", "ok", "\n"], ValueError, r"item 0 .*2 blank items in total, e\.g\. at indices \[0, 2\]"),
    ],
)
def test_validate_texts_errors(texts, error, pattern):
    with pytest.raises(error, match=pattern):
        validate_texts(texts)


def test_validate_texts_names_the_argument():
    with pytest.raises(TypeError, match="`queries` is None"):
        validate_texts(None, argument_name="queries")


def test_load_texts_with_and_without_labels():
    ds = load_texts(["b text", "a text", "c text"])
    assert ds.column_names == ["text"] and ds["text"] == ["b text", "a text", "c text"]
    ds = load_texts(["x", "y", "z", "w"], labels=[10, 2, 2, 0])
    assert ds.features["label"].names == ["0", "2", "10"]  # numeric order, not string order
    assert ds["label"] == [2, 1, 1, 0]
    ds = load_texts(["x", "y"], labels=["sports", "business"])
    assert ds.features["label"].names == ["business", "sports"] and ds["label"] == [1, 0]


def test_load_texts_label_errors():
    with pytest.raises(ValueError, match="2 entries but there are 3 texts"):
        load_texts(["a", "b", "c"], labels=[1, 2])
    # a missing label is a text left out of scoring (class id -1), not an error; none at all is one
    assert load_texts(["a", "b"], labels=[1, None])["label"] == [0, -1]
    with pytest.raises(ValueError, match="`labels` holds no label at all"):
        load_texts(["a", "b"], labels=[None, ""])
    with pytest.raises(TypeError, match="single str"):
        load_texts("a")


def test_load_csv_keeps_na_like_text(tmp_path):
    path = write_csv(tmp_path / "t.csv", ["id", "sentence", "topic"], [[1, "NA", "x"], [2, "None of it", "y"]])
    ds = load_text_file(path, text_column="sentence", label_column="topic")
    assert ds["text"] == ["NA", "None of it"] and ds.features["label"].names == ["x", "y"]


def test_load_tsv_jsonl_json_parquet(tmp_path):
    (tmp_path / "t.tsv").write_text("text\tlabel\nfirst, with comma\t1\nsecond\t2\n", encoding="utf-8")
    assert load_text_file(tmp_path / "t.tsv", label_column="label")["text"] == ["first, with comma", "second"]
    (tmp_path / "t.jsonl").write_text(
        "".join(json.dumps({"text": t, "cluster": c}) + "\n" for t, c in [("a b", 3), ("c d", 1)]), encoding="utf-8"
    )
    ds = load_text_file(tmp_path / "t.jsonl", label_column="cluster")
    assert ds["text"] == ["a b", "c d"] and ds.features["label"].names == ["1", "3"]
    (tmp_path / "t.json").write_text(json.dumps([{"text": "p"}, {"text": "q"}]), encoding="utf-8")
    assert load_text_file(tmp_path / "t.json")["text"] == ["p", "q"]
    pd.DataFrame({"body": ["u", "v"]}).to_parquet(tmp_path / "t.parquet")
    assert load_text_file(tmp_path / "t.parquet", text_column="body")["text"] == ["u", "v"]


def test_load_txt_one_text_per_line(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes('\ufefffirst line \r\nsecond, "quoted"\nthird\n'.encode())
    assert load_text_file(path)["text"] == ["first line ", 'second, "quoted"', "third"]
    path.write_text("first\n\nthird\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"Line 2 of .*t\.txt is blank"):
        load_text_file(path)


def test_load_text_file_errors(tmp_path):
    path = write_csv(tmp_path / "t.csv", ["sentence", "topic"], [["a", "x"]])
    with pytest.raises(
        ValueError, match=r"no column 'text'\. Available columns: \['sentence', 'topic'\]\. Pass text_column="
    ):
        load_text_file(path)
    with pytest.raises(ValueError, match=r"no column 'label'.*Pass label_column="):
        load_text_file(path, text_column="sentence", label_column="label")
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        load_text_file(tmp_path / "missing.csv")
    (tmp_path / "t.xlsx").write_bytes(b"")
    with pytest.raises(ValueError, match="Unsupported file type '.xlsx'"):
        load_text_file(tmp_path / "t.xlsx")
    (tmp_path / "n.jsonl").write_text('{"text": "ok"}\n{"text": 5}\n', encoding="utf-8")
    with pytest.raises(TypeError, match=r"Line 2 of .*n\.jsonl is int \(5\)"):
        load_text_file(tmp_path / "n.jsonl")


@pytest.mark.parametrize(
    "name,content,match",
    [
        ("empty.csv", b"", "is empty \\(0 bytes\\)"),
        ("latin1.csv", "text\ncaf\xe9 au lait\n".encode("latin-1"), "line 2: not UTF-8 .*save it as UTF-8"),
        ("tabs.csv", b"text\tlabel\nhello\t1\n", "looks tab-separated .*rename it to .tsv"),
        ("broken.jsonl", b'{"text": "ok"}\n{"text": \n', "line 2: not JSON"),
    ],
)
def test_unreadable_files_name_the_file_and_the_fix(name, content, match, tmp_path):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match) as info:
        load_text_file(path)
    assert str(path) in str(info.value)


def test_the_shipped_sample_loads_offline_without_a_data_folder(monkeypatch):
    from collections import Counter

    monkeypatch.delenv("HF_TEXTCLUSTER_DATA_DIR", raising=False)
    sample = load_sample()
    assert sample.features["label"].names == list(CORPORA["stackoverflow"].label_names)  # the tags, as the benchmark's
    assert len(sample) == 2000 and Counter(sample["label"]) == {k: 100 for k in range(20)}
    assert all(text.strip() for text in sample["text"]) and "CC BY-SA 3.0" in sample.info.license


def test_the_shipped_sample_is_rows_of_the_stackoverflow_corpus(data_dir):
    from hf_textcluster.data.readers import read_text_label_csv

    corpus = {(text, int(label) - 1) for text, label in read_text_label_csv(data_dir / "stackoverflow.csv")}
    sample = load_sample()
    assert all((text, label) in corpus for text, label in zip(sample["text"], sample["label"]))
