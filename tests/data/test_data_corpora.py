"""Parsers of the raw public formats, on tiny files written in those formats."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from hf_textcluster.data import BENCHMARKS, CORPORA
from hf_textcluster.data.corpora import (
    CONFIRMATION,
    CONFIRMATION_ONLY,
    IN_HOUSE,
    ROLES,
    TUNING,
    CorpusSpec,
    benchmarks_with_role,
    resolve_benchmark_name,
)
from hf_textcluster.data.readers import (
    parse_csv_columns,
    parse_json_lines,
    parse_json_splits,
    parse_label_tab_text,
    parse_line_aligned,
    parse_text_folders,
    parse_trec,
    read_text_label_csv,
)

TUNING_SET = (
    "agnews", "searchsnippets", "stackoverflow", "biomedical", "googlenews_ts", "googlenews_t", "googlenews_s", "tweet",
)  # fmt: skip


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
    assert BENCHMARKS[:11] == (*TUNING_SET, "trec6", "dbpedia", "bbc")
    assert resolve_benchmark_name("GoogleNews-T") == "googlenews_t"
    assert resolve_benchmark_name("TREC6") == "trec6"
    assert CORPORA["tweet"].num_labels == 89 and CORPORA["tweet"].label_ids[-1] == "110"
    assert CORPORA["stackoverflow"].label_names[CORPORA["stackoverflow"].label_index("12")] == "hibernate"
    assert CORPORA["dbpedia"].label_names[CORPORA["dbpedia"].label_index("14")] == "WrittenWork"
    assert CORPORA["trec6"].label_names == ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
    for spec in CORPORA.values():
        assert len(spec.label_ids) == len(spec.label_names) == len(set(spec.label_ids))
        # every source is pinned to a commit (40 hex digits in the URL)
        assert all(url.startswith(("https://raw.githubusercontent.com/", "https://codeload.github.com/"))
                   for url in spec.urls.values())  # fmt: skip
        assert all(any(len(part) == 40 for part in url.split("/")) for url in spec.urls.values())


def test_roles_split_the_corpora_once():
    """The tuning set is the eight corpora the rules were chosen on; the confirmation sets are everything else."""
    assert benchmarks_with_role(TUNING) == TUNING_SET
    assert benchmarks_with_role(CONFIRMATION) == ("trec6", "dbpedia", "bbc")
    assert (*TUNING_SET, "trec6", "dbpedia", "bbc") == IN_HOUSE
    assert set(benchmarks_with_role(*ROLES)) == set(BENCHMARKS)
    assert all(CORPORA[name].role == CONFIRMATION_ONLY for name in BENCHMARKS if name not in IN_HOUSE)
    assert benchmarks_with_role(CONFIRMATION_ONLY) == ("banking77", "clinc150", "agnews_titles")
    with pytest.raises(ValueError, match="Unknown role 'held_out'"):
        CorpusSpec("x", ("1",), ("1",), 1, "trec", {}, "x", role="held_out")


def test_expand_benchmark_names():
    from training.bench.common import expand_benchmark_names

    assert expand_benchmark_names(["all"]) == list(IN_HOUSE)
    # in the given order, each corpus once
    assert expand_benchmark_names(["Confirmation", "tweet", "tuning"]) == [
        "trec6", "dbpedia", "bbc", "tweet", *TUNING_SET[:-1],
    ]  # fmt: skip
    assert expand_benchmark_names(["confirmation-only"]) == ["banking77", "clinc150", "agnews_titles"]
    with pytest.raises(ValueError, match="Valid names"):
        expand_benchmark_names(["tunning"])


def test_trec_keeps_the_coarse_class_and_latin1(tmp_path):
    path = tmp_path / "train_5500.label.txt"
    path.write_bytes(
        b"DESC:manner How did serfdom develop in and then leave Russia ?\n"
        b"ENTY:cremat What films featured the character Popeye Doyle ?\r\n"
        b"LOC:other What is the sister\xf0city of `` Paris '' ?\n"
    )
    assert parse_trec(path) == [
        ("How did serfdom develop in and then leave Russia ?", "DESC"),
        ("What films featured the character Popeye Doyle ?", "ENTY"),
        ("What is the sister\u00f0city of `` Paris '' ?", "LOC"),
    ]
    path.write_text("no label here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 1.*COARSE:fine"):
        parse_trec(path)


def test_csv_columns_ignore_the_index_and_keep_leading_spaces(tmp_path):
    path = tmp_path / "dbpedia.csv"
    path.write_text(',text,label\n0, Ichthyococcus ovatus is a lightfish.,10\n1," A, quoted ""text""",6\n2,NA,1\n',
                    encoding="utf-8")  # fmt: skip
    assert parse_csv_columns(path) == [
        (" Ichthyococcus ovatus is a lightfish.", "10"),
        (' A, quoted "text"', "6"),
        ("NA", "1"),
    ]
    other = tmp_path / "train.csv"
    other.write_text('text,category\n"I am still waiting\non my card?",card_arrival\n', encoding="utf-8")
    assert parse_csv_columns(other, label_column="category") == [("I am still waiting\non my card?", "card_arrival")]
    with pytest.raises(ValueError, match=r"no column\(s\) \['label'\]"):
        parse_csv_columns(other)
    headerless = tmp_path / "test.csv"
    headerless.write_text('"3","Fears for T N pension after talks","Unions representing workers."\n', encoding="utf-8")
    names = ("label", "title", "description")
    assert parse_csv_columns(headerless, "title", names=names) == [("Fears for T N pension after talks", "3")]
    with pytest.raises(ValueError, match="no column"):
        parse_csv_columns(headerless, "headline", names=names)


