"""The benchmark package (training/bench/): its results store keeps rows another bench process wrote meanwhile, each
section renders its table from the store, a method run writes its row end to end."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from hf_textcluster.models.building import from_encoder_pretrained

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # training/ is a folder of the checkout, not installed
from hf_textcluster.editing import initialize_clusters  # noqa: E402
from training.bench import (  # noqa: E402
    auto_tables,  # noqa: E402
    common,
    comparisons,
    kmeans_init,
    leaderboard,
    partitions,
    render,
    rescore,
    speed,
)
from training.bench import method as method_section  # noqa: E402
from training.bench import store as results  # noqa: E402
from training.bench.__main__ import main  # noqa: E402


@pytest.fixture()
def bench(tmp_path, monkeypatch):
    """The store module writing to a temporary results.json / results.md (README untouched)."""
    monkeypatch.setattr(results, "RESULTS_JSON", tmp_path / "results.json")
    monkeypatch.setattr(results, "RESULTS_MD", tmp_path / "results.md")
    monkeypatch.setattr(results, "on_save", render.write_rendered)
    return results


RUN = {"command": "bench.py", "date": "2026-11-23", "machine": "test", "versions": {}}


def _row(method, dataset, acc, run):
    return {
        "section": "method",
        "method": method,
        "dataset": dataset,
        "seed": 0,
        "variant": "",
        "acc": acc,
        "nmi": acc,
        "purity": acc,
        "ari": acc,
        "kmeans_acc": acc,
        "kmeans_nmi": acc,
        "kmeans_ari": acc,
        "kmeans_purity": acc,
        **{f"init_kmeans_{k}": acc for k in ("acc", "nmi", "ari", "purity")},
        "steps": 1,
        "batch_size": 1,
        "train_seconds": 1.0,
        "run": run,
    }


def test_a_process_saving_keeps_rows_others_wrote_meanwhile(bench):
    mine = bench.load_store()  # this process starts
    mine["runs"]["mine"] = RUN
    other = bench.load_store()  # another process starts, writes a row and corrects it
    other["runs"]["other"] = RUN
    bench.put_row(other, _row("aecl", "stackoverflow", 0.7, "other"))
    bench.save_store(other)
    on_disk = json.loads(bench.RESULTS_JSON.read_text())
    on_disk["rows"][0]["acc"] = 0.75  # a correction by hand
    bench.RESULTS_JSON.write_text(json.dumps(on_disk))
    bench.put_row(mine, _row("sccl", "stackoverflow", 0.8, "mine"))
    bench.save_store(mine)
    rows = {(r["method"], r["dataset"]): r["acc"] for r in json.loads(bench.RESULTS_JSON.read_text())["rows"]}
    assert rows == {("aecl", "stackoverflow"): 0.75, ("sccl", "stackoverflow"): 0.8}
    assert "mine" in json.loads(bench.RESULTS_JSON.read_text())["runs"]
    assert "## SCCL" in bench.RESULTS_MD.read_text() and "## AECL" in bench.RESULTS_MD.read_text()


def test_auto_k_section_renders_its_table_only_when_it_has_rows(bench):
    store = bench.load_store()
    store["runs"]["k"] = {**RUN, "command": "bench.py auto-k"}
    bench.put_row(store, _row("sccl", "stackoverflow", 0.8, "k"))
    bench.save_store(store)
    assert "Choosing K without labels" not in bench.RESULTS_MD.read_text()

    common = {
        "section": "auto-k",
        "dataset": "tweet",
        "seed": 0,
        "run": "k",
        "k_true": 89,
        "num_texts": 2472,
        "embed_seconds": 3.0,
        "true_k_acc": 0.8,
        "true_k_nmi": 0.85,
    }
    bench.put_row(
        store,
        {
            **common,
            "method": "eigengap",
            "k_found": 80,
            "k_range": [2, 149],
            "sample_size": 2472,
            "seconds": 12.0,
            "acc": 0.78,
            "nmi": 0.84,
            "scores": {},
        },
    )
    bench.put_row(
        store,
        {
            **common,
            "method": "silhouette",
            "k_found": 178,
            "k_range": [2, 149],
            "sample_size": 2472,
            "seconds": 40.0,
            "acc": 0.7,
            "nmi": 0.86,
            "scores": {},
        },
    )
    bench.put_row(
        store,
        {
            **common,
            "method": "bertopic",
            "k_found": 60,
            "outlier_share": 0.3,
            "seconds": 20.0,
            "acc": 0.5,
            "nmi": 0.7,
            "inlier_acc": 0.6,
            "inlier_nmi": 0.8,
        },
    )
    bench.save_store(store)
    md = bench.RESULTS_MD.read_text()
    assert "## Choosing K without labels" in md and "`bench.py auto-k`" in md
    assert "| tweet | 2,472 | 89 | `eigengap` | 80 | 78.0 | 84.0 | 80.0 | 85.0 | – | – | 12 | 1 |" in md
    assert (
        "| tweet | 2,472 | 89 | BERTopic default (UMAP -> HDBSCAN) | 60 | 50.0 | 70.0 | 80.0 | 85.0 | 30.0% | 60.0 / "
        "80.0 |" in md
    )
    assert "| `silhouette` | 1.00 | 1.00 | 0 of 1 | -10.0 | +1.0 | 40 |" in md  # 178 = 2 x 89
    assert "Lowest median log2 error among the criteria: `eigengap`" in md
    assert "## SCCL" in md  # the other sections are still there


def test_another_encoder_has_its_own_section_and_stays_out_of_the_default_tables(bench):
    assert common.encoder_variant(None) == "" and common.encoder_variant("sentence-transformers/all-MiniLM-L6-v2") == ""
    assert common.encoder_variant("sentence-transformers/all-mpnet-base-v2") == "all-mpnet-base-v2"
    store = bench.load_store()
    store["runs"]["e"] = {**RUN, "command": "bench.py baselines --encoder x/all-mpnet-base-v2"}
    base = {
        "section": "baselines",
        "method": "embeddings-kmeans",
        "dataset": "stackoverflow",
        "seed": 0,
        "run": "e",
        "seconds": 1.0,
        "nmi": 0.7,
        "ari": 0.5,
        "purity": 0.7,
    }
    bench.put_row(store, {**base, "acc": 0.72})
    bench.put_row(store, {**base, "acc": 0.81, "variant": "all-mpnet-base-v2", "encoder": "x/all-mpnet-base-v2"})
    bench.put_row(store, _row("sccl", "stackoverflow", 0.75, "e"))
    bench.put_row(
        store,
        {**_row("sccl", "stackoverflow", 0.85, "e"), "variant": "all-mpnet-base-v2", "encoder": "x/all-mpnet-base-v2"},
    )
    bench.save_store(store)
    md = bench.RESULTS_MD.read_text()
    default_tables, encoders = md.split("## Stronger encoders")
    assert "81.0" not in default_tables.split("## Side by side")[0].split("## SCCL")[0]  # baseline table: MiniLM only
    leaderboard = md.split("## Leaderboard")[1].split("## Stronger encoders")[0]  # the main configuration only
    assert "| stackoverflow | SCCL | **75.0** |" in leaderboard and "85.0" not in leaderboard
    assert "| stackoverflow | embeddings + k-means | all-MiniLM-L6-v2 | 72.0 |" in encoders
    assert "| stackoverflow | embeddings + k-means | all-mpnet-base-v2 | 81.0 |" in encoders
    assert "| stackoverflow | SCCL | all-mpnet-base-v2 | 85.0 |" in encoders
    assert "| stackoverflow | SCCL | all-MiniLM-L6-v2 | 75.0 |" in encoders
    # the BERTopic way per encoder: MiniLM's from the auto-k section, another encoder's from its baselines run
    bench.put_row(
        store,
        {
            **base,
            "section": "auto-k",
            "method": "bertopic-kmeans",
            "acc": 0.765,
            "k_found": 20,
            "num_texts": 100,
            "embed_seconds": 1.0,
            "true_k_acc": 0.7,
            "true_k_nmi": 0.7,
            "k_true": 20,
        },
    )
    bench.put_row(
        store,
        {
            **base,
            "method": "bertopic-kmeans",
            "acc": 0.83,
            "variant": "all-mpnet-base-v2",
            "encoder": "x/all-mpnet-base-v2",
        },
    )
    bench.save_store(store)
    encoders = bench.RESULTS_MD.read_text().split("## Stronger encoders")[1]
    assert "| stackoverflow | BERTopic way, true K | all-MiniLM-L6-v2 | 76.5 |" in encoders
    assert "| stackoverflow | BERTopic way, true K | all-mpnet-base-v2 | 83.0 |" in encoders


def test_baselines_with_another_encoder_run_its_kmeans_and_bertopic_way(
    bench, tiny_encoder_dir, toy_corpus, monkeypatch
):
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
    assert main(["baselines", "--datasets", "stackoverflow", "--seeds", "0", "--encoder", str(tiny_encoder_dir)]) == 0
    rows = json.loads(bench.RESULTS_JSON.read_text())["rows"]
    assert sorted(r["method"] for r in rows) == ["bertopic-kmeans", "embeddings-kmeans"]
    assert all(r["variant"] == common.encoder_variant(str(tiny_encoder_dir)) and 0 < r["acc"] <= 1 for r in rows)


def test_the_leaderboard_counts_umap_kmeans_after_where_measured(bench):
    """UMAP k-means after is a servable partition: shown with how many seeds have it, and our best when highest."""
    store = {"runs": {"r": RUN}, "rows": []}
    bench.put_row(store, {**_row("sccl", "stackoverflow", 0.75, "r"), "umap_kmeans_acc": 0.8, "umap_kmeans_nmi": 0.7})
    bench.put_row(store, {**_row("sccl", "stackoverflow", 0.73, "r"), "seed": 1})
    bench.save_store(store)
    leaderboard = bench.RESULTS_MD.read_text().split("## Leaderboard")[1].split("## ")[0]
    assert "| stackoverflow | SCCL | 74.0 ± 1.4 |" in leaderboard and "| **80.0** (1) | 70.0 |" in leaderboard
    assert "| stackoverflow | 80.0 (SCCL, UMAP k-means after) |" in leaderboard


def test_head_or_kmeans_section_counts_the_cells_where_kmeans_after_wins(bench):
    rows = [_row("sccl", "stackoverflow", 0.70, "r"), _row("aecl", "stackoverflow", 0.60, "r")]
    rows[0]["kmeans_acc"], rows[1]["kmeans_acc"] = 0.75, 0.55  # SCCL: +5.0, AECL: -5.0
    md = "\n".join(comparisons.render_head_or_kmeans(rows))
    assert (
        "| SCCL | stackoverflow | 70.0 | 75.0 | +5.0 |" in md and "| AECL | stackoverflow | 60.0 | 55.0 | -5.0 |" in md
    )
    assert "higher ACC in 1 of 2" in md and "largest loss -5.0" in md
    assert "| SCCL | stackoverflow | 70.0 | 75.0 | +5.0 | +0.0 | – | – | 1 |" in md
    rows[1].update(latent_kmeans_acc=0.65, latent_kmeans_nmi=0.6)  # a head in a space of its own
    md = "\n".join(comparisons.render_head_or_kmeans(rows))
    assert "| AECL | stackoverflow | 60.0 | 55.0 | -5.0 | +0.0 | 65.0 (1) | 60.0 | 1 |" in md


def test_rescore_adds_the_metrics_a_kept_model_lacks_and_changes_nothing_stored(
    bench, tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch
):
    import datasets

    import hf_textcluster.runs.train
    from hf_textcluster import DECCRLModel
    from hf_textcluster.training.evaluation import evaluate_clusterer

    texts, labels = toy_corpus
    monkeypatch.setattr(results, "REPO", tmp_path)
    monkeypatch.setattr(
        hf_textcluster.runs.train,
        "prepare_dataset",
        lambda name, augmentation, data_dir=None, seed=0: datasets.Dataset.from_dict({"text": texts, "label": labels}),
    )
    model = from_encoder_pretrained(DECCRLModel, str(tiny_encoder_dir), num_clusters=3, latent_dim=8)
    initialize_clusters(model, texts)
    stored = {k: v for k, v in evaluate_clusterer(model, texts, labels).items() if not k.startswith("latent_")}
    for seed, variant in ((0, ""), (1, "")):
        directory = bench.run_dir("deccrl", "stackoverflow", seed, variant)
        model.save_pretrained(directory)
        (directory / "training_run.json").write_text(json.dumps({"augmentation": None}))
    store = {"runs": {"r": RUN}, "rows": []}
    rows = [
        {**_row("deccrl", "stackoverflow", 0.0, "r"), **stored, "seed": 0},
        {
            **_row("deccrl", "stackoverflow", 0.0, "r"),
            **stored,
            "seed": 1,
            "acc": stored["acc"] - 0.1,
        },  # not this model
        {**_row("deccrl", "stackoverflow", 0.0, "r"), **stored, "seed": 2},
    ]  # no kept model
    for row in rows:
        bench.put_row(store, row)
    bench.save_store(store)
    args = argparse.Namespace(datasets=["stackoverflow"], seeds=[0, 1, 2], methods=None, data_dir=None)
    rescore.run(args, store, "rescore-1")
    after = {r["seed"]: r for r in json.loads(bench.RESULTS_JSON.read_text())["rows"]}
    assert after[0] == {
        **rows[0],
        **evaluate_clusterer(model, texts, labels, umap_kmeans=True),
        "rescored": "rescore-1",
    }
    assert "latent_kmeans_acc" in after[0] and "umap_kmeans_acc" in after[0]
    assert after[1] == rows[1] and after[2] == rows[2]
    # a second pass does not score the rescored model again (minutes a model on a real corpus)
    import hf_textcluster.training.trainer

    monkeypatch.setattr(
        hf_textcluster.training.trainer, "evaluate_clusterer", lambda *a, **k: pytest.fail("scored again")
    )
    rescore.run(
        argparse.Namespace(datasets=["stackoverflow"], seeds=[0], methods=None, data_dir=None),
        json.loads(bench.RESULTS_JSON.read_text()),
        "rescore-2",
    )


def test_kmeans_init_section_has_one_column_per_start(bench):
    store = {"runs": {"r": RUN}}
    rows = [
        {
            "section": "kmeans-init",
            "method": m,
            "dataset": "stackoverflow",
            "seed": 0,
            "run": "r",
            "k": 20,
            "acc": acc,
            "nmi": acc,
            **({"seconds": 2.0} if m in ("k-means++", "umap") else {}),
        }
        for m, acc in zip(kmeans_init.KMEANS_INIT_ENTRIES, (0.72, 0.744, 0.753, 0.717, 0.65))
    ]  # no pca FC_e row
    md = "\n".join(kmeans_init.render(store, rows))
    assert (
        "| stackoverflow | 20 | 72.0 / 72.0 | 74.4 / 74.4 | 75.3 / 75.3 | 71.7 / 71.7 | 65.0 / 65.0 | – | 2 / 2 | 1 |"
        in md
    )


def test_train_time_is_a_mean_per_cpu_kind_without_the_runs_another_job_slowed(bench):
    store = {
        "runs": {
            "xeon": {**RUN, "machine": "Intel(R) Xeon(R), AVX512 + AVX512-BF16 + AMX (native bf16), 2 cores"},
            "epyc": {**RUN, "machine": "AMD EPYC, AVX2 (no native bf16), 2 cores"},
            "zen4": {**RUN, "machine": "AMD EPYC, AVX512 + AVX512-BF16 (native bf16), 2 cores"},
        }
    }
    rows = [_row("sccl", "stackoverflow", 0.7, run) for run in ("xeon", "epyc", "epyc", "zen4")]
    for row, seconds in zip(rows, (300.0, 1000.0, 1600.0, 500.0)):
        row["train_seconds"] = seconds
    rows[2]["note"] = "train time inflated by unit tests running on the same 2 cores"
    assert common.train_time(store, rows) == "1000 (AVX2) / 300 (bf16 AMX) / 500 (bf16 AVX512)"
    assert common.train_time(store, rows[2:3]) == "1600† (AVX2)"  # only slowed runs: shown, marked


@pytest.mark.parametrize(
    ("capped", "capability", "variant"),
    [
        ("AVX2", "AVX2 + AVX512-BF16 + AMX (no native bf16)", "oneDNN capped to AVX2"),
        (None, "AVX512 + AVX512-BF16 + AMX (native bf16)", ""),  # the first kind measured keeps its rows
        (None, "AVX512 + AVX512-BF16 (native bf16)", "Native, AVX512 + AVX512-BF16 (native bf16)"),
        (None, "AVX2 (no native bf16)", "Native, AVX2 (no native bf16)"),
    ],
)
def test_speed_rows_of_another_cpu_kind_get_their_own_section(bench, monkeypatch, capped, capability, variant):
    import hf_textcluster.modeling.hardware

    monkeypatch.setattr(hf_textcluster.modeling.hardware, "cpu_capability", lambda: capability)
    if capped:
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", capped)
    else:
        monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert speed.speed_variant() == variant


def test_speed_times_the_pipeline_alone_on_a_given_encoder(bench, tiny_encoder_dir, toy_corpus, monkeypatch):
    """``speed --parts pipeline --encoder DIR`` (what runs on a GPU): the model it serves has clusters without the
    step part, and its rows say how the pipeline compares with SentenceTransformer.encode."""
    import argparse

    import datasets

    from training.bench import precomputed

    texts, labels = toy_corpus
    monkeypatch.setattr(
        precomputed,
        "load_with_views",
        lambda name, family, data_dir=None: datasets.Dataset.from_dict({"text": texts, "label": labels}),
    )
    args = argparse.Namespace(
        parts=["pipeline"], device="cpu", encoder=str(tiny_encoder_dir), data_dir=None, pipeline_repeats=1
    )
    store = {"rows": [], "runs": {"r": RUN}}
    speed.run(args, store, "r")
    rows = [r for r in store["rows"] if r.get("part") == "pipeline"]
    assert [r["measure"].rsplit("pipeline ", 1)[1].split(" ")[0] for r in rows] == ["fp32", "auto"]
    assert all(r["value"] > 0 and "texts/s" in r["detail"] for r in rows)
    with pytest.raises(SystemExit, match="--parts pipeline"):
        speed.run(argparse.Namespace(**{**vars(args), "device": "cuda", "parts": ["steps"]}), store, "r")


def test_a_method_run_end_to_end_writes_its_row_model_and_tables(
    bench, tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch
):
    """The smoke run: `python -m training.bench sccl` for 2 steps on a tiny encoder and the toy corpus (standing in for
    a benchmark):
    one row with the head, k-means after / before and UMAP k-means after, the kept model rescore can use, the tables;
    `--skip-done` then skips it."""
    import datasets

    import hf_textcluster.runs.train
    from training.bench import precomputed

    texts, labels = toy_corpus
    toy = datasets.Dataset.from_dict(
        {"text": texts, "label": labels, "text_aug1": texts, "text_aug2": texts},
        features=datasets.Features(
            {
                "text": datasets.Value("string"),
                "label": datasets.ClassLabel(names=["a", "b", "c"]),
                "text_aug1": datasets.Value("string"),
                "text_aug2": datasets.Value("string"),
            }
        ),
    )
    monkeypatch.setattr(results, "REPO", tmp_path)
    monkeypatch.setattr(hf_textcluster.runs.train, "prepare_dataset", lambda *args, **kwargs: toy)
    monkeypatch.setattr(precomputed, "load_with_views", lambda *args, **kwargs: toy)  # the recipe's views
    argv = [
        "sccl",
        "--datasets",
        "stackoverflow",
        "--seeds",
        "0",
        "--max-steps",
        "2",
        "--training",
        "per_device_train_batch_size=8",
        "--encoder",
        str(tiny_encoder_dir),
        "--skip-done",
    ]
    assert main(argv) == 0
    (row,) = [r for r in json.loads(bench.RESULTS_JSON.read_text())["rows"] if r["section"] == "method"]
    assert (row["method"], row["dataset"], row["seed"], row["steps"], row["batch_size"]) == (
        "sccl",
        "stackoverflow",
        0,
        2,
        8,
    )
    assert row["variant"] == common.encoder_variant(str(tiny_encoder_dir))
    for key in ("acc", "kmeans_acc", "init_kmeans_acc", "umap_kmeans_acc"):
        assert 0 < row[key] <= 1
    assert (bench.run_dir("sccl", "stackoverflow", 0, row["variant"]) / "model.safetensors").exists()
    assert "## SCCL" in bench.RESULTS_MD.read_text()
    # every candidate partition scored, the label-free choice among them, the oracle the best ACC (labels)
    assert {"head", "kmeans", "head+refined", "kmeans+refined"} <= set(row["partitions"])
    assert row["served_by_default"] in row["partitions"] and row["oracle"] in row["partitions"]
    assert row["oracle_acc"] == max(p["acc"] for p in row["partitions"].values()) >= row["served_acc"]
    assert row["partitions"]["head"]["acc"] == row["acc"]  # trained with serve="head": the head is the trained head
    assert "## Which partition to serve" in bench.RESULTS_MD.read_text()
    stored = bench.RESULTS_JSON.read_text()
    assert main(argv) == 0 and bench.RESULTS_JSON.read_text() == stored  # --skip-done: nothing re-run


def test_readme_table_is_rewritten_between_its_markers_only(bench):
    """README's table of the default comes from the store: per corpus, tuning then confirmation, the run's BERTopic
    way against what is served; the lines between the markers are replaced, nothing else."""
    from training.bench import auto_tables

    accs = {"pretrained/umap_kmeans": 0.75, "contrastive/kmeans": 0.80}
    criteria = {n: {} for n in accs}
    rows = [
        {**_auto_row("trec6", 0, accs, criteria, "pretrained/umap_kmeans", 0.75), "num_texts": 5452},
        {
            **_auto_row("stackoverflow", 0, accs, criteria, "contrastive/kmeans", 0.80),
            "num_texts": 20000,
            "bertopic_seconds": 40.0,
        },
        # the shallow baselines beside it: MiniLM + k-means (the strongest here) and BERTopic's default
        {"section": "baselines", "method": "embeddings-kmeans", "dataset": "stackoverflow", "acc": 0.78},
        {"section": "auto-k", "method": "bertopic", "dataset": "stackoverflow", "acc": 0.5},
    ]
    table = auto_tables.readme_table({"runs": {"r": RUN}}, rows, render.README_CORPUS_NAMES)
    assert table[2:] == [
        "| StackOverflow | tuning | 20,000 | 78.0 | 50.0 | 75.0 | 80.0 | +2.0 | 2.5x | 1 |",
        "| TREC-6 | confirmation | 5,452 | – | – | 75.0 | 75.0 | +0.0 | – | 1 |",
        "",
        '× time "–": a run made before BERTopic was timed beside it. A baseline "–": not run on that corpus.',
    ]
    start, end = render.README_MARKERS
    text = f"# Title\n\nbefore\n{start}\n| stale | table |\n{end}\nafter\n"
    new = render.readme_with_table(text, table)
    assert "| stale |" not in new and new.startswith("# Title\n\nbefore\n") and new.endswith(f"{end}\nafter\n")
    assert table[2] in new
    assert render.readme_with_table("no markers here\n", table) == "no markers here\n"
    assert render.readme_with_table(text, []) == text
    # the confirmation-only corpora get a table of their own; a confirmation choice re-made after its run is marked
    remade = {**rows[0], "served_note": auto_tables.REMADE}
    banking = {**_auto_row("banking77", 0, accs, criteria, "contrastive/kmeans", 0.80), "num_texts": 10003}
    table = auto_tables.readme_table({"runs": {"r": RUN}}, [rows[1], remade, banking], render.README_CORPUS_NAMES)
    assert table[3] == "| TREC-6 | confirmation | 5,452 | – | – | 75.0 | 75.0‡ | +0.0 | – | 1 |"
    assert table[4] == "" and table[5].startswith("Confirmation-only:") and table[7] == table[0]
    assert table[9] == "| BANKING77 | confirmation-only | 10,003 | – | – | 75.0 | 80.0 | +5.0 | – | 1 |"
    assert table[10:] == ["", " ".join(auto_tables.MARKS.values())]  # every mark is in the table: each is said


def test_verdict_table_names_corpora_and_the_best_reported_number(bench):
    store = {"runs": {"r": RUN}, "rows": []}
    bench.put_row(store, _row("sccl", "stackoverflow", 0.75, "r"))
    verdicts = leaderboard.render_leaderboard(store["rows"])[1]
    table = "\n".join(leaderboard.verdict_table(verdicts, "corpus", render.README_CORPUS_NAMES))
    # display names, and the best reported number includes HAC-SD's row of SCCL's Table 1 where it tops the five
    assert "| StackOverflow | 75.0 (SCCL" in table and "83.2 (AECL) | -8.2 |" in table
    tweet = leaderboard.render_leaderboard([_row("sccl", "tweet", 0.70, "r")])[1][0]
    assert (tweet.paper, tweet.paper_label) == (89.6, "HAC-SD, SCCL's Table 1")


def test_a_paper_that_reports_purity_is_compared_in_purity_and_the_others_keep_acc_and_nmi(bench):
    store = {"runs": {"r": RUN}, "rows": []}
    for name in ("decmlm", "sccl"):
        bench.put_row(store, {**_row(name, "trec6", 0.5, "r"), "init_kmeans_purity": 0.375})
    lines = method_section.render(store, store["rows"])
    decmlm, sccl = (lines.index(f"## {name}") for name in ("DEC-MLM", "SCCL"))
    header = next(line for line in lines[decmlm:] if line.startswith("| dataset"))
    assert header.split(" | ")[10:12] == ["k-means before purity", "paper purity"]
    row = next(line for line in lines[decmlm:] if line.startswith("| trec6"))
    assert row.split(" | ")[10:12] == ["37.5", "39.9"]  # the paper's 39.9 beside the run's own k-means before
    assert len(row.split(" | ")) == len(header.split(" | "))
    assert "paper purity" not in next(line for line in lines[sccl:] if line.startswith("| dataset"))


def test_verdict_names_a_better_variant_and_leaves_out_other_encoders_and_held_out_splits(bench):
    main = _row("decmlm", "tweet", 0.60, "r")
    variant = {**_row("decmlm", "tweet", 0.62, "r"), "variant": "w/o MLM", "kmeans_acc": 0.80}
    mpnet = {**_row("sccl", "tweet", 0.95, "r"), "variant": "all-mpnet-base-v2", "encoder": "mpnet"}
    held_out = {**_row("deccrl", "tweet", 0.97, "r"), "variant": "held-out split"}
    verdict = leaderboard.render_leaderboard([main, variant, mpnet, held_out])[1][0]
    assert verdict.ours == 60.0
    assert (verdict.any_config, verdict.any_config_how) == (80.0, "DEC-MLM w/o MLM, k-means after; 1 seed")
    assert (
        "| 80.0 (DEC-MLM w/o MLM, k-means after; 1 seed) | not measured |"
        in leaderboard.verdict_table([verdict], "dataset")[2]
    )


def test_verdict_gives_what_train_serves_by_default_the_auto_runs_served_partition(bench):
    """The served column is `train --method auto`'s served ACC (not a method's head, nor the oracle), its mean over
    seeds, with its differences to the strongest baseline and the best reported number; a variant's runs (another
    configuration) stay out, and a corpus without an auto run says so."""

    def auto(seed, served, variant=""):
        return {
            "section": "auto",
            "method": "auto",
            "dataset": "tweet",
            "seed": seed,
            "run": "r",
            "variant": variant,
            "served_by_default": "self_training/kmeans",
            "served_acc": served,
            "oracle": "consensus",
            "oracle_acc": 0.95,
        }

    baseline = {
        "section": "baselines",
        "method": "embeddings-kmeans",
        "dataset": "tweet",
        "seed": 0,
        "acc": 0.64,
        "nmi": 0.8,
        "run": "r",
    }
    rows = [_row("sccl", "tweet", 0.61, "r"), _row("aecl", "tweet", 0.90, "r"), baseline]
    assert leaderboard.render_leaderboard(rows)[1][0].served is None
    rows += [auto(0, 0.67), auto(1, 0.69), auto(0, 0.99, variant="10x")]
    verdict = leaderboard.render_leaderboard(rows)[1][0]
    assert (round(verdict.served, 6), verdict.served_how) == (68.0, "auto; 2 seeds")
    assert leaderboard.verdict_table([verdict], "dataset")[2].endswith("| 68.0 (auto; 2 seeds) | +4.0 | -21.6 |")


def test_render_rewrites_the_committed_results_page_from_its_store():
    """`python -m training.bench render` gives back docs/results.md exactly from docs/results.json."""
    docs = Path(__file__).resolve().parents[2] / "docs"
    assert render.render(json.loads((docs / "results.json").read_text())) == (docs / "results.md").read_text()


def test_render_rewrites_the_committed_readme_table_from_its_store():
    """README's table of the default, and the line saying what its marks mean, are what the store renders today."""
    repo = Path(__file__).resolve().parents[2]
    store = json.loads((repo / "docs" / "results.json").read_text())
    table = auto_tables.readme_table(store, store["rows"], render.README_CORPUS_NAMES)
    readme = (repo / "README.md").read_text()
    assert table and render.readme_with_table(readme, table) == readme, "run `python -m training.bench render`"
    legend = "\n".join(table).split("|")[-1]  # after the last cell: the marks' line, if any
    for mark in ("‡", "–"):
        assert (mark in "\n".join(line for line in table if line.startswith("|"))) == (mark in legend), mark


