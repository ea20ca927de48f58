#!/usr/bin/env python
"""Does the calibrated confidence mean something, and what do the outlier flags catch? A markdown report.

    python training/calibration_report.py --model runs/sccl-stackoverflow --data data/stackoverflow.csv

On a labelled corpus (csv with ``text`` and ``label``): calibrates the trained model (in memory; nothing is saved) on a
seeded sample of ``--calibration-size`` texts, then, on ``--eval-size`` other texts, shows per confidence decile the
accuracy of the assignment (clusters mapped to labels by the Hungarian matching on all texts) beside the mean raw
``score`` (the method's q), and, for each ``--outlier-quantiles``, the share of texts flagged as outliers with the
accuracy on the kept and the flagged texts. The labels are used only for scoring.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import subprocess
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        return platform.processor() or "unknown"


def accuracy(correct: np.ndarray) -> str:
    return f"{100 * correct.mean():.1f}" if len(correct) else "–"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="A trained model directory.")
    data = parser.add_mutually_exclusive_group(required=True)
    data.add_argument("--data", help="A csv with the columns text and label.")
    data.add_argument(
        "--dataset", help="A benchmark corpus by name (its builder: $HF_TEXTCLUSTER_DATA_DIR or download)."
    )
    parser.add_argument("--calibration-size", type=int, default=5000)
    parser.add_argument("--eval-size", type=int, default=5000)
    parser.add_argument("--outlier-quantiles", type=float, nargs="+", default=[0.99])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: a shared machine).")
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from hf_textcluster.data import load_benchmark, load_text_file
    from hf_textcluster.evaluation.metrics import best_cluster_to_class_mapping
    from hf_textcluster.runs.folder import load_clusterer

    start = time.perf_counter()
    dataset = load_benchmark(args.dataset) if args.dataset else load_text_file(args.data, label_column="label")
    source = f"{args.dataset}.csv" if args.dataset else os.path.basename(args.data)
    texts, labels = list(dataset["text"]), np.asarray(dataset["label"])
    if args.calibration_size + args.eval_size > len(texts):
        raise SystemExit(f"error: {args.calibration_size} + {args.eval_size} texts asked, {source} has {len(texts)}.")
    order = np.random.default_rng(args.seed).permutation(len(texts))
    calibration_rows = order[: args.calibration_size]
    eval_rows = order[args.calibration_size : args.calibration_size + args.eval_size]

    model = load_clusterer(args.model)
    model.calibrate(
        [texts[i] for i in calibration_rows], sample_size=None, batch_size=args.batch_size, show_progress_bar=False
    )
    # every text once: the clusters of all texts for the matching, and the confidences / distances of the held-out ones
    base = model.predict_with_confidence(
        texts, outlier_quantile=args.outlier_quantiles[0], batch_size=args.batch_size, show_progress_bar=False
    )
    thresholds = {q: model.calibration.thresholds(q).numpy() for q in args.outlier_quantiles}
    mapping = best_cluster_to_class_mapping(labels, base["cluster"])
    mapped = np.asarray([mapping.get(int(c), -1) for c in base["cluster"]])
    correct = (mapped == labels)[eval_rows]
    confidence = base["confidence"][eval_rows]
    score = base["probability"][eval_rows]
    distance = base["distance"][eval_rows]
    clusters = base["cluster"][eval_rows]
    seconds = time.perf_counter() - start

    k = model.config.num_clusters
    lines = [
        f"Model `{os.path.basename(os.path.normpath(args.model))}` (K = {k}), {len(texts):,} texts of "
        f"`{source}`: calibrated on {len(calibration_rows):,}, scored on {len(eval_rows):,} "
        f"others (seed {args.seed}). ACC of the held-out texts: {accuracy(correct)}%; mean `score` "
        f"{score.mean():.3f} (uniform 1/K = {1 / k:.3f}).",
        "",
        "| confidence | texts | ACC % | mean `score` (q) | mean confidence |",
        "|---|---:|---:|---:|---:|",
    ]
    bins = np.minimum((confidence * 10).astype(int), 9)
    for b in range(10):
        rows = bins == b
        lines.append(
            f"| {b / 10:.1f}–{(b + 1) / 10:.1f} | {rows.sum():,} | {accuracy(correct[rows])} | "
            f"{score[rows].mean() if rows.any() else float('nan'):.3f} | "
            f"{confidence[rows].mean() if rows.any() else float('nan'):.2f} |"
        )
    lines += ["", "| `outlier_quantile` | flagged | ACC % kept | ACC % flagged |", "|---|---:|---:|---:|"]
    for q in args.outlier_quantiles:
        flagged = distance > thresholds[q][clusters]
        lines.append(
            f"| {q} | {flagged.sum():,} ({100 * flagged.mean():.1f}%) | {accuracy(correct[~flagged])} | "
            f"{accuracy(correct[flagged])} |"
        )
    lines += [
        "",
        f"Command: `python {shlex.join(['training/calibration_report.py', *sys.argv[1:]])}` · CPU: "
        f"{cpu_model()}, {args.threads} torch thread(s) · wall time {seconds:.0f}s (both encoding passes "
        f"included: {len(calibration_rows):,} + {len(texts):,} texts).",
    ]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