def test_json_splits_reads_one_split(tmp_path):
    path = tmp_path / "data_full.json"
    data = {"train": [["how do i say hi in french", "translate"], ["what's my balance", "balance"]],
            "oos_train": [["how old is the sun", "oos"]]}  # fmt: skip
    path.write_text(json.dumps(data), encoding="utf-8")
    assert parse_json_splits(path) == [("how do i say hi in french", "translate"), ("what's my balance", "balance")]
    with pytest.raises(ValueError, match="split 'test'"):
        parse_json_splits(path, split="test")
    path.write_text(json.dumps({"train": [["only text"]]}), encoding="utf-8")
    with pytest.raises(ValueError, match="item 0"):
        parse_json_splits(path)


def _bbc_files() -> dict:
    return {
        "bbc/business/002.txt": b"Dollar gains\n\nThe dollar rose.\n",
        "bbc/business/001.txt": b"Ad sales boost Time Warner profit\n\nProfits jumped 76% (\xc2\xa3600m).\n",
        "bbc/sport/199.txt": b"Cup win\n\nA \xa35m deal.\n\n\n",  # not UTF-8: a bare 0xA3; extra final newlines
        "bbc/README.TXT": b"Consists of 2225 documents",
    }


def test_text_folders_from_an_archive_and_a_folder(tmp_path):
    expected = [
        ("Ad sales boost Time Warner profit\n\nProfits jumped 76% (\u00a3600m).", "business"),
        ("Dollar gains\n\nThe dollar rose.", "business"),
        ("Cup win\n\nA \u00a35m deal.", "sport"),
    ]
    archive = tmp_path / "repo.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in _bbc_files().items():
            info = tarfile.TarInfo(f"bbc-article-classify-bert-8265dc8/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert parse_text_folders(archive) == expected
    for name, data in _bbc_files().items():
        (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / name).write_bytes(data)
    assert parse_text_folders(tmp_path / "tree") == expected
    with pytest.raises(ValueError, match="no file matches"):
        parse_text_folders(tmp_path / "tree", root="news")


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError, match="Valid names: agnews, searchsnippets, stackoverflow"):
        resolve_benchmark_name("stackoverflw")
    with pytest.raises(ValueError, match="Unknown label '0'"):
        CORPORA["agnews"].label_index("0")


def test_benchmark_rows_read_their_set_from_the_corpus_spec():
    from training.bench.common import ROLE_TITLES, by_role, corpus_role

    assert set(ROLE_TITLES) == set(ROLES)
    assert corpus_role("stackoverflow") == TUNING and corpus_role("bbc") == CONFIRMATION
    assert corpus_role("clinc150") == CONFIRMATION_ONLY and corpus_role("my_corpus") == "?"
    assert by_role(["clinc150", "tweet", "trec6", "agnews"]) == {
        TUNING: ["tweet", "agnews"],
        CONFIRMATION: ["trec6"],
        CONFIRMATION_ONLY: ["clinc150"],
    }