def test_each_section_and_each_registered_method_is_a_sub_command():
    from hf_textcluster.models import METHODS
    from training.bench.__main__ import SECTIONS, build_parser

    parser = build_parser()
    for name in [*SECTIONS, *METHODS]:
        assert parser.parse_args([name] + (["--from", "x.jsonl"] if name == "authors-sccl" else [])).section == name
    args = parser.parse_args(["sccl", "--datasets", "tweet", "--seeds", "0", "--max-steps", "5", "--skip-done"])
    assert (args.datasets, args.seeds, args.max_steps, args.skip_done) == (["tweet"], [0], 5, True)
    with pytest.raises(SystemExit):
        parser.parse_args(["authors-sccl"])  # --from is required


def _scored(method, dataset, seed, accs, served, run="r"):
    """A method row with partition columns: ``accs`` maps candidate -> ACC; the oracle is the best of them."""
    oracle = max(accs, key=accs.get)
    return {
        **_row(method, dataset, accs["head"], run),
        "seed": seed,
        "selection_criterion": "silhouette",
        "partitions": {n: {"acc": a, "nmi": a, "selection": 0.1} for n, a in accs.items()},
        "served_by_default": served,
        "served_acc": accs[served],
        "served_nmi": accs[served],
        "oracle": oracle,
        "oracle_acc": accs[oracle],
        "oracle_nmi": accs[oracle],
        "partitions_seconds": 30.0,
    }


