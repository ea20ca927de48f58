"""Where the default's time goes (``python -m training.bench profile``): ``train`` without ``--method`` run as a user
runs it (checkpoints, calibration, naming and saving included; no criterion computed for comparison), on the first
N texts of a seeded shuffle of a corpus, and its phases as the run records them (``training_run.json``'s
``"seconds"``). The served clusters are scored against the labels afterwards, so that a change is measured for time
and for what it serves in one row.

A row records the load average before it started: a timing taken beside another job is marked (``†``), as it is not a
measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from hf_textcluster.evaluation.metrics import cluster_accuracy

from .common import add_corpus_arguments, cpu_kind, key_values, run_header
from .store import put_row, run_dir, save_store, select_rows

SECTION = "profile"
# above this load average (1 minute) before a run starts, another job shares the CPU: its times are not measurements
MAX_LOAD = 1.5
# the phases shown, in the order a run goes through them; a signal's own phases are shown under its name
SIGNAL_PHASES = ("data", "num_clusters", "model", "train", "finish", "name", "save")
# what a signal's training holds besides its optimizer steps, shown apart (the steps are what is left)
TRAIN_PARTS = {
    "init": "k-means start",
    "targets": "DEC targets",
    "health": "health checks",
    "checkpoints": "checkpoints",
}
RUN_PHASES = ("candidates", "criteria", "serve", "calibrate", "name", "save")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``profile``: corpora, sizes, seeds, a variant with its training overrides."""
    add_corpus_arguments(parser)
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[2500, 20000], help="Texts per run: the first N of a seeded shuffle."
    )
    parser.add_argument("--variant", default="", help="A label for this configuration (with its --training).")
    parser.add_argument(
        "--training",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="A TrainingArguments override for every signal (JSON value), e.g. frozen_layers=0.",
    )
    parser.add_argument("--note", default="", help="Stored with each row.")


def run(args, store: dict, run_id: str) -> None:
    """Run the default on each corpus, size and seed; store one row each, with its phases."""
    from hf_textcluster.runs.auto import train_auto
    from hf_textcluster.runs.request import TrainingRequest

    from .auto import corpus_dataset

    overrides = key_values(args.training)
    machine = store["runs"][run_id]["machine"]
    for name in args.datasets:
        full = corpus_dataset(args.data_dir, name)
        for size in args.sizes:
            dataset = full.shuffle(seed=0).select(range(min(size, len(full))))
            for seed in args.seeds:
                load = _quiet_load()
                output_dir = str(run_dir(SECTION, name, seed, f"{args.variant}-{len(dataset)}"))
                start = time.perf_counter()
                request = TrainingRequest(
                    dataset,
                    output_dir,
                    data_dir=args.data_dir,
                    augmentation="word_deletion",
                    seed=seed,
                    training_overrides=overrides or None,
                    resume=False,
                    evaluate=False,
                    overwrite=True,
                )
                result = train_auto(request)
                wall = time.perf_counter() - start
                with open(os.path.join(output_dir, "training_run.json")) as f:
                    seconds = json.load(f)["seconds"]
                labels = result.train_dataset["label"]
                row = {
                    "section": SECTION,
                    "method": "auto",
                    "dataset": f"{name}:{len(dataset)}",
                    "corpus": name,
                    "num_texts": len(dataset),
                    "seed": seed,
                    "run": run_id,
                    "variant": args.variant,
                    "training": overrides,
                    "cpu_kind": cpu_kind(machine),
                    "load_before": round(load, 2),
                    "wall_seconds": round(wall, 1),
                    "estimate_seconds": result.auto.get("estimate_seconds"),
                    "seconds": seconds,
                    "served": result.auto["choice"]["served"],
                    "served_acc": round(cluster_accuracy(labels, result.served_labels), 4),
                }
                notes = [args.note] if args.note else []
                if load > MAX_LOAD:
                    notes.append(f"time inflated: load average {load:.2f} before the run")
                if notes:
                    row["note"] = "; ".join(notes)
                print(
                    f"{name:15s} {len(dataset):>6,} texts seed {seed} {args.variant or 'default'}: {wall:.0f}s wall, "
                    f"serves {row['served']} ACC {100 * row['served_acc']:.1f} (load before {load:.2f})",
                    flush=True,
                )
                put_row(store, row)
                save_store(store)
                del result


