"""Scale: time and peak memory of clustering 10k / 100k / 1M texts, and of the k-means initialisation at those
sizes."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

import numpy as np

from hf_textcluster.models.building import from_encoder_pretrained

from . import store as results
from .common import default_data_dir, run_header
from .store import put_row, save_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``scale``: the parts, the sizes and ``--skip-done``."""
    parser.add_argument("--data-dir", default=default_data_dir())
    parser.add_argument("--parts", nargs="+", default=["predict", "kmeans"], choices=["predict", "kmeans"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000, 1_000_000], help="Numbers of texts.")
    parser.add_argument("--skip-done", action="store_true", help="Skip the (part, size) rows already stored.")


def run(args, store: dict, run_id: str) -> None:
    """Time and peak memory of clustering 10k / 100k / 1M texts, and of the k-means initialisation at those sizes.

    predict: `hf-textcluster predict` in its own process (its peak RSS from wait4), streaming a .txt of N lines made
    by cycling the eight corpora's texts, with an SCCL model = MiniLM + 20 centroids from k-means on StackOverflow
    (prediction costs the same trained or not: one encoder pass per text). kmeans: fit_kmeans (K 20, 10 restarts,
    centres on a sample of at most 100k rows) on N embeddings made by cycling StackOverflow's MiniLM embeddings with
    a little noise, beside scikit-learn's exact KMeans up to 100k rows."""
    import subprocess

    from sklearn.cluster import KMeans

    from hf_textcluster import SCCLModel
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.editing import initialize_clusters
    from hf_textcluster.editing.kmeans import DEFAULT_KMEANS_MAX_SAMPLES, fit_kmeans

    work = results.REPO / "runs" / "scale"
    work.mkdir(parents=True, exist_ok=True)
    done = (
        {(r["method"], r["num_texts"]) for r in store["rows"] if r["section"] == "scale"} if args.skip_done else set()
    )
    model_dir = work / "model"
    stackoverflow = load_benchmark("stackoverflow", data_dir=args.data_dir)["text"]
    embeddings = None
    if not (model_dir / "config.json").exists() or "kmeans" in args.parts:
        model = from_encoder_pretrained(SCCLModel, None, num_clusters=20)
        embeddings = model.embed(stackoverflow, show_progress_bar=False)
        initialize_clusters(model, embeddings=embeddings, random_state=0)
        model.save_pretrained(model_dir)
    if "predict" in args.parts:
        corpus = [
            t.replace("\n", " ")
            for name in BENCHMARKS_FOR_SCALE
            for t in load_benchmark(name, data_dir=args.data_dir)["text"]
        ]
        # shuffled (seeded): every size gets the same mix of short titles and longer news texts
        corpus = [corpus[i] for i in np.random.default_rng(0).permutation(len(corpus))]
        for n in args.sizes:
            if ("predict", n) in done:
                continue
            source = work / f"mixed-texts-{n}.txt"
            if not source.exists():
                with open(source, "w", encoding="utf-8") as handle:
                    for i in range(n):
                        handle.write(corpus[i % len(corpus)] + "\n")
            output = work / f"clusters-{n}.jsonl"
            command = [
                sys.executable,
                "-m",
                "hf_textcluster.cli",
                "predict",
                "--model",
                str(model_dir),
                "--input",
                str(source),
                "--output",
                str(output),
                "--overwrite",
                "--device",
                "cpu",  # what this section measures (predict's own default takes a GPU when there is one)
            ]
            start = time.perf_counter()
            log = work / f"predict-{n}.log"
            with open(log, "w") as stderr:
                process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
                _, status, usage = os.wait4(process.pid, 0)
            seconds = time.perf_counter() - start
            if status != 0:
                raise SystemExit(f"scale: {' '.join(command)} failed (status {status}); see {log}.")
            # the CLI's own rate: the clustering pass alone, without starting Python and loading the model
            rate = re.search(r"\(([0-9.]+) texts/s", log.read_text())
            with open(output, "rb") as handle:
                lines = sum(1 for _ in handle)
            assert lines == n, f"{output} has {lines} lines for {n} texts"
            put_row(
                store,
                {
                    "section": "scale",
                    "method": "predict",
                    "dataset": f"{n} texts",
                    "num_texts": n,
                    "run": run_id,
                    "seconds": round(seconds, 1),
                    "texts_per_second": round(n / seconds, 1),
                    "clustering_texts_per_second": float(rate.group(1)) if rate else None,
                    "peak_rss_mb": round(usage.ru_maxrss / 1024),
                    "output_mb": round(output.stat().st_size / 2**20),
                },
            )
            save_store(store)
            print(
                f"predict {n:>9,} texts: {seconds:7.1f}s, {n / seconds:6.1f} texts/s "
                f"({rate.group(1) if rate else '?'} in the clustering pass), peak RSS "
                f"{usage.ru_maxrss / 1024:,.0f} MB",
                flush=True,
            )
            output.unlink()  # up to ~150 MB per million texts: measured, not kept
    if "kmeans" in args.parts:
        rng = np.random.default_rng(0)
        for n in args.sizes:
            if ("kmeans", n) in done:
                continue
            features = embeddings[np.arange(n) % len(embeddings)]
            features = features + rng.normal(scale=0.01, size=features.shape).astype(np.float32)
            start = time.perf_counter()
            sampled = fit_kmeans(features, 20, n_init=10, random_state=0)
            seconds = time.perf_counter() - start
            row = {
                "section": "scale",
                "method": "kmeans",
                "dataset": f"{n} texts",
                "num_texts": n,
                "run": run_id,
                "seconds": round(seconds, 1),
                "sample": min(n, DEFAULT_KMEANS_MAX_SAMPLES),
            }
            if DEFAULT_KMEANS_MAX_SAMPLES < n <= 10 * DEFAULT_KMEANS_MAX_SAMPLES:  # below, the two are the same fit
                start = time.perf_counter()
                exact = KMeans(20, n_init=10, random_state=0).fit(features)
                row["exact_seconds"] = round(time.perf_counter() - start, 1)
                from hf_textcluster.evaluation.metrics import normalized_mutual_info

                row["agreement_nmi"] = round(normalized_mutual_info(exact.labels_, sampled.labels_), 4)
                row["inertia_ratio"] = round(
                    float(((features - sampled.cluster_centers_[sampled.labels_]) ** 2).sum()) / exact.inertia_, 4
                )
            put_row(store, row)
            save_store(store)
            print(
                f"kmeans  {n:>9,} rows: {seconds:7.1f}s (sample {row['sample']:,})"
                + (
                    f", exact {row['exact_seconds']}s, NMI(sampled, exact) {row['agreement_nmi']}, inertia ratio "
                    f"{row['inertia_ratio']}"
                    if "exact_seconds" in row
                    else ""
                ),
                flush=True,
            )