def test_partitions_section_scores_the_label_free_choice_against_the_oracle(bench):
    rows = [
        _scored("sccl", "stackoverflow", 0, {"head": 0.70, "kmeans": 0.75, "kmeans+refined": 0.80}, "kmeans+refined"),
        _scored("sccl", "stackoverflow", 1, {"head": 0.72, "kmeans": 0.78, "kmeans+refined": 0.76}, "kmeans+refined"),
        _scored("aecl", "tweet", 0, {"head": 0.60, "kmeans": 0.50, "kmeans+refined": 0.55}, "kmeans"),
    ]
    md = "\n".join(partitions.render({"runs": {"r": RUN}}, rows))
    assert "| head ACC | kmeans ACC | kmeans+refined ACC | served ACC |" in md
    # served 80 / 76 against the oracle 80 / 78: one of two seeds hits it, -1.0 on average
    assert (
        "| SCCL | stackoverflow | 71.0 ± 1.4 | 76.5 ± 2.1 | 78.0 ± 2.8 | 78.0 ± 2.8 | kmeans+refined | 79.0 ± 1.4 "
        "| kmeans ×1, kmeans+refined ×1 | -1.0 | 2 |"
    ) in md
    assert "| AECL | tweet | 60.0 | 50.0 | 55.0 | 50.0 | kmeans | 60.0 | head | -10.0 | 1 |" in md
    assert "picks the oracle's partition in 1 of 3 runs" in md and "4.0 points on average" in md
    assert "largest 10.0" in md and "**chosen with labels**" in md
    # served against the head: +10, +4, -10
    assert "better in 2, equal in 0 and worse in 1 of 3 runs: +1.3 ACC on average (from -10.0 to +10.0)" in md
    assert partitions.render({"runs": {}}, [_row("sccl", "tweet", 0.7, "r")]) == []  # no columns, no section