def _quiet_load(patience: float = 300.0) -> float:
    """The 1-minute load average once it is below :data:`MAX_LOAD` (a run that just ended leaves it high for a
    minute), or after ``patience`` seconds."""
    start = time.monotonic()
    while os.getloadavg()[0] > MAX_LOAD and time.monotonic() - start < patience:
        time.sleep(10)
    return os.getloadavg()[0]


def _phase_rows(row: dict) -> list[tuple[str, float]]:
    """(phase, seconds) of a run: each signal's phases (its training split into its optimizer steps and what else
    it holds), then the run's own after training."""
    seconds = row["seconds"]
    signals = sorted({k.split("/", 1)[0] for k in seconds if "/" in k} - set(RUN_PHASES))
    out = [("read the texts", seconds.get("data", 0.0))]
    if "estimate" in seconds:
        out.append(("estimate", seconds["estimate"]))
    for signal in signals:
        for part in SIGNAL_PHASES:
            key = f"{signal}/{part}"
            if key not in seconds:
                continue
            if part != "train":
                out.append((f"{signal}: {part}", seconds[key]))
                continue
            parts = {
                label: seconds[f"{key}/{name}"] for name, label in TRAIN_PARTS.items() if f"{key}/{name}" in seconds
            }
            out += [(f"{signal}: {label}", value) for label, value in parts.items()]
            out.append((f"{signal}: steps", seconds[key] - sum(parts.values())))
    for part in RUN_PHASES:
        if part in seconds:
            out.append((part, seconds[part]))
    return out


def render(store: dict, rows: list[dict]) -> list[str]:
    """One table per corpus and size: the phases (rows) of each variant and seed (columns)."""
    if not rows:
        return []
    lines = [
        "## Where the default's time goes",
        "",
        "`train` without `--method`, as a user runs it (checkpoints, calibration, naming and saving included), on the "
        "first N texts of a seeded shuffle, with `--augmentation word_deletion`. Seconds per phase, as the run "
        'records them in `training_run.json` (`"seconds"`); ACC of what it serves (labels only score). A run that '
        "recorded no health-check or checkpoint phase counts them in its steps. † another job shared the CPU (load "
        "average above 1.5 before the run): not a measurement.",
        "",
        *run_header(store, rows),
        "",
    ]
    for dataset in sorted({r["dataset"] for r in rows}, key=lambda d: (d.split(":")[0], int(d.split(":")[1]))):
        group = sorted(select_rows(store, SECTION, dataset=dataset), key=lambda r: (r.get("variant", ""), r["seed"]))
        corpus, size = dataset.split(":")
        heads = [
            f"{r.get('variant') or 'default'} (seed {r['seed']}, {r['cpu_kind']}){' †' if 'note' in r else ''}"
            for r in group
        ]
        lines += [f"### {corpus}, {int(size):,} texts", "", "| phase | " + " | ".join(heads) + " |"]
        lines.append("|---|" + "---:|" * len(group))
        phases = list(dict.fromkeys(p for r in group for p, _ in _phase_rows(r)))
        values = [dict(_phase_rows(r)) for r in group]
        for phase in phases:
            lines.append(f"| {phase} | " + " | ".join(f"{v[phase]:.1f}" if phase in v else "" for v in values) + " |")
        lines.append("| **wall** | " + " | ".join(f"**{r['wall_seconds']:.0f}**" for r in group) + " |")
        if any(r.get("estimate_seconds") for r in group):
            lines.append(
                "| estimate printed before the first step | "
                + " | ".join(f"{r['estimate_seconds']:.0f}" if r.get("estimate_seconds") else "" for r in group)
                + " |"
            )
        lines.append("| served ACC | " + " | ".join(f"{100 * r['served_acc']:.1f}" for r in group) + " |")
        settings = sorted({json.dumps(r.get("training") or {}) for r in group if r.get("training")})
        if settings:
            lines += ["", "Overrides: " + "; ".join(f"`{s}`" for s in settings)]
        lines.append("")
    return lines
