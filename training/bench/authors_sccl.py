"""A side-by-side timing of the SCCL authors' code and ours, measured outside this repository and recorded here."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from .common import run_header
from .store import put_row, save_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``authors-sccl``: ``--from``, the JSON lines of the side-by-side runs."""
    parser.add_argument("--from", dest="source", required=True, help="The JSON lines of the side-by-side runs.")


def run(args, store: dict, run_id: str) -> None:
    """Record a side-by-side timing of the SCCL authors' code and ours, measured outside this repository.

    The authors' code (github.com/amazon-science/sccl) is never part of this repository: it was checked out elsewhere
    and timed by a driver that imports it unchanged and monkeypatches what a CPU-only, offline, transformers-5 run
    needs (each patch is listed in the rows). Each line of ``--from`` is one run: ``{"who": "authors" | "ours",
    "seconds_per_step": ..., "steps": ..., "isa": ..., "precision": ..., "patches": [...]}``."""
    runs = [json.loads(line) for line in Path(args.source).read_text().splitlines() if line.startswith("{")]
    for i, run in enumerate(runs):
        put_row(
            store,
            {"section": "authors-sccl", "method": "sccl", "dataset": "stackoverflow", "seed": i, "run": run_id, **run},
        )
    store["rows"] = [r for r in store["rows"] if not (r["section"] == "authors-sccl" and r["run"] != run_id)]
    save_store(store)


def render(store: dict, rows: list[dict]) -> list[str]:
    """The timing table and the ratios per CPU mode and precision."""
    if not rows:
        return []
    out = [
        "## SCCL training step: ours vs the authors' code",
        "",
        *run_header(store, rows),
        "",
        "Same machine, encoder (the pip-shipped all-MiniLM-L6-v2), batch 64, StackOverflow with the authors' "
        "contextual",
        "augmentation file, max length 32, lr 1e-5 / heads x100, seconds per step between the first and the last timed",
        "step (k-means initialisation excluded), one process at a time, torch threads 2. Ours: "
        '`train_clusterer("sccl",',
        '"stackoverflow", recipe="cpu")` (dynamic padding, the three views in one encoder pass, the Trainer\'s loop).',
        "Theirs: `SCCLvTrainer.train_step_explicit` of github.com/amazon-science/sccl (pads to 32, three encoder "
        "passes,",
        "Adam, their DataLoader with 4 workers), run outside this repository with the patches below. *oneDNN capped to",
        "AVX2* emulates a CPU without native bf16 (`auto` then picks fp32).",
        "",
        "| run | CPU mode | precision | steps × batch | s / step |",
        "|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: r["seed"]):
        mode = "native" if r.get("isa", "native") == "native" else f"oneDNN capped to {r['isa']}"
        out.append(
            f"| {r['who']} | {mode} | {r.get('precision', 'fp32 (their code)')} | {r['steps']} × 64 | "
            f"{r['seconds_per_step']:.2f} |"
        )
    out.append("")
    for mode in sorted({r.get("isa", "native") for r in rows}):
        theirs = [r["seconds_per_step"] for r in rows if r["who"] == "authors" and r.get("isa", "native") == mode]
        for precision in sorted({r.get("precision", "").split(" ")[0] for r in rows if r["who"] == "ours"}):
            ours = [
                r["seconds_per_step"]
                for r in rows
                if r["who"] == "ours"
                and r.get("isa", "native") == mode
                and r.get("precision", "").startswith(precision)
            ]
            if theirs and ours:
                out.append(
                    f"- {'native' if mode == 'native' else 'capped to ' + mode}: theirs (fp32) / ours ({precision})"
                    f" = **{statistics.mean(theirs) / statistics.mean(ours):.2f}x** "
                    f"(means of {len(theirs)} and {len(ours)} runs)"
                )
    patches = next((r["patches"] for r in rows if r.get("patches")), [])
    if patches:
        out += ["", "Patches the authors' code needed here (applied by the driver, their files unchanged):", ""]
        out += [f"- {p}" for p in patches]
    return out + [""]