def test_the_leaderboard_sets_what_is_served_beside_the_shallow_baselines_and_their_refined_versions(bench):
    base = {"section": "baselines", "dataset": "stackoverflow", "seed": 0, "run": "r", "nmi": 0.5, "seconds": 1.0}
    rows = [
        _scored("sccl", "stackoverflow", 0, {"head": 0.70, "umap_kmeans+refined": 0.85}, "umap_kmeans+refined"),
        {**base, "method": "embeddings-kmeans", "acc": 0.72},
        {
            **base,
            "method": "embeddings-kmeans+refined",
            "acc": 0.74,
            "unrefined_acc": 0.72,
            "refinement": {"declined": False},
        },
        {
            **base,
            "section": "auto-k",
            "method": "bertopic-kmeans",
            "acc": 0.80,
            "k_found": 20,
            "k_true": 20,
            "num_texts": 100,
            "true_k_acc": 0.72,
            "true_k_nmi": 0.5,
        },
    ]
    md = "\n".join(partitions.render_served_against_baselines(rows))
    assert "| stackoverflow | SCCL | 85.0 (umap_kmeans+refined) | 72.0 | 74.0 | 80.0 | – | +5.0 |" in md
    assert "| stackoverflow | MiniLM + k-means, refined | 72.0 | 74.0 | 50.0 | 0 | 1 |" in "\n".join(
        partitions.render({"runs": {}}, rows)
    )
    assert "| stackoverflow | MiniLM + k-means, refined | 72.0 | 74.0 | 50.0 | 0 | 1 |" in "\n".join(
        partitions.render({"runs": {}}, rows[1:])
    )  # refined baselines alone: their table still
    store = {"runs": {"r": RUN}, "rows": []}
    for row in rows:
        bench.put_row(store, row)
    bench.save_store(store)
    page = bench.RESULTS_MD.read_text()
    assert page.index("## Leaderboard") < page.index("Served by default") < page.index("## Serve the head")
    assert "74.0" not in page.split("## Leaderboard")[0].split("## SCCL")[0]  # refined rows stay out of the baselines


