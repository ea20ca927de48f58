"""Large inputs: chunked reading of every format, predict_file's resumable output, sampled k-means."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import pipeline

import hf_textcluster  # noqa: F401
from hf_textcluster import SCCLModel
from hf_textcluster.apps.streaming import PROGRESS_SUFFIX, predict_file, predict_iter
from hf_textcluster.data import load_texts
from hf_textcluster.data.text_files import text_chunks
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.editing.kmeans import fit_kmeans
from hf_textcluster.models.building import from_encoder_pretrained


@pytest.fixture(scope="module")
def clusterer(tiny_encoder_dir, toy_corpus):
    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    return pipeline("text-clustering", model=model, tokenizer=model.tokenizer)


@pytest.fixture(scope="module")
def texts(toy_corpus):
    return [f"{t} ünïcode {i}" for i, t in enumerate(toy_corpus[0])]  # distinct, and not ASCII


def _write(path, texts):
    frame = pd.DataFrame({"id": range(len(texts)), "body": texts})
    suffix = path.suffix
    if suffix == ".txt":
        path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    elif suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
    elif suffix == ".parquet":
        frame.to_parquet(path, row_group_size=17)
    return path


@pytest.mark.parametrize("suffix", [".txt", ".csv", ".jsonl", ".parquet"])
def test_every_format_is_read_in_chunks_of_at_most_chunk_size(tmp_path, texts, suffix):
    path = _write(tmp_path / f"in{suffix}", texts)
    chunks, total = text_chunks(path, text_column="body", chunk_size=25)
    chunks = list(chunks)
    assert [t for chunk in chunks for t in chunk] == texts
    assert all(1 <= len(chunk) <= 25 for chunk in chunks) and len(chunks) >= len(texts) // 25
    assert total in (None, len(texts))


def test_a_dataset_and_a_generator_are_read_lazily(texts):
    consumed = []

    def generate():
        for text in texts:
            consumed.append(text)
            yield text

    chunks, total = text_chunks(generate(), chunk_size=10)
    assert total is None and next(chunks) == texts[:10] and len(consumed) == 10  # nothing read ahead
    dataset = load_texts(texts)
    chunks, total = text_chunks(dataset, chunk_size=50)
    assert total == len(texts) and [len(c) for c in chunks] == [50, 50, len(texts) - 100]


def test_a_blank_row_is_named_by_its_row_in_the_whole_input(tmp_path, texts):
    path = tmp_path / "in.txt"
    path.write_text("\n".join(texts[:30] + ["  "] + texts[30:40]) + "\n")
    with pytest.raises(ValueError, match=r"Line 31 of .*in\.txt is blank"):
        list(text_chunks(path, chunk_size=8)[0])
    with pytest.raises(ValueError, match="no column 'body'.*Available columns: \\['text'\\]"):
        text_chunks(_write_csv_without_body(tmp_path), text_column="body")


@pytest.mark.parametrize("blank", ["\u200b", "\ufeff \u200b", "\t"])
def test_an_invisible_text_in_chunked_predict_is_named_by_its_line(clusterer, tmp_path, texts, blank):
    """A text of only invisible characters is as blank to the file reader as to the model: the error names its line
    in the file (not "`inputs` item 49" of a chunk)."""
    path = tmp_path / "in.txt"
    path.write_text("\n".join(texts[:60] + [blank] + texts[60:70]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"Line 61 of .*in\.txt is blank") as info:
        predict_file(clusterer, path, tmp_path / "out.jsonl", chunk_size=16)
    assert "`inputs`" not in str(info.value)


def _write_csv_without_body(tmp_path):
    path = tmp_path / "other.csv"
    pd.DataFrame({"text": ["a"]}).to_csv(path, index=False)
    return path


def _same_results(got, expected):
    """Same clusters; scores equal up to float noise (other chunks pad to other lengths)."""
    flat = lambda results: [r for rs in results for r in (rs if isinstance(rs, list) else [rs])]  # noqa: E731
    assert [r["cluster"] for r in flat(got)] == [r["cluster"] for r in flat(expected)]
    assert [r["score"] for r in flat(got)] == pytest.approx([r["score"] for r in flat(expected)], abs=1e-5)


def test_predict_iter_gives_the_pipelines_results_in_order(clusterer, texts):
    got = list(predict_iter(clusterer, iter(texts), chunk_size=7, top_k=2))
    assert [t for t, _ in got] == texts
    _same_results([r for _, r in got], clusterer(texts, top_k=2))
    _same_results([r for _, r in predict_iter(clusterer.model, texts, chunk_size=50, skip=55)], clusterer(texts[55:]))


class _Crashes:
    """A clusterer that fails on its n-th call, as a killed process would stop."""

    def __init__(self, clusterer, fail_on_call):
        self.clusterer, self.model, self.fail_on_call, self.calls, self.texts_seen = (
            clusterer,
            clusterer.model,
            fail_on_call,
            0,
            0,
        )

    def __call__(self, texts, **kwargs):
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise KeyboardInterrupt
        self.texts_seen += len(texts)
        return self.clusterer(texts, **kwargs)


def test_predict_file_resumes_after_a_crash_and_ends_as_an_uninterrupted_run(clusterer, texts, tmp_path):
    source = _write(tmp_path / "in.jsonl", texts)
    reference = tmp_path / "reference.jsonl"
    predict_file(clusterer, source, reference, text_column="body", chunk_size=16)
    assert not (tmp_path / ("reference.jsonl" + PROGRESS_SUFFIX)).exists()
    lines = [json.loads(line) for line in reference.read_text(encoding="utf-8").splitlines()]
    assert [line["text"] for line in lines] == texts
    _same_results([{k: v for k, v in line.items() if k != "text"} for line in lines], clusterer(texts))

    out = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        predict_file(_Crashes(clusterer, fail_on_call=4), source, out, text_column="body", chunk_size=16)
    progress = json.loads((tmp_path / ("out.jsonl" + PROGRESS_SUFFIX)).read_text())
    assert progress["texts_done"] == 48 and out.stat().st_size == progress["output_bytes"]
    with open(out, "ab") as handle:  # a chunk the crash cut off half-way
        handle.write(b'{"text": "half a rec')
    resumed = _Crashes(clusterer, fail_on_call=None)
    stats = predict_file(resumed, source, out, text_column="body", chunk_size=16)
    assert stats["resumed_after"] == 48 and stats["texts"] == len(texts) and resumed.texts_seen == len(texts) - 48
    assert out.read_bytes() == reference.read_bytes()
    assert not (tmp_path / ("out.jsonl" + PROGRESS_SUFFIX)).exists()


def test_predict_file_keeps_finished_outputs_and_refuses_a_foreign_half_written_one(clusterer, texts, tmp_path):
    source = _write(tmp_path / "in.txt", texts)
    out = tmp_path / "out.jsonl"
    predict_file(clusterer, source, out, chunk_size=64)
    finished = out.read_bytes()
    with pytest.raises(FileExistsError, match="overwrite"):
        predict_file(clusterer, source, out)
    assert out.read_bytes() == finished
    with pytest.raises(KeyboardInterrupt):
        predict_file(_Crashes(clusterer, fail_on_call=2), source, out, chunk_size=64, overwrite=True)
    with pytest.raises(ValueError, match="another input, model or options"):
        predict_file(clusterer, source, out, chunk_size=64, top_k=2)  # other options than the half-written run
    predict_file(clusterer, source, out, chunk_size=64, overwrite=True)
    assert out.read_bytes() == finished
    with pytest.raises(ValueError, match="would replace your texts"):
        predict_file(clusterer, source, source)


def test_predict_file_to_stdout(clusterer, texts, capsys):
    predict_file(clusterer, texts[:5], None, show_progress_bar=False)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["text"] for line in lines] == texts[:5]


def test_sampled_kmeans_assigns_every_row_and_is_exact_below_the_sample_size():
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(0)
    centres = rng.normal(scale=10, size=(4, 6))
    x = (centres[rng.integers(0, 4, size=5000)] + rng.normal(size=(5000, 6))).astype(np.float32)
    exact = fit_kmeans(x, 4, n_init=2, random_state=0)
    assert np.array_equal(exact.labels_, KMeans(4, n_init=2, random_state=0).fit(x).labels_)
    sampled = fit_kmeans(x, 4, n_init=2, random_state=0, max_samples=400)
    assert sampled.labels_.shape == (5000,) and np.array_equal(sampled.labels_, sampled.predict(x))
    from hf_textcluster.evaluation.metrics import cluster_accuracy

    assert cluster_accuracy(exact.labels_, sampled.labels_) > 0.99  # well-separated blobs: the same partition
    with pytest.raises(ValueError, match="max_samples"):
        fit_kmeans(x, 4, max_samples=3)


def test_umap_seeded_kmeans_is_the_nearest_of_the_means_of_the_reduced_clusters():
    pytest.importorskip("umap")
    from sklearn.cluster import KMeans
    from sklearn.metrics import normalized_mutual_info_score
    from umap import UMAP

    from hf_textcluster.editing.kmeans import exact_neighbours

    rng = np.random.default_rng(1)
    centres = rng.normal(scale=4, size=(6, 8))
    x = (centres[rng.integers(0, 6, size=300)] + rng.normal(size=(300, 8))).astype(np.float32)
    fitted = fit_kmeans(x, 6, n_init=2, random_state=0, init="umap")
    # direct recomputation: UMAP (BERTopic's settings, on the exact cosine neighbours, which test_kmeans_init checks
    # against scikit-learn's) laid out with seeds 0, 1, 2 -> k-means on each -> the partition with the highest mean NMI
    # with the other two, its clusters numbered in order of first appearance -> the groups' means in the original
    # space -> nearest
    knn = (*exact_neighbours(x, 15), None)
    partitions = [
        KMeans(6, n_init=2, random_state=seed).fit_predict(
            UMAP(
                n_neighbors=15,
                n_components=5,
                min_dist=0.0,
                metric="cosine",
                random_state=seed,
                precomputed_knn=knn,
            ).fit_transform(x)
        )
        for seed in range(3)
    ]
    agreement = [sum(normalized_mutual_info_score(p, q) for q in partitions if q is not p) for p in partitions]
    kept = partitions[int(np.argmax(agreement))]
    first_seen = list(dict.fromkeys(kept.tolist()))  # clusters numbered in order of first appearance
    groups = np.array([first_seen.index(c) for c in kept])
    means = np.stack([x[groups == k].mean(axis=0) for k in range(6)])
    np.testing.assert_array_equal(fitted.groups_, groups)
    np.testing.assert_allclose(fitted.cluster_centers_, means, rtol=1e-5, atol=1e-5)
    nearest = ((x[:, None, :] - means[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(fitted.labels_, nearest)
    np.testing.assert_array_equal(fitted.predict(x[:7]), nearest[:7])
    with pytest.raises(ValueError, match="kmeans_init"):
        fit_kmeans(x, 6, init="random-ish")
    with pytest.raises(ValueError, match="more than 16 texts"):
        fit_kmeans(x[:10], 3, init="umap")
