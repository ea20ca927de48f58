"""The datasets builder: real corpora (skipped without them), tiny synthetic folders, the download path."""

from __future__ import annotations

import json

import datasets
import pytest
from data_test_utils import write_csv

from hf_textcluster.data import CORPORA, load_benchmark
from hf_textcluster.data.benchmark import ShortTextClusteringBenchmark
from hf_textcluster.data.corpora import CONFIRMATION_ONLY, IN_HOUSE, benchmarks_with_role

# rows, number of labels (SOURCES.md)
EXPECTED = {
    "agnews": (8000, 4),
    "searchsnippets": (12340, 8),
    "stackoverflow": (20000, 20),
    "biomedical": (20000, 20),
    "googlenews_ts": (11109, 152),
    "googlenews_t": (11108, 152),
    "googlenews_s": (11108, 152),
    "tweet": (2472, 89),
    "trec6": (5452, 6),
    "dbpedia": (12000, 14),
    "bbc": (2225, 5),
    # confirmation-only (prepared outside the repository)
    "banking77": (10003, 77),
    "clinc150": (15000, 150),
    "agnews_titles": (7600, 4),
}


def build(name, tmp_path, **kwargs) -> datasets.Dataset:
    builder = ShortTextClusteringBenchmark(config_name=name, cache_dir=str(tmp_path / "cache"), **kwargs)
    builder.download_and_prepare()
    return builder.as_dataset("train")


# ------------------------------------------------------------------------------------------------ real corpora


@pytest.mark.parametrize("name", IN_HOUSE)
def test_real_corpus_rows_and_labels(name, data_dir, session_cache):
    ds = load_benchmark(name, data_dir=data_dir, cache_dir=session_cache)
    rows, num_labels = EXPECTED[name]
    assert ds.num_rows == rows
    assert ds.column_names == ["text", "label"]
    assert ds.features["label"].num_classes == num_labels
    assert len(set(ds["label"])) == num_labels  # every class occurs


def test_real_stackoverflow_label_names(data_dir, session_cache):
    ds = load_benchmark("stackoverflow", data_dir=data_dir, cache_dir=session_cache)
    names = ds.features["label"].names
    assert names[:3] == ["wordpress", "oracle", "svn"] and names[11] == "hibernate" and names[-1] == "magento"
    first = ds[0]
    assert first["text"] == "How do I fill a DataSet or a DataTable from a LINQ query resultset ?"
    assert names[first["label"]] == "linq"  # raw id 18
    assert "\t" in ds[10343]["text"]  # the title with a TAB is kept whole


def test_real_tweet_has_89_classes_with_raw_ids(data_dir, session_cache):
    ds = load_benchmark("tweet", data_dir=data_dir, cache_dir=session_cache)
    names = ds.features["label"].names
    assert len(names) == 89
    assert names[:3] == ["1", "10", "11"] and names[-1] == "110" and "2" not in names
    assert names[ds[0]["label"]] == "37"


def test_real_texts_are_kept_exactly(data_dir, session_cache):
    snippets = load_benchmark("searchsnippets", data_dir=data_dir, cache_dir=session_cache)
    assert snippets[0]["text"].endswith("business ")
    agnews = load_benchmark("agnews", data_dir=data_dir, cache_dir=session_cache)
    assert agnews.features["label"].names == ["World", "Sports", "Business", "Sci/Tech"]


@pytest.mark.parametrize("name", benchmarks_with_role(CONFIRMATION_ONLY))
def test_real_confirmation_only_corpus_rows_and_labels(name, confirm_data_dir, session_cache):
    ds = load_benchmark(name, data_dir=confirm_data_dir, cache_dir=session_cache)
    rows, num_labels = EXPECTED[name]
    assert ds.num_rows == rows and ds.column_names == ["text", "label"]
    assert ds.features["label"].num_classes == num_labels == len(set(ds["label"]))


def test_real_confirmation_corpora_labels_and_texts(data_dir, session_cache):
    trec = load_benchmark("trec6", data_dir=data_dir, cache_dir=session_cache)
    assert trec.features["label"].names == ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    assert trec[0]["text"] == "How did serfdom develop in and then leave Russia ?" and trec[0]["label"] == 1
    assert any("sister\u00f0city" in text for text in trec["text"])  # the one ISO-8859-1 byte
    dbpedia = load_benchmark("dbpedia", data_dir=data_dir, cache_dir=session_cache)
    names = dbpedia.features["label"].names
    assert names[0] == "Company" and names[-1] == "WrittenWork"
    assert dbpedia[0]["text"] == " Ichthyococcus ovatus is a lightfish of the genus Ichthyococcus."
    assert names[dbpedia[0]["label"]] == "Animal"  # raw id 10
    bbc = load_benchmark("bbc", data_dir=data_dir, cache_dir=session_cache)
    assert bbc.features["label"].names == ["business", "entertainment", "politics", "sport", "tech"]
    assert bbc[0]["text"].startswith("Ad sales boost Time Warner profit\n\nQuarterly profits")
    assert not any(text.endswith("\n") for text in bbc["text"])


# --------------------------------------------------------------------------------------------- synthetic folders