def test_partition_scores_of_a_model_rank_every_candidate_as_served(tiny_encoder_dir, toy_corpus):
    from hf_textcluster import SCCLModel

    texts, labels = toy_corpus
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, texts, random_state=0)
    fields = partitions.partition_scores(model, texts, labels, seed=0)
    assert fields["partitions"]["head"]["acc"] == pytest.approx(
        __import__("hf_textcluster").evaluation.metrics.clustering_scores(labels, model.predict(texts))["acc"]
    )
    assert set(fields["refinement"]) == {n for n in fields["partitions"] if n.endswith("+refined")}
    assert fields["oracle_acc"] == max(p["acc"] for p in fields["partitions"].values()) >= fields["served_acc"]
    assert fields["served_by_default"] == max(fields["partitions"], key=lambda n: fields["partitions"][n]["selection"])


def test_partitions_sub_command_adds_its_columns_to_kept_runs_only(
    bench, tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch
):
    import datasets

    import hf_textcluster.runs.train
    from hf_textcluster import SCCLModel
    from hf_textcluster.evaluation.metrics import clustering_scores

    texts, labels = toy_corpus
    monkeypatch.setattr(results, "REPO", tmp_path)
    monkeypatch.setattr(
        hf_textcluster.runs.train,
        "prepare_dataset",
        lambda name, augmentation, data_dir=None, seed=0: datasets.Dataset.from_dict({"text": texts, "label": labels}),
    )
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, texts, random_state=0)
    head = clustering_scores(labels, model.predict(texts))["acc"]
    for seed in (0, 1):
        directory = bench.run_dir("sccl", "stackoverflow", seed, "")
        model.save_pretrained(directory)
        (directory / "training_run.json").write_text(json.dumps({"augmentation": None}))
    store = {"runs": {"r": RUN}, "rows": []}
    rows = [
        {**_row("sccl", "stackoverflow", head, "r"), "seed": 0},
        {**_row("sccl", "stackoverflow", head - 0.1, "r"), "seed": 1},  # not this model
        {**_row("sccl", "stackoverflow", head, "r"), "seed": 2},
    ]  # no kept model
    for row in rows:
        bench.put_row(store, row)
    bench.save_store(store)
    args = argparse.Namespace(datasets=["stackoverflow"], seeds=[0, 1, 2], methods=None, data_dir=None, force=False)
    partitions.run_kept_models(args, store, "partitions-1")
    after = {r["seed"]: r for r in json.loads(bench.RESULTS_JSON.read_text())["rows"]}
    assert (
        after[0]["partitions"]["head"]["acc"] == after[0]["acc"] == head
        and after[0]["partitions_run"] == "partitions-1"
    )
    assert {k: v for k, v in after[0].items() if k in rows[0]} == rows[0]  # stored numbers unchanged
    assert after[1] == rows[1] and after[2] == rows[2]
    assert "## Which partition to serve" in bench.RESULTS_MD.read_text()


