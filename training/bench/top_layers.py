"""Fine-tuning at a fraction of its cost: only the encoder's top layers trained, on the lower layers' token states
cached during the BERTopic way's one encoding pass (the study ``training/studies/top_layers.py``).

The study trains and measures, one corpus at a time (resumable); this section imports what it measured into the
store and renders it as quality against time beside the BERTopic way of the same run:
``python training/studies/top_layers.py <corpora>``, then ``python -m training.bench top-layers``.
"""

from __future__ import annotations

import argparse
import json

from .common import corpus_role, run_header
from .store import REPO, put_row, save_store, select_rows

SECTION = "top-layers"
# One results file per setting of the study (``OUT=top_layers_<setting>.jsonl``).
STUDIES = sorted((REPO / "training" / "studies").glob("top_layers*.jsonl"))
# The study's defaults: a setting that differs is named beside the objective.
DEFAULTS = {"top": 2, "lr": 5e-5, "batch": 64}
# Another job shared the CPU, so a time is not a measurement: a load average above BUSY before the run, or above the
# study's own two threads + BUSY while a variant trained.
BUSY = 1.5
OWN_THREADS = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets", nargs="+", default=None, help="Corpora to import (default: all the study has).")


def setting(study: dict) -> str:
    """The settings of a study row that differ from the study's defaults, in words (``""`` for none)."""
    changed = [f"{key} {study[key]:g}" for key, default in DEFAULTS.items() if study.get(key, default) != default]
    return f" ({', '.join(changed)})" if changed else ""


def run(args, store: dict, run_id: str) -> None:
    studies = [json.loads(line) for path in STUDIES for line in path.read_text().splitlines()]
    for study in studies:
        if args.datasets and study["dataset"] not in args.datasets:
            continue
        way = study["bertopic_way"]
        for variant, points in study.items():
            if not isinstance(points, list):
                continue
            for point in points:
                put_row(
                    store,
                    {
                        "section": SECTION,
                        "method": variant + setting(study),
                        "dataset": study["dataset"],
                        "seed": 0,
                        "variant": f"{point['step']} steps",
                        "run": run_id,
                        "steps": point["step"],
                        "num_texts": study["n"],
                        "num_clusters": study["k"],
                        "top_layers": study["top"],
                        "cpu_kind": study["cpu"],
                        "way_acc": way["acc"],
                        "way_seconds": way["seconds"],
                        "acc": point["way"]["acc"],
                        "nmi": point["way"]["nmi"],
                        "seconds": point["seconds"],
                        "x_way": point["x_way"],
                        "busy": study["load_before"] > BUSY or point["load"] > OWN_THREADS + BUSY,
                    },
                )
    save_store(store)


def render(store: dict, rows: list[dict]) -> list[str]:
    """One line per corpus and variant: the BERTopic way's ACC and seconds, then each checkpoint's ACC (its gain)
    and its time over the BERTopic way's."""
    rows = [r for r in rows if r["section"] == SECTION]
    if not rows:
        return []
    steps = sorted({r["steps"] for r in rows})
    lines = [
        "## Fine-tuning the top layers only",
        "",
        "The one MiniLM pass the BERTopic way makes keeps the token states below the top layers; a copy of the top "
        "layers is trained on them (two dropout passes of a text are its two views, so the cache stays valid), then "
        "re-run over every text, and the BERTopic way (UMAP -> k-means) clusters the new embeddings. Per corpus "
        "(the confirmation corpora once, as they fell) a seeded subsample of at most 8,000 texts, the true K, seed 0, "
        "fp32; the top 2 layers, AdamW 5e-5, 64 texts a step unless the variant says otherwise; ACC in % of the "
        "BERTopic way on the fine-tuned embeddings (its gain over the BERTopic way on the pretrained ones), and the "
        "wall time (encoding, training, re-encoding, UMAP -> k-means) over the BERTopic way's in the same run. "
        "Labels only score. Measured by `python training/studies/top_layers.py` (variants and settings: that "
        f"script), imported here. † another job shared the 2 cores (a load average above {BUSY} before the run, "
        f"or above {OWN_THREADS + BUSY} while it trained): the time is not a measurement.",
        "",
        *run_header(store, rows),
        "",
        "| corpus | set | N | K | variant | BERTopic way (s) | "
        + " | ".join(f"{s} steps: ACC (gain), × time" for s in steps)
        + " |",
        "|---|---|---|---|---|---|" + "---|" * len(steps),
    ]
    for dataset in sorted(dict.fromkeys(r["dataset"] for r in rows), key=lambda d: corpus_role(d) != "tuning"):
        for variant in dict.fromkeys(r["method"] for r in rows if r["dataset"] == dataset):
            points = {r["steps"]: r for r in select_rows(store, SECTION, dataset=dataset, method=variant)}
            first = next(iter(points.values()))
            cells = [
                f"{p['acc']:.1f} ({p['acc'] - p['way_acc']:+.1f}), {p['x_way']:.1f}x{' †' if p['busy'] else ''}"
                if (p := points.get(s))
                else "–"
                for s in steps
            ]
            lines.append(
                f"| {dataset} | {corpus_role(dataset)} | {first['num_texts']:,} | {first['num_clusters']} | "
                f"{variant} | {first['way_acc']:.1f} ({first['way_seconds']:.0f}) | " + " | ".join(cells) + " |"
            )
    return [*lines, ""]