def _stackoverflow_rows(n_per_class=2):
    return [[f"question {i} about topic {label}", str(label)] for label in range(1, 21) for i in range(n_per_class)]


def test_csv_folder_and_env_var(tmp_path, monkeypatch):
    rows = _stackoverflow_rows()
    write_csv(tmp_path / "data" / "stackoverflow.csv", ["text", "label"], rows)
    monkeypatch.setenv("HF_TEXTCLUSTER_DATA_DIR", str(tmp_path / "data"))
    ds = load_benchmark("StackOverflow", cache_dir=tmp_path / "cache")
    assert ds["text"] == [r[0] for r in rows]
    assert [ds.features["label"].int2str(i) for i in ds["label"][:4]] == ["wordpress"] * 2 + ["oracle"] * 2


def test_changed_file_is_not_served_from_a_stale_cache(tmp_path):
    path = write_csv(tmp_path / "data" / "stackoverflow.csv", ["text", "label"], _stackoverflow_rows())
    assert build("stackoverflow", tmp_path, data_dir=str(tmp_path / "data"))[0]["text"] == "question 0 about topic 1"
    rows = _stackoverflow_rows()
    rows[0][0] = "an edited first question"
    write_csv(path, ["text", "label"], rows)
    assert build("stackoverflow", tmp_path, data_dir=str(tmp_path / "data"))[0]["text"] == "an edited first question"


def test_missing_file_names_path_and_fix(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError) as error:
        load_benchmark("tweet", data_dir=tmp_path / "empty", cache_dir=tmp_path / "cache")
    message = str(error.value)
    assert str((tmp_path / "empty" / "tweet.csv").resolve()) in message
    assert "--data-dir" in message and "HF_TEXTCLUSTER_DATA_DIR" in message


def test_bad_names_and_arguments(tmp_path):
    with pytest.raises(ValueError, match="Valid names: agnews, .*tweet"):
        load_benchmark("news", data_dir=tmp_path, cache_dir=tmp_path / "cache")
    with pytest.raises(ValueError, match="Valid names"):
        ShortTextClusteringBenchmark(config_name="stack", cache_dir=str(tmp_path / "cache"))


def test_blank_text_and_unknown_label_in_csv(tmp_path):
    write_csv(tmp_path / "d1" / "agnews.csv", ["text", "label"], [["fine", "1"], ["  ", "2"]])
    with pytest.raises(ValueError, match="item 1 is empty or only whitespace"):
        build("agnews", tmp_path, data_dir=str(tmp_path / "d1"))
    write_csv(tmp_path / "d2" / "agnews.csv", ["text", "label"], [["fine", "1"], ["other", "5"]])
    with pytest.raises(ValueError, match="Unknown label '5'"):
        build("agnews", tmp_path, data_dir=str(tmp_path / "d2"))
    write_csv(tmp_path / "d3" / "agnews.csv", ["sentence", "label"], [["fine", "1"]])
    with pytest.raises(ValueError, match=r"no column\(s\) \['text'\]; its columns are \['sentence', 'label'\]"):
        build("agnews", tmp_path, data_dir=str(tmp_path / "d3"))


# ------------------------------------------------------------------------------------------------ download path


def _raw_files(tmp_path) -> dict:
    """Tiny files in the raw formats of the three public sources, keyed by the URL they stand for."""
    so_text = tmp_path / "StackOverflow.txt"
    so_text.write_bytes("\ufeffHow do I use LINQ?\r\nsvn  merge\ttrouble\r\n".encode())
    so_gnd = tmp_path / "StackOverflow_gnd.txt"
    so_gnd.write_text("18\n3\n", encoding="utf-8")
    t_file = tmp_path / "T"
    t_file.write_text(
        "".join(json.dumps(r) + "\n" for r in [{"text": "gala london", "cluster": 65}, {"text": "", "cluster": 17},
                                              {"text": "killer instinct", "cluster": 96}]),
        encoding="utf-8",
    )  # fmt: skip
    ag_file = tmp_path / "agnewsdataraw-8000"
    ag_file.write_text("3\tbhp billiton copper\n2\tgame season\n", encoding="utf-8")
    urls = {**CORPORA["stackoverflow"].urls, **CORPORA["googlenews_t"].urls}
    files = {
        CORPORA["stackoverflow"].urls["texts"]: so_text,
        CORPORA["stackoverflow"].urls["labels"]: so_gnd,
        CORPORA["googlenews_t"].urls["data"]: t_file,
        CORPORA["agnews"].urls["data"]: ag_file,
    }
    assert set(urls.values()) <= set(files)
    return {url: str(path) for url, path in files.items()}


