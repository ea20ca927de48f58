"""Pictures: hf_textcluster.apps.plotting, `hf-textcluster plot` and training/figures.py (issue 14)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure  # noqa: E402

from hf_textcluster.apps import plotting, training_curves  # noqa: E402
from hf_textcluster.cli import main  # noqa: E402
from training.bench import leaderboard_plot as leaderboard  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 1000 and path.read_bytes()[:8] == PNG_MAGIC


def _blobs(n_per: int = 40, classes: int = 3, dim: int = 16, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(4 * i, 1.0, (n_per, dim)) for i in range(classes)]).astype(np.float32)
    return x, np.repeat(np.arange(classes), n_per)


def _colours(ax) -> set[tuple]:
    return {tuple(np.round(c, 4)) for c in ax.collections[0].get_facecolors()}


# ----- the functions ------------------------------------------------------------------------------------------------
def test_embedding_map_umap_colours_by_label_when_given(tmp_path):
    x, labels = _blobs()
    clusters = np.arange(len(x)) % 5  # 5 clusters that cut across the 3 labels
    fig = plotting.plot_embedding_map(
        x, labels=labels, clusters=clusters, label_names=["a", "b", "c"], path=tmp_path / "map.png"
    )
    assert isinstance(fig, Figure) and _png(tmp_path / "map.png")
    ax = fig.axes[0]
    assert len(_colours(ax)) == 3  # by label, not by the 5 clusters
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b", "c"]
    assert "UMAP" in ax.get_title() and "label" in ax.get_title()


def test_embedding_map_by_cluster_without_labels_and_seeded_sample(tmp_path):
    x, _ = _blobs(n_per=100)
    clusters = np.arange(len(x)) % 5
    fig = plotting.plot_embedding_map(x, clusters=clusters, method="pca", sample_size=50, path=tmp_path / "m.png")
    ax = fig.axes[0]
    assert len(ax.collections[0].get_offsets()) == 50 and "50 of 300" in ax.get_title()
    assert len(_colours(ax)) == 5 and "cluster" in ax.get_title()
    again = plotting.plot_embedding_map(x, clusters=clusters, method="pca", sample_size=50)
    assert np.allclose(
        np.sort(again.axes[0].collections[0].get_offsets(), axis=0), np.sort(ax.collections[0].get_offsets(), axis=0)
    )  # same seed, same sample
    assert _png(tmp_path / "m.png")


def test_embedding_map_errors():
    x, labels = _blobs()
    with pytest.raises(ValueError, match="one per embedding row"):
        plotting.plot_embedding_map(x, labels=labels[:-1], method="pca")
    with pytest.raises(ValueError, match="umap, tsne, pca"):
        plotting.plot_embedding_map(x, method="mds")
    with pytest.raises(ValueError, match="2-D matrix"):
        plotting.plot_embedding_map(x[0], method="pca")


def test_maps_before_after_share_the_sample(tmp_path):
    x, labels = _blobs(n_per=20)
    after = x + np.random.default_rng(1).normal(0, 0.5, x.shape).astype(np.float32)
    fig = plotting.plot_maps_before_after(
        x, after, labels, method="tsne", sample_size=45, path=tmp_path / "ba.png", titles=("before", "after")
    )
    assert isinstance(fig, Figure) and _png(tmp_path / "ba.png")
    maps = [ax for ax in fig.axes if ax.collections]
    assert [ax.get_title() for ax in maps] == ["before", "after"]
    assert all(len(ax.collections[0].get_offsets()) == 45 and len(_colours(ax)) == 3 for ax in maps)
    with pytest.raises(ValueError, match="same texts"):
        plotting.plot_maps_before_after(x, after[:-1], labels, method="pca")


def test_cluster_sizes_sorted_with_names(tmp_path):
    clusters = np.array([2] * 5 + [0] * 3 + [1] * 1)
    fig = plotting.plot_cluster_sizes(
        clusters, 4, names={0: "oracle", 1: "svn", 2: "excel", 3: "qt"}, path=tmp_path / "sizes.png"
    )
    assert isinstance(fig, Figure) and _png(tmp_path / "sizes.png")
    ax = fig.axes[0]
    assert [p.get_height() for p in ax.patches] == [5, 3, 1, 0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["excel", "oracle", "svn", "qt"]
    assert "3 of 4 clusters" in ax.get_title()
    with pytest.raises(ValueError, match="num_clusters"):
        plotting.plot_cluster_sizes(clusters, 2)


def _log_history() -> list[dict]:
    history = [
        {
            "loss": 2.0 - 0.1 * i,
            "loss_instance": 1.5 - 0.1 * i,
            "loss_cluster": 0.5,
            "learning_rate": 1e-5,
            "step": 10 * (i + 1),
            "epoch": 0.1 * i,
        }
        for i in range(5)
    ]
    history[1].update(health_agreement=0.9, health_size_entropy=0.97, health_clusters_used=3.0)
    history[3].update(health_agreement=0.85, health_size_entropy=0.95, health_clusters_used=3.0, health_changed=0.02)
    history.append({"eval_acc": 0.7, "eval_nmi": 0.6, "step": 50, "epoch": 0.5})
    history.append({"train_runtime": 1.0, "train_loss": 1.8, "step": 50})
    return history


def test_training_curves_one_panel_per_loss_term_and_health(tmp_path):
    fig = training_curves.plot_training_curves(_log_history(), path=tmp_path / "curves.png")
    assert isinstance(fig, Figure) and _png(tmp_path / "curves.png")
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert titles == ["total loss", "loss term: instance", "loss term: cluster", "cluster health and scores"]
    health = next(ax for ax in fig.axes if ax.get_title().startswith("cluster health"))
    legend = [t.get_text() for t in health.get_legend().get_texts()]
    assert {"health_agreement", "health_size_entropy", "health_changed", "eval_acc", "eval_nmi"} <= set(legend)
    assert "health_clusters_used (right)" in legend


def test_training_curves_from_a_checkpoint_trainer_state(tmp_path):
    checkpoint = tmp_path / "run" / "checkpoint-50"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 50, "log_history": _log_history()}))
    for source in (tmp_path / "run", checkpoint, checkpoint / "trainer_state.json"):
        assert len(training_curves.load_log_history(source)) == 7
    assert isinstance(training_curves.plot_training_curves(tmp_path / "run"), Figure)
    with pytest.raises(FileNotFoundError, match="save_strategy='no'"):
        training_curves.load_log_history(tmp_path)
    with pytest.raises(ValueError, match="nothing to plot"):
        training_curves.plot_training_curves([{"train_runtime": 1.0, "step": 5}])


def _results_rows() -> list[dict]:
    rows = []
    for seed, shift in ((0, 0.0), (1, 0.02)):
        for method, acc in (("bow-kmeans", 0.3), ("tfidf-kmeans", 0.5), ("embeddings-kmeans", 0.7)):
            rows += [
                {"section": "baselines", "method": method, "dataset": d, "seed": seed, "acc": acc + shift, "nmi": acc}
                for d in ("stackoverflow", "agnews")
            ]
        rows.append(
            {
                "section": "method",
                "method": "sccl",
                "dataset": "stackoverflow",
                "seed": seed,
                "variant": "",
                "acc": 0.8 + shift,
                "kmeans_acc": 0.75,
                "nmi": 0.7,
                "kmeans_nmi": 0.7,
                "init_kmeans_acc": 0.7,
                "steps": 2,
                "health": [
                    {"step": 1, "agreement": 0.9, "size_entropy": 0.9, "clusters_used": 3.0},
                    {"step": 2, "agreement": 0.8, "size_entropy": 0.9, "clusters_used": 3.0, "changed": 0.1},
                ],
            }
        )
    rows.append(
        {
            "section": "method",
            "method": "sccl",
            "dataset": "stackoverflow",
            "seed": 0,
            "variant": "w/o x",
            "acc": 0.1,
            "kmeans_acc": 0.1,
        }
    )
    rows.append({"section": "speed", "method": "sccl", "dataset": "stackoverflow", "seed": None, "variant": ""})
    return rows


def test_leaderboard_groups_methods_and_baselines_mean_over_seeds(tmp_path):
    fig = leaderboard.plot_leaderboard(_results_rows(), path=tmp_path / "lb.png")
    assert isinstance(fig, Figure) and _png(tmp_path / "lb.png")
    ax = fig.axes[0]
    names = [t.get_text() for t in ax.get_legend().get_texts()]
    assert names == ["bow-kmeans", "tfidf-kmeans", "embeddings-kmeans", "SCCL head", "SCCL k-means on its embeddings"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["agnews", "stackoverflow"]  # corpus order of the registry
    corpora, series = leaderboard.leaderboard_table({"rows": _results_rows()})
    assert np.mean(series["SCCL head"]["stackoverflow"]) == pytest.approx(81.0)  # variants other than "" left out
    assert "agnews" not in series["SCCL head"]
    heights = {round(p.get_height(), 3) for p in ax.patches if np.isfinite(p.get_height())}
    assert 81.0 in heights and 31.0 in heights  # means over the two seeds
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"rows": _results_rows(), "runs": {}}))
    assert isinstance(leaderboard.plot_leaderboard(results, metric="nmi"), Figure)
    with pytest.raises(ValueError, match="No rows for"):
        leaderboard.plot_leaderboard(results, datasets=["tweet"])


def test_package_imports_without_the_plot_extra():
    code = (
        "import sys\n"
        "sys.modules['matplotlib'] = None; sys.modules['umap'] = None\n"
        "import hf_textcluster, hf_textcluster.cli, hf_textcluster.apps.plotting as p\n"
        "try:\n"
        "    p.plot_cluster_sizes([0, 1, 1], 2)\n"
        "except ImportError as err:\n"
        "    print('ERR', err)\n"
        "try:\n"
        "    p.project_2d([[0.0, 1.0]] * 5, method='umap')\n"
        "except ImportError as err:\n"
        "    print('ERR', err)\n"
        "print(p.project_2d([[0.0, 1.0, 2.0], [1.0, 0.0, 2.0], [2.0, 1.0, 0.0], [0.0, 2.0, 1.0]], "
        "method='pca').shape)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    lines = out.strip().splitlines()
    assert lines[0].startswith("ERR Plotting needs matplotlib") and 'pip install "hf_textcluster[plot]"' in lines[0]
    assert lines[1].startswith("ERR UMAP maps need umap-learn") and "pip install umap-learn" in lines[1]
    assert lines[2] == "(4, 2)"


# ----- hf-textcluster plot ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def trained_dir(tiny_encoder_dir, toy_corpus, tmp_path_factory) -> Path:
    from hf_textcluster import train_clusterer
    from hf_textcluster.data import load_texts

    texts, labels = toy_corpus
    out_dir = tmp_path_factory.mktemp("runs") / "sccl-stackoverflow-seed0"
    train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(out_dir),
        encoder=str(tiny_encoder_dir),
        augmentation="word_deletion",
        evaluate=False,
        training_overrides={
            "max_steps": 2,
            "per_device_train_batch_size": 16,
            "bf16": False,
            "save_strategy": "no",
            "disable_tqdm": True,
        },
    )
    return out_dir


def _texts_file(tmp_path: Path, toy_corpus) -> Path:
    texts, labels = toy_corpus
    path = tmp_path / "texts.jsonl"
    path.write_text(
        "\n".join(json.dumps({"body": t, "topic": ["sql", "code", "apps"][y]}) for t, y in zip(texts, labels))
    )
    return path


def test_cli_plot_writes_map_by_cluster_and_label_with_sizes(trained_dir, toy_corpus, tmp_path, capsys):
    data = _texts_file(tmp_path, toy_corpus)
    output = tmp_path / "map.png"
    code = main(
        [
            "plot",
            "--model",
            str(trained_dir),
            "--input",
            str(data),
            "--text-column",
            "body",
            "--label-column",
            "topic",
            "--projection",
            "pca",
            "--map-sample",
            "100",
            "--output",
            str(output),
        ]
    )
    assert code == 0
    assert _png(output)
    out = capsys.readouterr().out
    assert f"Wrote {output}" in out and "100 of 120 texts" in out and "'topic'" in out and "3 clusters" in out


def test_cli_plot_without_labels_draws_one_map(trained_dir, toy_corpus, tmp_path, capsys, monkeypatch):
    texts, _ = toy_corpus
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(texts) + "\n")
    monkeypatch.chdir(tmp_path)
    assert main(["plot", "--model", str(trained_dir), "--input", str(data), "--projection", "pca"]) == 0
    assert _png(tmp_path / "map.png")  # the default --output
    captured = capsys.readouterr()
    assert "coloured by cluster, and the sizes" in captured.out


@pytest.mark.parametrize("case", ["no model folder", "no texts file", "bad suffix", "no output folder", "label column"])
def test_cli_plot_errors_are_one_line(case, trained_dir, toy_corpus, tmp_path, capsys):
    data = _texts_file(tmp_path, toy_corpus)
    args = {
        "--model": str(trained_dir),
        "--input": str(data),
        "--text-column": "body",
        "--output": str(tmp_path / "m.png"),
        "--projection": "pca",
    }
    expected = {
        "no model folder": ("--model", str(tmp_path / "missing"), "no such folder"),
        "no texts file": ("--input", str(tmp_path / "missing.csv"), "Text file not found"),
        "bad suffix": ("--output", str(tmp_path / "map.xyz"), "cannot write .xyz"),
        "no output folder": ("--output", str(tmp_path / "nope" / "m.png"), "does not exist"),
        "label column": ("--label-column", "team", "no column 'team'"),
    }[case]
    args[expected[0]] = expected[1]
    assert main(["plot", *[item for pair in args.items() for item in pair]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and expected[2] in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m.png").exists()


# ----- training/figures.py ------------------------------------------------------------------------------------------
@pytest.fixture()
def figures(monkeypatch, tmp_path):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    spec = importlib.util.spec_from_file_location("figures_under_test", REPO / "training" / "figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_figures_script_on_a_tiny_fake_benchmark(figures, trained_dir, toy_corpus, tmp_path, capsys):
    texts, labels = toy_corpus
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    import csv

    with open(data_dir / "stackoverflow.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows([t, str(y + 1)] for t, y in zip(texts, labels))  # the corpus's tag ids 1..20
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"rows": _results_rows(), "runs": {}}))
    out_dir = tmp_path / "docs"
    out_dir.mkdir()
    argv = [
        "--run-dir",
        str(trained_dir),
        "--data-dir",
        str(data_dir),
        "--results",
        str(results),
        "--output-dir",
        str(out_dir),
        "--map-sample",
        "60",
        "--projection",
        "pca",
    ]
    # a run saved without its trainer_state.json (older runs): the curves fall back to the stored health checks
    state = trained_dir / "trainer_state.json"
    hidden = tmp_path / "trainer_state.json"
    if state.exists():
        state.rename(hidden)
    try:
        assert figures.main(argv) == 0
    finally:
        if hidden.exists():
            hidden.rename(state)
    out = capsys.readouterr().out
    for name in ("map_sccl_stackoverflow.png", "training_sccl_stackoverflow.png", "leaderboard_acc.png"):
        assert _png(out_dir / name) and f"wrote {out_dir / name}" in out
    # the run was saved with save_strategy="no": the curves come from the health checks stored in results.json
    assert "health checks stored in results.json only" in out
    assert "60 of 120 stackoverflow texts" in out and str(Path(str(trained_dir))) in out

    # with a checkpoint's trainer_state.json, the losses are drawn from it
    checkpoint = trained_dir / "checkpoint-2"
    checkpoint.mkdir()
    (checkpoint / "trainer_state.json").write_text(json.dumps({"log_history": _log_history()}))
    try:
        assert figures.main([*argv, "--only", "curves"]) == 0
    finally:
        (checkpoint / "trainer_state.json").unlink()
        checkpoint.rmdir()
    assert "from its trainer_state.json" in capsys.readouterr().out


def test_figures_script_says_what_is_missing(figures, tmp_path, capsys):
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"rows": [], "runs": {}}))
    argv = ["--run-dir", str(tmp_path / "no-run"), "--results", str(results), "--output-dir", str(tmp_path)]
    assert figures.main(argv) == 1
    captured = capsys.readouterr()
    assert "skipped the training curves" in captured.out and "no log history" in captured.out
    assert "could not make the map picture: no trained model in" in captured.err
    assert "could not make the leaderboard picture" in captured.err