def test_processes_section_times_each_pass_in_one_and_two_processes(bench, tiny_encoder_dir, toy_corpus, tmp_path):
    from training.bench import processes

    corpus = tmp_path / "toy.csv"
    corpus.write_text("text,label\n" + "".join(f"{t},{label}\n" for t, label in zip(*toy_corpus)), encoding="utf-8")
    args = argparse.Namespace(
        data_dir=str(tmp_path),
        dataset=str(corpus),
        texts=100,
        encoder=str(tiny_encoder_dir),
        work_dir=str(tmp_path / "work"),
    )
    store = bench.load_store()
    store["runs"]["p"] = {**RUN, "command": "bench.py processes"}
    processes.run(args, store, "p")
    (row,) = [r for r in bench.load_store()["rows"] if r["section"] == "processes"]
    assert row["num_texts"] == 100 and row["same_predictions"] and row["same_clusters_threads"]
    assert sorted(row["layouts"]) == ["1x1", "1x2", "2x1"]
    assert [row["layouts"][k]["processes"] for k in ("1x1", "2x1", "1x2")] == [1, 2, 1]
    assert all(set(layout["seconds"]) == set(processes.PASSES) for layout in row["layouts"].values())
    page = bench.RESULTS_MD.read_text()
    assert "## Across processes" in page and "| **all four** |" in page and "byte-identical to" in page


def test_partitions_section_compares_every_recorded_criterion_on_the_same_runs(bench):
    rows = [
        _scored("sccl", "stackoverflow", 0, {"head": 0.70, "kmeans": 0.75, "kmeans+refined": 0.80}, "kmeans+refined"),
        _scored("aecl", "tweet", 0, {"head": 0.60, "kmeans": 0.50, "kmeans+refined": 0.55}, "kmeans"),
    ]
    md = "\n".join(partitions.render({"runs": {"r": RUN}}, rows))
    assert "Every criterion's pick" not in md  # rows without the other criteria's values: no table
    for row, agreement in zip(
        rows,
        ({"head": 0.1, "kmeans": 0.3, "kmeans+refined": 0.2}, {"head": 0.9, "kmeans": 0.1, "kmeans+refined": None}),
    ):
        for name, part in row["partitions"].items():
            part["selection"] = 1.0 if name == row["served_by_default"] else 0.0
            part["criteria"] = {"agreement": agreement[name]}
    md = "\n".join(partitions.render({"runs": {"r": RUN}}, rows))
    assert "Every criterion's pick on the same 2 runs" in md
    # the default: stackoverflow's oracle (80, no loss), tweet's kmeans (50 against 60); agreement: kmeans (-5), head
    # (0)
    assert "| **silhouette** | 1 of 2 | 5.0 | 10.0 | " in md
    assert "| agreement | 1 of 2 | 2.5 | 5.0 | " in md


def test_the_topics_table_escapes_the_words_and_class_names_a_model_and_its_data_carry():
    from training.bench import capabilities

    row = {
        "section": "method",
        "method": "deccrl",
        "dataset": "stackoverflow",
        "seed": 0,
        "topics": {
            "0": {"majority_class": "osx|<script>x</script>", "size": 3, "topics": [["a\n# b", "[l](javascript:0)"]]},
        },
    }
    md = "\n".join(capabilities.render_topics([row]))
    assert "<script>" not in md and "\n# b" not in md and "[l](javascript" not in md
    for block in re.findall(r"(?:^\|.*\|\n)+", md + "\n", flags=re.M):  # every table keeps its shape
        assert len({len(re.findall(r"(?<!\\)\|", row)) for row in block.strip().split("\n")}) == 1, block


