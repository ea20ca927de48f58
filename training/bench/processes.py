"""Across processes: the whole-corpus passes (embeddings, k-means initialisation, calibration, streaming predict) in
one process and split between two under ``accelerate launch`` (CPU processes over gloo), side by side in one run."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from .common import default_data_dir, run_header
from .store import REPO, put_row, save_store

WORKER = Path(__file__).with_name("processes_worker.py")
PASSES = ("embeddings", "kmeans_initialisation", "calibration", "predict")
# (processes, torch threads per process): one core, two cores shared out between two processes, and what a single
# process gets from the same two cores by threads alone
LAYOUTS = ((1, 1), (2, 1), (1, 2))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``processes``: the corpus and how many of its texts."""
    parser.add_argument("--data-dir", default=default_data_dir())
    parser.add_argument("--dataset", default="stackoverflow", help="A benchmark corpus, or a .csv with text and label.")
    parser.add_argument("--texts", type=int, default=10_000, help="The corpus's first N texts.")
    parser.add_argument("--encoder", help="A hub id or path instead of the default MiniLM.")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _command(processes: int, arguments: list[str]) -> list[str]:
    if processes == 1:
        return [sys.executable, str(WORKER), *arguments]
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        str(processes),
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(_free_port()),
        str(WORKER),
        *arguments,
    ]


def run(args, store: dict, run_id: str) -> None:
    """Run the worker in each layout (one at a time, nothing else running), then store one row with every pass's
    seconds per layout and the two-process speed-up over one process on one thread."""
    work = Path(getattr(args, "work_dir", None) or REPO / "runs" / "processes")
    timings = {}
    for processes, threads in LAYOUTS:
        out = work / f"{processes}x{threads}"
        out.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "OMP_NUM_THREADS": str(threads),
            "CUDA_VISIBLE_DEVICES": "",
            "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        }
        command = _command(
            processes,
            [str(out), args.data_dir, args.dataset, str(args.texts), *([args.encoder] if args.encoder else [])],
        )
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"processes: {' '.join(command)} failed:\n{done.stderr[-3000:]}")
        timings[f"{processes}x{threads}"] = json.loads((out / f"times-{processes}.json").read_text())
        print(
            f"{processes} process(es) x {threads} thread(s): {timings[f'{processes}x{threads}']['seconds']}", flush=True
        )
    outputs = {f"{p}x{t}": (work / f"{p}x{t}" / f"predict-{p}.jsonl").read_text() for p, t in LAYOUTS}
    clusters = {key: [json.loads(line)["cluster"] for line in text.splitlines()] for key, text in outputs.items()}
    row = {
        "section": "processes",
        "method": "whole-corpus passes",
        "dataset": args.dataset,
        "run": run_id,
        "num_texts": timings["1x1"]["num_texts"],
        "layouts": timings,
        # sharding must not change a byte; more threads may change scores in the last float bits, not clusters
        "same_predictions": outputs["2x1"] == outputs["1x1"],
        "same_clusters_threads": clusters["1x2"] == clusters["1x1"],
    }
    put_row(store, row)
    save_store(store)


def render(store: dict, rows: list[dict]) -> list[str]:
    """One line per pass: seconds in each layout and the speed-ups."""
    if not rows:
        return []
    out = [
        "## Across processes: the whole-corpus passes shared out",
        "",
        *run_header(store, rows),
        "",
        "Each pass of a run over the whole corpus (an untrained SCCL model: MiniLM + k-means centres; the passes",
        "cost the same trained or not), between two barriers, seconds on the main process. *1 × 1*: one process,",
        "one torch thread; *2 × 1*: `accelerate launch --num_processes 2` (CPU processes over gloo), one thread",
        "each; *1 × 2*: one process, two threads. The three layouts ran one after another in one run, with nothing",
        "else running. On a GPU machine each process has its own GPU, so *2 × 1 over 1 × 1* is the speed-up two",
        "GPUs would give these passes.",
        "",
    ]
    for r in rows:
        layouts = r["layouts"]
        out += [
            f"{r['dataset']}, {r['num_texts']:,} texts. The predictions of 2 × 1 are "
            f"{'byte-identical to' if r['same_predictions'] else '**not** identical to'} those of 1 × 1; 1 × 2 "
            f"gives {'the same' if r['same_clusters_threads'] else '**other**'} clusters (its scores may differ in "
            "the last float bits: two threads sum in another order).",
            "",
            "| pass | 1 × 1 (s) | 2 × 1 (s) | 1 × 2 (s) | 2 processes / 1 process | 2 threads / 1 thread |",
            "|---|---|---|---|---|---|",
        ]
        for name in PASSES:
            one, two, threads = (layouts[key]["seconds"][name] for key in ("1x1", "2x1", "1x2"))
            out.append(
                f"| {name.replace('_', ' ')} | {one} | {two} | {threads} | {one / two:.2f}x | {one / threads:.2f}x |"
            )
        total = [sum(layouts[key]["seconds"][n] for n in PASSES) for key in ("1x1", "2x1", "1x2")]
        out.append(
            f"| **all four** | {total[0]:.1f} | {total[1]:.1f} | {total[2]:.1f} | {total[0] / total[1]:.2f}x "
            f"| {total[0] / total[2]:.2f}x |"
        )
        out.append("")
    return out