BENCHMARKS_FOR_SCALE = ("stackoverflow", "searchsnippets", "biomedical", "agnews", "googlenews_ts", "tweet")


def render(store: dict, rows: list[dict]) -> list[str]:
    """One line per measure and size."""
    if not rows:
        return []
    out = [
        "## Scale: 10k, 100k, 1M texts",
        "",
        *run_header(store, rows),
        "",
        "*predict*: `hf-textcluster predict` streaming a .txt of N short texts (six corpora's texts shuffled, cycled) "
        "in chunks",
        "of 10,000 to a JSON-lines file, in its own process (wall time includes loading the model; peak RSS of that",
        "process; *pass texts/s*: the CLI's own rate over the clustering pass, without start-up). *k-means*: the "
        "initialisation's k-means (K 20, 10 restarts) on N MiniLM embeddings (StackOverflow's,",
        "cycled, plus a little noise): centres fitted on a seeded sample of at most 100,000 rows, then every row",
        "assigned; beside scikit-learn's exact KMeans on all rows where it was run (agreement NMI, and the sampled",
        "fit's inertia on all rows over the exact fit's). *ms / text*: wall time per text (constant = linear cost).",
        "",
        "| measure | texts | time (s) | ms / text | texts/s | pass texts/s | peak RSS (MB) | exact k-means (s) | NMI "
        "sampled vs exact | inertia ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["method"] != "predict", r["num_texts"])):
        out.append(
            f"| {r['method']} | {r['num_texts']:,} | {r['seconds']} | {1000 * r['seconds'] / r['num_texts']:.2f}"
            f" | {r.get('texts_per_second', '–')} | {r.get('clustering_texts_per_second') or '–'}"
            f" | {r.get('peak_rss_mb', '–')} | {r.get('exact_seconds', '–')} | {r.get('agreement_nmi', '–')}"
            f" | {r.get('inertia_ratio', '–')} |"
        )
    out += [f"- {r['method']}, {r['num_texts']:,} texts: {r['note']}" for r in rows if r.get("note")]
    return out + [""]
