"""The compute-curve section (``python -m training.bench compute-curve``): its table keeps each processor and encoder
on a line of its own and leaves quick checks out, a row's processor comes from its machine, run_paper.py's ``--bench``
runs a section on the carried corpora and encoder, and a tiny run stores one row per scale and resumes."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # training/ is a folder of the checkout, not installed
from training.bench import common, compute_curve  # noqa: E402
from training.bench.__main__ import main  # noqa: E402

CPU = "AMD EPYC, AVX512 + AVX512-BF16 (native bf16), 2 cores, torch threads 2, Python 3.11.7"
GPU = CPU + ", GPU NVIDIA H200"
RUNS = {
    "cpu-run": {
        "command": "python -m training.bench compute-curve",
        "date": "2026-11-23",
        "machine": CPU,
        "versions": {},
    },
    "gpu-run": {
        "command": "python -m training.bench compute-curve --encoder runs/carry-restored/encoder/all-MiniLM-L6-v2-fp16",
        "date": "2026-11-24",
        "machine": GPU,
        "versions": {"torch": "2.5.1"},
    },
}


FP16 = "all-MiniLM-L6-v2-fp16"


def _row(run, seed, variant, scale, steps, acc, seconds, served="head", **extra):
    """A row as compute_curve.run writes it (the health history and per-candidate details aside)."""
    return {
        "section": "compute-curve",
        "method": "sccl",
        "dataset": "tweet",
        "seed": seed,
        "run": run,
        "variant": variant,
        "signal": "contrastive",
        "scale": scale,
        "steps": steps,
        "batch_size": 64,
        "cpu_kind": common.cpu_kind(RUNS[run]["machine"]),
        "train_seconds": seconds,
        "partitions": {"head": {"acc": acc}, "kmeans": {"acc": acc - 0.05}},
        "served_by_default": served,
        "served_acc": acc + 0.02,
        "oracle_acc": acc + 0.1,
        **extra,
    }


def _table(lines):
    """The table's body: one list of cells per line."""
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("| tweet")]


@pytest.mark.parametrize("kind_stored", [True, False], ids=["kind in the row", "kind from the run's machine"])
def test_cpu_and_gpu_rows_get_lines_of_their_own_and_quick_checks_stay_out(kind_stored):
    rows = [
        _row("cpu-run", 0, "contrastive x1", 1, 30, 0.60, 100.0),
        _row("cpu-run", 1, "contrastive x1", 1, 30, 0.70, 120.0, served="kmeans+refined"),
        _row("cpu-run", 0, "contrastive x10", 10, 300, 0.50, 1000.0),
        _row("gpu-run", 0, "contrastive x10, all-MiniLM-L6-v2-fp16, NVIDIA H200", 10, 300, 0.80, 40.0, encoder=FP16),
        _row("gpu-run", 1, "contrastive x10, all-MiniLM-L6-v2-fp16, NVIDIA H200", 10, 300, 0.90, 60.0, encoder=FP16),
        # quick checks (--limit): as run() writes them now, and an older one without the limit field
        _row("cpu-run", 0, "contrastive x1, 50 texts", 1, 30, 0.10, 5.0, limit=50),
        _row("cpu-run", 1, "contrastive x1, 50 texts", 1, 30, 0.10, 5.0),
    ]
    if not kind_stored:
        for row in rows:
            del row["cpu_kind"]
    store = {"runs": RUNS, "rows": rows}
    lines = compute_curve.render(store, rows)
    assert lines[0] == "## How quality moves with compute"
    header = next(line for line in lines if line.startswith("| dataset"))
    assert [c.strip() for c in header.strip("|").split("|")][4] == "trained on"
    assert _table(lines) == [
        # dataset, signal, x steps, steps, trained on, head, served (candidate), oracle, train s, seeds
        [
            "tweet",
            "contrastive",
            "1",
            "30",
            "bf16 AVX512",
            "65.0 ± 7.1",
            "67.0 ± 7.1 (head, kmeans+refined)",
            "75.0 ± 7.1",
            "110",
            "2",
        ],
        [
            "tweet",
            "contrastive",
            "10",
            "300",
            "GPU NVIDIA H200, all-MiniLM-L6-v2-fp16",
            "85.0 ± 7.1",
            "87.0 ± 7.1 (head)",
            "95.0 ± 7.1",
            "50",
            "2",
        ],
        ["tweet", "contrastive", "10", "300", "bf16 AVX512", "50.0", "52.0 (head)", "60.0", "1000", "1"],
    ]
    assert not any("texts" in line or "10.0" in line for line in lines)  # the quick checks' ACC is 10%
    runs = [line for line in lines if line.startswith("- `")]
    assert len(runs) == 2 and CPU in runs[0] and GPU in runs[1] and "torch 2.5.1" in runs[1]


def test_render_has_nothing_without_full_rows():
    quick = _row("cpu-run", 0, "contrastive x1, 50 texts", 1, 30, 0.1, 5.0, limit=50)
    assert compute_curve.render({"runs": RUNS, "rows": [quick]}, [quick]) == []


@pytest.mark.parametrize(
    ("machine", "kind"),
    [
        (GPU, "GPU NVIDIA H200"),
        (
            "Intel(R) Xeon(R) Processor, AVX512 + AVX512-BF16 + AMX (native bf16), 16 cores, GPU NVIDIA H100 80GB HBM3",
            "GPU NVIDIA H100 80GB HBM3",
        ),
        (CPU, "bf16 AVX512"),
        ("Intel(R) Xeon(R) Processor, AVX512 + AVX512-BF16 + AMX (native bf16), 2 cores, torch threads 2", "bf16 AMX"),
        ("AMD EPYC, AVX2 (no native bf16), 2 cores, torch threads 2, Python 3.11.7", "AVX2"),
        (
            "Intel(R) Xeon(R) Processor, AVX2 + AVX512-BF16 + AMX (no native bf16) [ONEDNN_MAX_CPU_ISA=AVX2], 2 cores",
            "AVX2",
        ),
        ("", "?"),
    ],
)
def test_cpu_kind_names_the_gpu_where_one_trained_else_the_cpu_kind(machine, kind):
    assert common.cpu_kind(machine) == kind


