"""Without K (``python -m training.bench without-k``): the default as most users run it, no number of clusters given,
beside BERTopic's default (UMAP -> HDBSCAN, ``min_topic_size=10``) on the same texts and machine, each timed with
its encoding pass. Labels only score: neither run sees them, and the true K is only printed beside the K found.

Resumable: ``--skip-done`` skips (corpus, seed) pairs already stored. Each row records the CPU kind and both times,
both taken after a first untimed BERTopic run on a few texts (numba compiles UMAP's and HDBSCAN's code once per
process: without it, the first corpus of a run timed that compilation in BERTopic's run and not in the default's).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from .auto import split_of
from .auto_k import bertopic_timed
from .common import add_corpus_arguments, cpu_kind, run_header
from .store import put_row, run_dir, save_store

SECTION = "without-k"
WARM_UP_TEXTS = 500  # a first BERTopic run, untimed: a process's first UMAP and HDBSCAN compile their code (minutes)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``without-k``: corpora, seeds, resume."""
    add_corpus_arguments(parser)
    parser.add_argument("--skip-done", action="store_true", help="Skip (corpus, seed) pairs stored already.")
    parser.add_argument(
        "--note", default="", help="Stored with each row, e.g. 'time inflated: another job shared the CPU'."
    )


def run(args, store: dict, run_id: str) -> None:
    """Per corpus and seed: BERTopic's default, then the default ``train`` with no K, side by side."""
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.runs.auto import train_auto
    from hf_textcluster.runs.request import TrainingRequest

    done = {(r["dataset"], r.get("seed")) for r in store["rows"] if r["section"] == SECTION}
    machine = store["runs"][run_id]["machine"]
    warmed = False
    for name in args.datasets:
        for seed in args.seeds:
            if args.skip_done and (name, seed) in done:
                print(f"{name:15s} seed {seed} without-k: stored already (--skip-done)", flush=True)
                continue
            dataset = load_benchmark(name, data_dir=args.data_dir)
            labels = np.asarray(dataset["label"])
            if not warmed:  # numba compiles UMAP's and HDBSCAN's code in a process's first run: in neither's time
                bertopic_timed(dataset[:WARM_UP_TEXTS]["text"], labels[:WARM_UP_TEXTS], seed)
                warmed = True
            bertopic = bertopic_timed(dataset["text"], labels, seed)  # its default: no K
            start = time.perf_counter()
            request = TrainingRequest(
                name,
                str(run_dir(SECTION, name, seed, "")),
                data_dir=args.data_dir,
                num_clusters="auto",  # a labelled corpus would otherwise train its number of classes
                seed=seed,
                training_overrides={"save_strategy": "no", "disable_tqdm": True},
                resume=False,
                evaluate=False,
                save=True,
                overwrite=True,
            )
            result = train_auto(request)
            wall = time.perf_counter() - start
            served = clustering_scores(np.asarray(result.train_dataset["label"]), np.asarray(result.served_labels))
            selection = result.k_selection or {}
            row = {
                "section": SECTION,
                "method": "auto",
                "dataset": name,
                "seed": seed,
                "run": run_id,
                "cpu_kind": cpu_kind(machine),
                "num_texts": len(result.train_dataset),
                "k_true": int(dataset.features["label"].num_classes),
                "k_found": int(result.model.config.num_clusters),
                "k_alternatives": selection.get("alternatives", []),
                "served": result.model.config.served_partition,
                "acc": served["acc"],
                "nmi": served["nmi"],
                "wall_seconds": round(wall, 1),
                "bertopic": bertopic,
                "split": split_of(name),
            }
            if args.note:
                row["note"] = args.note
            put_row(store, row)
            save_store(store)
            b = bertopic or {}
            print(
                f"{name:15s} seed {seed} without K: K {row['k_found']} (true {row['k_true']}) ACC "
                f"{100 * row['acc']:.1f} NMI {100 * row['nmi']:.1f} {wall:.0f}s | BERTopic default {b.get('k')} "
                f"topics, {100 * b.get('outlier_share', 0):.0f}% outliers, ACC {100 * b.get('acc', 0):.1f} NMI "
                f"{100 * b.get('nmi', 0):.1f} {b.get('seconds')}s",
                flush=True,
            )


def _mean(rows, get) -> float:
    return statistics.mean(get(r) for r in rows)


def table(rows: list[dict], names: dict[str, str] | None = None) -> list[str]:
    """Per corpus (tuning, then confirmation): true K, K found, BERTopic's default (topics, outliers, NMI, ACC with
    the outliers as one cluster), the default without K (NMI, ACC), their differences and the time ratio."""
    from hf_textcluster.data import BENCHMARKS

    names = names or {}
    rows = [r for r in rows if r["section"] == SECTION and r.get("bertopic")]
    if not rows:
        return []
    out = [
        "| corpus | set | texts | true K | K found | BERTopic default: topics | outliers | NMI | ACC "
        "| `train`, no K: NMI | ACC | Δ NMI | Δ ACC | × time | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = [*BENCHMARKS, *sorted({r["dataset"] for r in rows} - set(BENCHMARKS))]
    splits = ("tuning", "confirmation", "confirmation_only")
    for name in sorted({r["dataset"] for r in rows}, key=lambda n: (splits.index(split_of(n)), order.index(n))):
        d = [r for r in rows if r["dataset"] == name]
        b_nmi, b_acc = _mean(d, lambda r: r["bertopic"]["nmi"]), _mean(d, lambda r: r["bertopic"]["acc"])
        nmi, acc = _mean(d, lambda r: r["nmi"]), _mean(d, lambda r: r["acc"])
        found = "/".join(str(r["k_found"]) for r in d)
        topics = "/".join(str(r["bertopic"]["k"]) for r in d)
        ratio = statistics.median(r["wall_seconds"] / r["bertopic"]["seconds"] for r in d)
        outliers = 100 * _mean(d, lambda r: r["bertopic"]["outlier_share"])
        out.append(
            f"| {names.get(name, name)} | {split_of(name).replace('_', '-')} | {d[0]['num_texts']:,} "
            f"| {d[0]['k_true']} | {found} | {topics} | {outliers:.0f}% "
            f"| {100 * b_nmi:.1f} | {100 * b_acc:.1f} | {100 * nmi:.1f} | {100 * acc:.1f} "
            f"| {100 * (nmi - b_nmi) + 0.0:+.1f} | {100 * (acc - b_acc) + 0.0:+.1f} | {ratio:.1f}x | {len(d)} |"
        )
    return out


def render(store: dict, rows: list[dict]) -> list[str]:
    """docs/results.md's section."""
    rows = [r for r in rows if r["section"] == SECTION]
    if not rows:
        return []
    return [
        "## Without K: the default against BERTopic's default",
        "",
        *run_header(store, rows),
        "",
        "`train` with no K on the whole corpus (K chosen without labels: `hf_textcluster.choosing.layout_k`),",
        "and BERTopic's default (`BERTopic(embedding_model=MiniLM, umap_model=its UMAP seeded).fit_transform`,",
        "HDBSCAN with `min_topic_size=10`) on the same texts, right before it in the same process. BERTopic's ACC and",
        "NMI count its outliers (topic -1) as one cluster, as its users meet them; the default assigns every text. NMI",
        "and ACC in %, mean over seeds (K per seed); *× time*: the default's wall time over BERTopic's, both with",
        "their encoding pass (median over seeds), after an untimed BERTopic run on a few texts (a process's first",
        "UMAP and HDBSCAN compile their code). Labels only score.",
        "",
        *table(rows),
        "",
    ]
