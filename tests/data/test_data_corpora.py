"""Parsers of the raw public formats, on tiny files written in those formats."""

from __future__ import annotations

import json

import pytest

from hf_textcluster.data import BENCHMARKS, CORPORA, parse_json_lines, parse_label_tab_text, parse_line_aligned
from hf_textcluster.data.corpora import read_text_label_csv, resolve_benchmark_name


def test_line_aligned_strips_bom_and_terminators_but_keeps_text(tmp_path):
    texts = tmp_path / "X.txt"
    labels = tmp_path / "X_gnd.txt"
    # BOM on the first line, a trailing space, a TAB inside a title, a CRLF line, quotes, no final newline.
    texts.write_bytes('\ufefffirst snippet \nsecond\ttitle\r\n"quoted" title?\nlast'.encode())
    labels.write_text("3\n1\r\n20\n2\n", encoding="utf-8")
    assert parse_line_aligned(texts, labels) == [
        ("first snippet ", "3"),
        ("second\ttitle", "1"),
        ('"quoted" title?', "20"),
        ("last", "2"),
    ]


def test_line_aligned_does_not_split_on_unicode_line_separators(tmp_path):
    texts = tmp_path / "X.txt"
    texts.write_text("a\u2028b\x0cc\nd\n", encoding="utf-8")
    (tmp_path / "g.txt").write_text("1\n2\n", encoding="utf-8")
    assert parse_line_aligned(texts, tmp_path / "g.txt") == [("a\u2028b\x0cc", "1"), ("d", "2")]


def test_line_aligned_rejects_misaligned_files(tmp_path):
    (tmp_path / "X.txt").write_text("a\nb\nc\n", encoding="utf-8")
    (tmp_path / "X_gnd.txt").write_text("1\n2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="3 lines .* has 2"):
        parse_line_aligned(tmp_path / "X.txt", tmp_path / "X_gnd.txt")


def test_json_lines_drops_empty_texts_and_keeps_spaces(tmp_path):
    path = tmp_path / "T"
    records = [
        {"text": "centrepoint winter white gala london", "cluster": 65},
        {"text": "", "cluster": 17},  # GoogleNews-T has one empty title: dropped
        {"text": " only snippet part", "cluster": 96},  # TS keeps the leading space of an empty title
        {"text": "   ", "cluster": 3},  # whitespace only: dropped too
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert parse_json_lines(path) == [("centrepoint winter white gala london", "65"), (" only snippet part", "96")]


def test_json_lines_reports_the_bad_line(tmp_path):
    path = tmp_path / "Tweet"
    path.write_text('{"text": "ok", "cluster": 1}\n{"txt": "bad"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 2"):
        parse_json_lines(path)


def test_label_tab_text(tmp_path):
    path = tmp_path / "agnewsdataraw-8000"
    path.write_text("3\tbhp billiton approves chile copper project\n1\tiraq president lt gt\n", encoding="utf-8")
    assert parse_label_tab_text(path) == [
        ("bhp billiton approves chile copper project", "3"),
        ("iraq president lt gt", "1"),
    ]
    path.write_text("no tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="TAB"):
        parse_label_tab_text(path)


def test_csv_reader_keeps_na_like_texts(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text('text,label\nNA,1\nnull,2\n"a, ""quoted"" text ",3\n', encoding="utf-8")
    assert read_text_label_csv(path) == [("NA", "1"), ("null", "2"), ('a, "quoted" text ', "3")]


def test_benchmark_names_and_specs():
    assert BENCHMARKS == (
        "agnews", "searchsnippets", "stackoverflow", "biomedical", "googlenews_ts", "googlenews_t", "googlenews_s",
        "tweet",
    )  # fmt: skip
    assert resolve_benchmark_name("GoogleNews-T") == "googlenews_t"
    assert CORPORA["tweet"].num_labels == 89 and CORPORA["tweet"].label_ids[-1] == "110"
    assert CORPORA["stackoverflow"].label_names[CORPORA["stackoverflow"].label_index("12")] == "hibernate"
    for spec in CORPORA.values():
        assert len(spec.label_ids) == len(spec.label_names) == len(set(spec.label_ids))
        assert all(url.startswith("https://raw.githubusercontent.com/") for url in spec.urls.values())


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError, match="Valid names: agnews, searchsnippets, stackoverflow"):
        resolve_benchmark_name("stackoverflw")
    with pytest.raises(ValueError, match="Unknown label '0'"):
        CORPORA["agnews"].label_index("0")