def _load_run_paper():
    spec = importlib.util.spec_from_file_location("run_paper", REPO / "training" / "accelerator" / "run_paper.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_paper"] = module
    spec.loader.exec_module(module)
    return module


def test_run_paper_bench_runs_the_section_on_the_carried_corpora_and_encoder(tmp_path, monkeypatch):
    run_paper = _load_run_paper()
    prepared, ran = [], []
    env = {"HF_TEXTCLUSTER_BENCH_STORE": str(tmp_path / "out" / "results.json")}

    def prepare(carry, out):
        prepared.append((carry, out))
        return tmp_path / "encoder", tmp_path / "data", out / "results.json", env

    def run(command, **kwargs):
        ran.append((command, kwargs))
        return types.SimpleNamespace(returncode=3)

    monkeypatch.setattr(run_paper, "prepare", prepare)
    monkeypatch.setattr(run_paper, "subprocess", types.SimpleNamespace(run=run))
    argv = ["--bench", "compute-curve", "--out", str(tmp_path / "out"), "--", "--datasets", "x", "--seeds", "0", "1"]
    assert run_paper.main(argv) == 3  # the section's exit status
    assert prepared == [(run_paper.CARRY, (tmp_path / "out").resolve())]
    ((command, kwargs),) = ran
    assert command == [
        sys.executable,
        "-m",
        "training.bench",
        "compute-curve",
        "--datasets",
        "x",
        "--seeds",  # after --: the section's, not run_paper's own --seeds
        "0",
        "1",
        "--data-dir",
        str(tmp_path / "data"),
        "--encoder",
        str(tmp_path / "encoder"),
    ]
    assert kwargs == {"cwd": run_paper.REPO, "env": env}


def _corpus_folder(folder: Path, texts, labels) -> Path:
    """``stackoverflow.csv`` (``text,label``, the corpus's label ids 1..3) and its row-aligned sccl_contextual views
    (``label,text,text1,text2``), as a benchmark data folder holds them."""
    import csv

    (folder / "augmented" / "sccl_contextual").mkdir(parents=True)
    with (
        open(folder / "stackoverflow.csv", "w", newline="") as primary,
        open(folder / "augmented" / "sccl_contextual" / "stackoverflow.csv", "w", newline="") as views,
    ):
        primary_rows, view_rows = csv.writer(primary), csv.writer(views)
        primary_rows.writerow(["text", "label"])
        view_rows.writerow(["label", "text", "text1", "text2"])
        for text, label in zip(texts, labels):
            primary_rows.writerow([text, label + 1])
            view_rows.writerow([label + 1, text, f"{text} one", f"two {text}"])
    return folder


def test_a_tiny_compute_curve_stores_a_row_per_scale_and_skips_them_when_done(
    bench_store, tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch
):
    """Two steps at x1 and x2 of the contrastive signal on a tiny encoder and a toy StackOverflow folder with its
    sccl_contextual views (the views auto trains on), then the same command with --skip-done."""
    from training.bench import precomputed

    data = _corpus_folder(tmp_path / "data", *toy_corpus)
    load_with_views, loaded = precomputed.load_with_views, []

    def load(name, family, data_dir=None):
        loaded.append((name, data_dir, family))
        return load_with_views(name, family, data_dir=data_dir, cache_dir=tmp_path / "cache")

    monkeypatch.setattr(precomputed, "load_with_views", load)
    argv = [
        "compute-curve",
        "--datasets",
        "stackoverflow",
        "--seeds",
        "0",
        "--signals",
        "contrastive",
        "--base-steps",
        "2",
        "--scales",
        "1",
        "2",
        "--data-dir",
        str(data),
        "--encoder",
        str(tiny_encoder_dir),
        "--skip-done",
    ]
    assert main(argv) == 0
    assert loaded == [("stackoverflow", str(data), "sccl_contextual")]
    rows = [r for r in json.loads(bench_store.RESULTS_JSON.read_text())["rows"] if r["section"] == "compute-curve"]
    name = common.encoder_variant(str(tiny_encoder_dir))
    assert [(r["variant"], r["scale"], r["steps"], r["signal"], r["method"]) for r in rows] == [
        (f"contrastive x1, {name}", 1, 2, "contrastive", "sccl"),
        (f"contrastive x2, {name}", 2, 4, "contrastive", "sccl"),
    ]
    for row in rows:
        assert "limit" not in row and row["cpu_kind"] == common.cpu_kind(common.environment()["machine"])
        assert row["oracle_acc"] == max(p["acc"] for p in row["partitions"].values()) >= row["served_acc"]
        assert (bench_store.run_dir("compute-curve", "stackoverflow", 0, row["variant"]) / "model.safetensors").exists()
    page = bench_store.RESULTS_MD.read_text()
    assert "## How quality moves with compute" in page and f"| {rows[0]['cpu_kind']}, {name} |" in page
    stored = bench_store.RESULTS_JSON.read_text()
    assert main(argv) == 0
    # nothing trained again
    assert json.loads(bench_store.RESULTS_JSON.read_text())["rows"] == json.loads(stored)["rows"]