def test_download_path_parses_raw_sources(tmp_path, monkeypatch):
    files = _raw_files(tmp_path)
    requested = []

    def fake_download(self, url_or_urls):
        requested.append(url_or_urls)
        return {key: files[url] for key, url in url_or_urls.items()}

    monkeypatch.setattr(datasets.DownloadManager, "download", fake_download)
    so = build("stackoverflow", tmp_path)
    assert so["text"] == ["How do I use LINQ?", "svn  merge\ttrouble"]
    assert [so.features["label"].int2str(i) for i in so["label"]] == ["linq", "svn"]
    t = build("googlenews_t", tmp_path)
    assert t["text"] == ["gala london", "killer instinct"]
    assert [t.features["label"].int2str(i) for i in t["label"]] == ["65", "96"]
    ag = build("agnews", tmp_path)
    assert ag["text"] == ["bhp billiton copper", "game season"]
    assert [ag.features["label"].int2str(i) for i in ag["label"]] == ["Business", "Sports"]
    assert requested[0] == dict(CORPORA["stackoverflow"].urls)
    assert all("raw.githubusercontent.com" in url for request in requested for url in request.values())


def test_download_path_parses_the_confirmation_sources(tmp_path, monkeypatch):
    import io
    import tarfile

    trec = tmp_path / "train_5500.label.txt"
    trec.write_bytes(b"NUM:date When was Ozzy Osbourne born ?\nLOC:city What is the sister\xf0city ?\n")
    dbpedia = tmp_path / "dbpedia.csv"
    dbpedia.write_text(",text,label\n0, A lightfish.,10\n1, A film.,13\n", encoding="utf-8")
    bbc = tmp_path / "bbc.tar.gz"
    with tarfile.open(bbc, "w:gz") as tar:
        for name, data in (("tech/001.txt", b"Phones\n\nNew phones.\n"), ("sport/001.txt", b"Cup\n\nA \xa35m win.\n")):
            info = tarfile.TarInfo(f"bbc-article-classify-bert-8265dc84/bbc/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    files = {CORPORA["trec6"].urls["data"]: trec, CORPORA["dbpedia"].urls["data"]: dbpedia,
             CORPORA["bbc"].urls["data"]: bbc}  # fmt: skip
    monkeypatch.setattr(
        datasets.DownloadManager, "download", lambda self, urls: {k: str(files[u]) for k, u in urls.items()}
    )
    ds = build("trec6", tmp_path)
    assert ds["text"] == ["When was Ozzy Osbourne born ?", "What is the sister\u00f0city ?"]
    assert [ds.features["label"].int2str(i) for i in ds["label"]] == ["NUM", "LOC"]
    ds = build("dbpedia", tmp_path)
    assert ds["text"] == [" A lightfish.", " A film."]
    assert [ds.features["label"].int2str(i) for i in ds["label"]] == ["Animal", "Film"]
    ds = build("bbc", tmp_path)
    assert ds["text"] == ["Cup\n\nA \u00a35m win.", "Phones\n\nNew phones."]  # sorted by path: sport < tech
    assert [ds.features["label"].int2str(i) for i in ds["label"]] == ["sport", "tech"]
    assert "github.com/dejanbatanjac/bbc-article-classify-bert" in ds.info.homepage


def test_download_path_parses_the_confirmation_only_sources(tmp_path, monkeypatch):
    banking = tmp_path / "train.csv"
    banking.write_text(
        'text,category\nI am still waiting on my card?,card_arrival\n" Refund? ",Refund_not_showing_up\n',
        encoding="utf-8",
    )
    clinc = tmp_path / "data_full.json"
    clinc.write_text(json.dumps({"train": [["how do i say hi in french", "translate"]], "oos_train": [["x", "oos"]]}),
                     encoding="utf-8")  # fmt: skip
    agnews = tmp_path / "test.csv"
    agnews.write_text('"3","Fears for T N pension after talks","Unions representing workers."\n'
                      '"4","Ky. Company Wins Grant (AP)","AP - A company."\n', encoding="utf-8")  # fmt: skip
    files = {CORPORA["banking77"].urls["data"]: banking, CORPORA["clinc150"].urls["data"]: clinc,
             CORPORA["agnews_titles"].urls["data"]: agnews}  # fmt: skip
    monkeypatch.setattr(
        datasets.DownloadManager, "download", lambda self, urls: {k: str(files[u]) for k, u in urls.items()}
    )
    ds = build("banking77", tmp_path)
    assert ds["text"] == ["I am still waiting on my card?", " Refund? "]
    assert [ds.features["label"].int2str(i) for i in ds["label"]] == ["card_arrival", "Refund_not_showing_up"]
    ds = build("clinc150", tmp_path)
    assert ds["text"] == ["how do i say hi in french"] and ds.features["label"].int2str(ds[0]["label"]) == "translate"
    assert ds.features["label"].num_classes == 150
    ds = build("agnews_titles", tmp_path)
    assert ds["text"] == ["Fears for T N pension after talks", "Ky. Company Wins Grant (AP)"]
    assert [ds.features["label"].int2str(i) for i in ds["label"]] == ["Business", "Sci/Tech"]


def test_load_benchmark_without_data_dir_downloads(tmp_path, monkeypatch):
    files = _raw_files(tmp_path)
    monkeypatch.delenv("HF_TEXTCLUSTER_DATA_DIR", raising=False)
    monkeypatch.setattr(datasets.DownloadManager, "download", lambda self, urls: {k: files[u] for k, u in urls.items()})
    assert load_benchmark("agnews", cache_dir=tmp_path / "cache").num_rows == 2
