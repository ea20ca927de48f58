"""Score the models earlier method runs kept with today's ``evaluate_clusterer``, adding the metrics their rows lack."""

from __future__ import annotations

import argparse
import json
import math

from .common import add_corpus_arguments
from .store import put_row, run_dir, save_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``rescore``: the corpora, seeds and methods whose kept runs are scored."""
    add_corpus_arguments(parser)
    parser.add_argument("--methods", nargs="+", default=None, help="Only these methods' runs (default: all).")


def run(args, store: dict, run_id: str) -> None:
    """Score the models earlier method runs kept (`run_dir`) with today's `evaluate_clusterer` and add the metrics
    their rows lack (e.g. ``latent_kmeans_*``, added after those runs); stored numbers are not changed, and a model
    whose head no longer gives the stored ACC on the same texts is left alone."""
    from transformers import AutoModel

    from hf_textcluster.training.evaluation import evaluate_clusterer

    from .precomputed import prepare_views

    rows = [
        r
        for r in store["rows"]
        if r["section"] == "method"
        and r["dataset"] in args.datasets
        and r.get("seed") in args.seeds
        and (not args.methods or r["method"] in args.methods)
    ]
    for row in rows:
        label = f"{row['dataset']:15s} seed {row['seed']} {row['method']} {row.get('variant') or ''}".rstrip()
        directory = run_dir(row["method"], row["dataset"], row["seed"], row.get("variant", ""))
        if "held-out" in row.get("variant", ""):  # scored on a split rescore would have to rebuild
            print(f"{label}: skipped (held-out split)", flush=True)
            continue
        if not (directory / "training_run.json").exists():
            print(f"{label}: skipped (no kept model)", flush=True)
            continue
        if "umap_kmeans_acc" in row:  # the newest metric: such a row was scored by today's evaluate_clusterer
            print(f"{label}: skipped (has every metric)", flush=True)
            continue
        run_info = json.loads((directory / "training_run.json").read_text())
        dataset = prepare_views(row["dataset"], run_info.get("augmentation"), data_dir=args.data_dir, seed=row["seed"])
        model = AutoModel.from_pretrained(str(directory))
        metrics = evaluate_clusterer(
            model, dataset["text"], dataset["label"], batch_size=128, random_state=row["seed"], umap_kmeans=True
        )
        if not math.isclose(metrics["acc"], row["acc"], abs_tol=1e-3):
            print(f"{label}: skipped (head ACC {metrics['acc']:.4f} here, {row['acc']:.4f} stored)", flush=True)
            continue
        added = {k: v for k, v in metrics.items() if k not in row}
        if added:
            put_row(store, {**row, **added, "rescored": run_id})
            save_store(store)
        print(f"{label}: added {sorted(added) or 'nothing'}", flush=True)