def _auto_row(dataset, seed, accs: dict, criteria: dict, served: str, served_acc: float):
    """An `auto` section row: candidate -> ACC, candidate -> {criterion: value}."""
    oracle = max(accs, key=accs.get)
    return {
        "section": "auto",
        "method": "auto",
        "dataset": dataset,
        "seed": seed,
        "run": "r",
        "variant": "",
        "cpu_kind": "bf16 AMX",
        "wall_seconds": 100.0,
        "partitions": {n: {"acc": a, "nmi": a, "criteria": criteria[n]} for n, a in accs.items()},
        "selection_criterion": "agreement",
        "served_by_default": served,
        "served_acc": served_acc,
        "oracle": oracle,
        "oracle_acc": accs[oracle],
    }


def test_the_guard_table_serves_the_pick_only_where_every_view_prefers_it(bench):
    """Each form of the do-no-harm guard on the stored criteria: the pick beats the BERTopic way in the lexical vote
    but not in the shared silhouette, so the lexical form serves it and the every-view form does not."""
    from hf_textcluster.choosing.candidate_choice import GUARD_CRITERIA
    from training.bench import auto_tables

    accs = {"pretrained/umap_kmeans": 0.80, "contrastive/kmeans": 0.75}
    lexical, shared, silhouette = GUARD_CRITERIA
    criteria = {
        "pretrained/umap_kmeans": {"agreement": 0.1, lexical: 0.50, shared: 0.50, silhouette: 0.30},
        "contrastive/kmeans": {"agreement": 0.9, lexical: 0.60, shared: 0.60, silhouette: 0.20},
    }
    rows = [_auto_row("tweet", 0, accs, criteria, "pretrained/umap_kmeans", 0.80)]
    table = auto_tables.render_guards(rows, "tuning set")
    assert "| no guard | 5.0 | 5.0 | -5.0 | 1 of 1 | 0 |" in table
    assert "| the lexical vote alone | 5.0 | 5.0 | -5.0 | 1 of 1 | 0 |" in table
    assert "| every view (the default) | 0.0 | 0.0 | +0.0 | 0 of 1 | 1 |" in table
    rows[0]["partitions"]["contrastive/kmeans"]["criteria"].pop(silhouette)
    assert auto_tables.render_guards(rows, "tuning set") == []  # a run without every view is left out


def test_auto_section_scores_the_choice_and_every_criterion_against_the_oracle(bench):
    from training.bench import auto_tables

    accs = {"consensus": 0.80, "contrastive/umap_kmeans": 0.86, "self_training/kmeans": 0.70}
    criteria = {
        "consensus": {"agreement": 0.9, "knn_holdout": 0.5},
        "contrastive/umap_kmeans": {"agreement": 0.8, "knn_holdout": 0.7},
        "self_training/kmeans": {"agreement": 0.7, "knn_holdout": 0.6},
    }
    baseline = {
        "section": "auto-k",
        "method": "bertopic-kmeans",
        "dataset": "tweet",
        "seed": 0,
        "acc": 0.75,
        "nmi": 0.7,
        "run": "r",
    }
    rows = [_auto_row("tweet", 0, accs, criteria, "consensus", 0.79), baseline]
    md = "\n".join(auto_tables.render({"runs": {"r": RUN}}, rows))
    # the served model's ACC, its candidate, the oracle (labels) and the strongest shallow baseline, with Δ
    assert (
        "| tweet | 79.0 | consensus | 86.0 | contrastive/umap_kmeans | 75.0 (BERTopic way) | +4.0 | "
        "100 (bf16 AMX) | 1 |" in md
    )
    # agreement picks the consensus (loss 6.0), knn_holdout the oracle (loss 0)
    assert "| agreement | 0 of 1 | 6.0 | 6.0 | – | consensus (1) |" in md
    # what is served: the run's criterion guarded (no pretrained/umap_kmeans here, so its pick), in bold
    assert "| **agreement + do-no-harm guard** | 0 of 1 | 6.0 | 6.0 | – | consensus (1) |" in md
    assert "| knn_holdout | 1 of 1 | 0.0 | 0.0 | – | contrastive/umap_kmeans (1) |" in md
    assert "| always consensus | 0 of 1 | 6.0 | 6.0 | – | consensus (1) |" in md
    assert "| contrastive/umap_kmeans | **86.0** |" in md
    # the leaderboard in short's served column is the auto run's (the default), not one method's label-free choice
    rows.append({**_row("sccl", "tweet", 0.6, "r"), "partitions": {"head": {"acc": 0.6}}, "served_acc": 0.62})
    verdict = leaderboard.render_leaderboard(rows)[1][0]
    assert (verdict.served, verdict.served_how) == (79.0, "auto; 1 seed")
    assert auto_tables.render({"runs": {}}, [baseline]) == []  # no auto rows, no section
    # another configuration's run (here another CPU kind) is listed apart, never in the default's tables
    other = {**_auto_row("tweet", 0, accs, criteria, "self_training/kmeans", 0.70), "variant": "AVX2-only"}
    other["cpu_kind"], other["wall_seconds"] = "AVX2", 250.0
    md = "\n".join(auto_tables.render({"runs": {"r": RUN}}, [*rows, other]))
    assert "| tweet | AVX2-only | 70.0 | self_training/kmeans | 86.0 | 250 (AVX2) | 1 |" in md
    assert "seed 0: made before" not in md  # no note, no line
    other["note"] = "made before a fix <b>"  # a run's note follows its table, as text
    md = "\n".join(auto_tables.render({"runs": {"r": RUN}}, [*rows, other]))
    assert "- tweet, AVX2-only, seed 0: made before a fix &lt;b&gt;" in md and "<b>" not in md
    assert (
        "| tweet | 79.0 | consensus | 86.0 | contrastive/umap_kmeans | 75.0 (BERTopic way) | +4.0 | "
        "100 (bf16 AMX) | 1 |" in md
    )


def test_rechoose_remakes_the_stored_choice_with_the_guard(bench, capsys):
    """``auto --rechoose``: from the criteria stored with a row alone, the default criterion's pick is served only
    when it beats the BERTopic way by the guard's criterion; the row keeps the pick and the served candidate's ACC."""
    from hf_textcluster.choosing.candidate_choice import DEFAULT_AUTO_CRITERION, GUARD_CRITERIA
    from training.bench import auto

    lexical = GUARD_CRITERIA[0]  # the one guard's view stored here: the guard uses the views it has
    accs = {"pretrained/umap_kmeans": 0.77, "contrastive/umap_kmeans": 0.73, "self_training/kmeans": 0.70}
    votes = {
        "pretrained/umap_kmeans": (0.2, 0.60),
        "contrastive/umap_kmeans": (0.9, 0.59),
        "self_training/kmeans": (0.5, 0.7),
    }
    criteria = {n: {DEFAULT_AUTO_CRITERION: a, lexical: b} for n, (a, b) in votes.items()}
    row = {**_auto_row("googlenews_t", 0, accs, criteria, "contrastive/umap_kmeans", 0.731), "signals": ["contrastive"]}
    row["serving_signal"] = "contrastive"
    store = {"rows": [row], "runs": {"r": RUN}}
    auto.rechoose(argparse.Namespace(datasets=["googlenews_t"], seeds=[0], variant=""), store)
    (stored,) = store["rows"]
    assert stored["criterion_pick"] == "contrastive/umap_kmeans"
    assert stored["served_by_default"] == "pretrained/umap_kmeans" and stored["served_acc"] == 0.77
    assert stored["selection_criterion"] == DEFAULT_AUTO_CRITERION and stored["serving_signal"] == "contrastive"
    assert "serves pretrained/umap_kmeans (was contrastive/umap_kmeans)" in capsys.readouterr().out
    # the pick beating the BERTopic way is served
    criteria["contrastive/umap_kmeans"][lexical] = 0.61
    row = {**row, "partitions": {n: {"acc": a, "nmi": a, "criteria": criteria[n]} for n, a in accs.items()}}
    auto.remake_choice(row)
    assert row["served_by_default"] == "contrastive/umap_kmeans" and row["served_acc"] == 0.731  # as measured


def test_rescore_from_the_committed_candidate_store_needs_no_run_folder(bench, toy_corpus, tmp_path, monkeypatch):
    """A run's candidates kept in the store (int16, compressed, with the texts' digest) give its lexical and pool
    criteria again, and the re-made choice, after the run folder is gone; criteria that need the run's models are
    refused by name."""
    import pandas as pd

    from hf_textcluster.choosing.candidate_choice import DEFAULT_AUTO_CRITERION, GUARD_CRITERIA
    from hf_textcluster.runs.record import texts_sha1
    from training.bench import auto, candidate_store

    texts, labels = toy_corpus
    pd.DataFrame({"text": texts, "label": labels}).to_csv(tmp_path / "toy.csv", index=False)
    monkeypatch.setattr(candidate_store, "STORE_DIR", tmp_path / "candidates")
    monkeypatch.setattr(auto, "run_dir", lambda *a: tmp_path / "no-run-folder")
    truth = np.asarray(labels)
    partitions = {"pretrained/umap_kmeans": truth, "contrastive/kmeans": np.random.default_rng(0).permutation(truth)}
    path = candidate_store.store_path("auto", "toy", 0, "")
    meta = {"texts_sha1": texts_sha1(texts), "num_train_texts": len(texts)}
    candidate_store.save(path, {**partitions, "served": truth}, meta)
    loaded, metadata = candidate_store.load(path)
    assert metadata == {k: str(v) for k, v in meta.items()}
    np.testing.assert_array_equal(loaded["contrastive/kmeans"], partitions["contrastive/kmeans"])
    accs = {"pretrained/umap_kmeans": 1.0, "contrastive/kmeans": 0.4}
    row = {**_auto_row("toy", 0, accs, {n: {} for n in accs}, "contrastive/kmeans", 0.4), "signals": ["contrastive"]}
    row["num_texts"] = len(texts)
    row["serving_signal"] = "contrastive"
    store = {"rows": [row], "runs": {"r": RUN}}
    args = argparse.Namespace(datasets=["toy"], seeds=[0], variant="", data_dir=str(tmp_path), criteria=None)
    auto.rescore(args, store)
    (stored,) = store["rows"]
    votes = {n: p["criteria"][GUARD_CRITERIA[0]] for n, p in stored["partitions"].items()}
    assert votes["pretrained/umap_kmeans"] > votes["contrastive/kmeans"]  # the topics against a shuffle of them
    assert DEFAULT_AUTO_CRITERION in stored["partitions"]["contrastive/kmeans"]["criteria"]
    assert stored["served_by_default"] == "pretrained/umap_kmeans" and stored["served_acc"] == 1.0
    with pytest.raises(SystemExit, match="knn_holdout_shared needs the run's models"):
        auto.rescore(argparse.Namespace(**{**vars(args), "criteria": ["knn_holdout_shared"]}), store)
    candidate_store.save(path, partitions, {**meta, "texts_sha1": "other"})
    with pytest.raises(SystemExit, match="other texts"):
        auto.rescore(args, store)


def test_rescore_refuses_a_row_whose_candidates_were_recomputed(bench, tmp_path, monkeypatch):
    """A recomputed row's candidates are not the ones its run folder keeps: rescoring them would mix two runs."""
    from training.bench import auto

    monkeypatch.setattr(auto, "run_dir", lambda *a: tmp_path)
    accs = {"consensus": 0.8, "self_training/kmeans": 0.7}
    row = _auto_row("tweet", 0, accs, {n: {} for n in accs}, "consensus", 0.8)
    row["note"] = f"{auto.RECOMPUTED} on 2026-11-26 from the run's kept signal models"
    args = argparse.Namespace(datasets=["tweet"], seeds=[0], variant="", data_dir=None, criteria=None)
    with pytest.raises(SystemExit, match="--recompute-candidates"):
        auto.rescore(args, {"rows": [row], "runs": {"r": RUN}})


def test_profile_section_tables_each_runs_phases_and_marks_a_run_beside_another_job(bench):
    from training.bench import phases

    seconds = {
        "data": 0.5,
        "contrastive/data": 0.1,
        "contrastive/train": 100.0,
        "contrastive/train/init": 10.0,
        "self_training/train": 50.0,
        "candidates": 30.0,
        "candidates/contrastive/embed": 3.0,
        "criteria": 2.0,
        "calibrate": 1.0,
    }
    row = {
        "section": "profile",
        "method": "auto",
        "dataset": "stackoverflow:2500",
        "seed": 0,
        "run": "r",
        "variant": "",
        "cpu_kind": "bf16 AMX",
        "wall_seconds": 190.0,
        "estimate_seconds": 170.0,
        "seconds": seconds,
        "served_acc": 0.8,
    }
    slowed = {**row, "variant": "frozen", "training": {"frozen_layers": 3}, "note": "time inflated: load 2.10"}
    md = "\n".join(phases.render({"runs": {"r": RUN}, "rows": [row, slowed]}, [row, slowed]))
    assert "### stackoverflow, 2,500 texts" in md
    assert "| phase | default (seed 0, bf16 AMX) | frozen (seed 0, bf16 AMX) † |" in md
    assert "| contrastive: k-means start | 10.0 | 10.0 |" in md
    assert "| contrastive: steps | 90.0 | 90.0 |" in md  # the steps without the k-means start inside them
    assert "| candidates | 30.0 | 30.0 |" in md and "candidates/contrastive" not in md
    assert "| **wall** | **190** | **190** |" in md and "| served ACC | 80.0 | 80.0 |" in md
    assert '`{"frozen_layers": 3}`' in md
    assert phases.render({"runs": {}}, []) == []
