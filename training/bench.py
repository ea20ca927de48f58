#!/usr/bin/env python
"""Benchmarks: methods x corpora x seeds, and speed ratios. Writes docs/results.md (never edit it by hand).

    python training/bench.py baselines --datasets all --seeds 0 1 2
    python training/bench.py <method> --datasets stackoverflow searchsnippets agnews biomedical tweet --seeds 0 1 2
    python training/bench.py decmlm ... --config mlm_loss_weight=0 --variant "w/o MLM"    # the paper's ablation

<method> is any registered method (hf_textcluster.models.METHODS: sccl, decmlm, ...); its paper's numbers and
display name come from the registry.
    python training/bench.py speed
    python training/bench.py render        # re-write docs/results.md from docs/results.json

Each run stores its rows in docs/results.json (keyed by section/method/dataset/seed, with the exact command, the
package versions and the machine) and re-renders docs/results.md from everything stored, so sections can be
re-run independently. Ratios are measured side by side in one process; absolute times on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS_JSON = Path(os.environ.get("HF_TEXTCLUSTER_BENCH_STORE", REPO / "docs" / "results.json"))
RESULTS_MD = RESULTS_JSON.with_suffix(".md")

# Published numbers (ACC / NMI, %) of the baselines, as reported in the SCCL paper's Table 1; each method's own
# paper numbers come from the method registry (`paper_results`, `paper_note`).
PAPER_BASELINES = {
    "bow-kmeans": {
        "agnews": (27.6, 2.6), "searchsnippets": (24.3, 9.3), "stackoverflow": (18.5, 14.0), "biomedical": (14.3, 9.2),
        "googlenews_ts": (57.5, 81.9), "googlenews_t": (49.8, 73.2), "googlenews_s": (49.0, 73.5), "tweet": (49.7, 73.6),
    },
    "tfidf-kmeans": {
        "agnews": (34.5, 11.9), "searchsnippets": (31.5, 19.2), "stackoverflow": (58.4, 58.7), "biomedical": (28.3, 23.2),
        "googlenews_ts": (68.0, 88.9), "googlenews_t": (58.9, 79.3), "googlenews_s": (61.9, 83.0), "tweet": (57.0, 80.7),
    },
}


def _methods() -> dict:
    from hf_textcluster.models import METHODS

    return METHODS


def _display_name(method: str) -> str:
    spec = _methods().get(method)
    return spec.display_name if spec else method.upper()


# ----- bookkeeping ---------------------------------------------------------------------------------------------------
def environment() -> dict:
    import importlib.metadata as md

    versions = {}
    for package in ("torch", "transformers", "sentence-transformers", "datasets", "scikit-learn", "hf_textcluster"):
        try:
            versions[package] = md.version(package)
        except md.PackageNotFoundError:
            versions[package] = "-"
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch

    from hf_textcluster.precision import cpu_capability

    emulated = " [ONEDNN_MAX_CPU_ISA=" + os.environ["ONEDNN_MAX_CPU_ISA"] + "]" if os.environ.get("ONEDNN_MAX_CPU_ISA") else ""
    return {
        "versions": versions,
        "machine": f"{cpu}, {cpu_capability()}{emulated}, {os.cpu_count()} cores, torch threads "
                   f"{torch.get_num_threads()}, Python {platform.python_version()}",
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python training/bench.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
    }


def load_store() -> dict:
    if RESULTS_JSON.is_file():
        return json.loads(RESULTS_JSON.read_text())
    return {"rows": [], "runs": {}}


def save_store(store: dict) -> None:
    RESULTS_JSON.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS_JSON.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(store, indent=1, sort_keys=True))
    os.replace(tmp, RESULTS_JSON)
    RESULTS_MD.write_text(render(store))


def put_row(store: dict, row: dict) -> None:
    key = (row["section"], row["method"], row["dataset"], row.get("seed"), row.get("variant", ""))
    store["rows"] = [
        r for r in store["rows"] if (r["section"], r["method"], r["dataset"], r.get("seed"), r.get("variant", "")) != key
    ]
    store["rows"].append(row)


# ----- sections ------------------------------------------------------------------------------------------------------
def run_baselines(args, store, run_id) -> None:
    from sklearn.cluster import KMeans

    from hf_textcluster.baselines import EmbeddingKMeans, VectorizerKMeans
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.metrics import clustering_scores

    for name in args.datasets:
        dataset = load_benchmark(name, data_dir=args.data_dir)
        texts, labels = dataset["text"], dataset["label"]
        k = dataset.features["label"].num_classes
        start = time.perf_counter()
        embeddings = EmbeddingKMeans(k, show_progress_bar=False).embed(texts)  # once per corpus, shared by seeds
        embed_seconds = time.perf_counter() - start
        for seed in args.seeds:
            for method, fit in (
                ("bow-kmeans", lambda s: VectorizerKMeans(k, kind="bow", random_state=s).fit_predict(texts)),
                ("tfidf-kmeans", lambda s: VectorizerKMeans(k, kind="tfidf", random_state=s).fit_predict(texts)),
                ("embeddings-kmeans", lambda s: KMeans(k, n_init=10, random_state=s).fit_predict(embeddings)),
            ):
                start = time.perf_counter()
                predictions = fit(seed)
                seconds = time.perf_counter() - start + (embed_seconds if method == "embeddings-kmeans" else 0.0)
                scores = clustering_scores(labels, predictions)
                put_row(store, {"section": "baselines", "method": method, "dataset": name, "seed": seed,
                                "run": run_id, "seconds": round(seconds, 2), **scores})
                print(f"{name:15s} seed {seed} {method:18s} ACC {100 * scores['acc']:.1f} NMI {100 * scores['nmi']:.1f}", flush=True)
            save_store(store)


def run_method(args, store, run_id) -> None:
    import torch

    from hf_textcluster.data import CORPORA
    from hf_textcluster.metrics import clustering_scores
    from hf_textcluster.trainer import evaluate_clusterer
    from hf_textcluster.runs import train_clusterer

    overrides = {"save_strategy": "no", "disable_tqdm": True, "logging_steps": 100}
    if args.max_steps:
        overrides["max_steps"] = args.max_steps
    for name in args.datasets:
        for seed in args.seeds:
            # Each trained model is kept (runs/ is git-ignored) so a model card can be made from a real run.
            variant_slug = re.sub(r"[^a-z0-9]+", "-", args.variant.lower()).strip("-")  # "w/o MLM" -> "w-o-mlm"
            output_dir = str(REPO / "runs" / "bench" / f"{args.section}-{name}-seed{seed}{'-' + variant_slug if variant_slug else ''}")
            result = train_clusterer(
                args.section, name, output_dir, data_dir=args.data_dir, recipe=args.recipe, seed=seed,
                augmentation=args.augmentation or "recipe", training_overrides=overrides,
                config_overrides={k: json.loads(v) for k, _, v in (c.partition("=") for c in args.config)},
                resume=False, evaluate=False, save=True,
            )
            trainer = result.trainer
            baseline = clustering_scores(trainer.train_dataset["label"], trainer.initial_kmeans_labels)
            start = time.perf_counter()
            metrics = evaluate_clusterer(
                result.model, trainer.train_dataset["text"], trainer.train_dataset["label"], batch_size=128,
                random_state=seed, precision=trainer.precision,
            )
            row = {"section": "method", "method": args.section, "dataset": name, "seed": seed, "run": run_id,
                   "variant": args.variant, "train_seconds": round(result.train_seconds, 1),
                   "eval_seconds": round(time.perf_counter() - start, 1),
                   "steps": trainer.state.global_step, "batch_size": trainer.args.per_device_train_batch_size,
                   "augmentation": result.trainer.train_dataset.info.description or args.augmentation or "recipe",
                   **{f"init_kmeans_{k}": v for k, v in baseline.items()}, **metrics}
            if len(trainer.train_dataset) != CORPORA[name].num_rows:
                row["note"] = "rows from the augmented file"
            run_file = Path(output_dir) / "training_run.json"
            run_info = json.loads(run_file.read_text())
            run_info["metrics"].update({f"eval_{k}": v for k, v in metrics.items()})
            run_info["command"] = store["runs"][run_id]["command"]
            run_file.write_text(json.dumps(run_info, indent=2))
            put_row(store, row)
            save_store(store)
            print(f"{name:15s} seed {seed} {args.section}: head ACC {100 * metrics['acc']:.1f} NMI {100 * metrics['nmi']:.1f}"
                  f" | k-means on trained ACC {100 * metrics['kmeans_acc']:.1f} NMI {100 * metrics['kmeans_nmi']:.1f}"
                  f" | k-means before ACC {100 * baseline['acc']:.1f} NMI {100 * baseline['nmi']:.1f}", flush=True)
            del result, trainer
            torch.manual_seed(0)


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_speed(args, store, run_id) -> None:
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import pipeline

    import hf_textcluster  # noqa: F401
    from hf_textcluster import SCCLModel, SCCLTrainer
    from hf_textcluster.backbones import resolve_encoder
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.metrics import clustering_scores
    from hf_textcluster.trainer import ClusteringTrainingArguments, TextViewsCollator

    dataset = load_benchmark("stackoverflow", data_dir=args.data_dir, augmentation="sccl_contextual")
    texts, labels = dataset["text"], dataset["label"]
    model = SCCLModel.from_encoder_pretrained(None, num_clusters=20)
    rows = []

    # (1) + (3): a training step vs the bare encoder's forward + backward on the same three views.
    trainer = SCCLTrainer(model=model, args=ClusteringTrainingArguments(output_dir=tempfile.mkdtemp(), report_to="none"),
                          train_dataset=dataset)
    model.config.centroids_initialized = True
    model.init_clusters_from_kmeans(torch.randn(20, model.config.encoder.hidden_size))
    batches = {}
    rng = np.random.default_rng(0)
    indices = [rng.choice(len(dataset), 64, replace=False).tolist() for _ in range(args.speed_repeats)]
    for pad in (False, True):
        collator = TextViewsCollator(model.tokenizer, 32, SCCLTrainer.views, pad_to_max_length=pad)
        batches[pad] = [collator([dataset[i] for i in idx]) for idx in indices]

    def bare_step(batch, dtype):
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            ids = torch.cat([batch[f"{p}input_ids"] for p in ("", "aug1_", "aug2_")])
            mask = torch.cat([batch[f"{p}attention_mask"] for p in ("", "aug1_", "aug2_")])
            loss = model.encoder(input_ids=ids, attention_mask=mask).last_hidden_state.float().mean()
        loss.backward()
        model.zero_grad(set_to_none=True)

    def sccl_step(batch, dtype):
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            loss = trainer.compute_loss(model, batch)
        loss.backward()
        model.zero_grad(set_to_none=True)

    model.train()
    timings = {}
    for dtype_name, dtype in (("fp32", None), ("bf16", torch.bfloat16)):
        for pad in (False, True):
            for kind, step in (("bare", bare_step), ("sccl", sccl_step)):
                step(batches[pad][0], dtype)  # warm-up
                timings[(dtype_name, pad, kind)] = statistics.median(
                    _median_time(lambda b=b: step(b, dtype), 1) for b in batches[pad][1:]
                )
    for dtype_name in ("fp32", "bf16"):
        for pad in (False, True):
            ratio = timings[(dtype_name, pad, "sccl")] / timings[(dtype_name, pad, "bare")]
            rows.append({"measure": f"SCCL step / bare encoder fwd+bwd, 3 views x 64, {dtype_name}, "
                                    f"{'pad to 32' if pad else 'dynamic padding'}",
                         "value": round(ratio, 3), "detail": f"{timings[(dtype_name, pad, 'sccl')]:.2f}s vs "
                                                           f"{timings[(dtype_name, pad, 'bare')]:.2f}s"})
    base = timings[("fp32", True, "sccl")]
    for dtype_name in ("fp32", "bf16"):
        for pad in (False, True):
            rows.append({"measure": f"SCCL step speed-up vs fp32 + pad to 32: {dtype_name}, "
                                    f"{'pad to 32' if pad else 'dynamic padding'}",
                         "value": round(base / timings[(dtype_name, pad, "sccl")], 2),
                         "detail": f"{timings[(dtype_name, pad, 'sccl')]:.2f}s per step"})

    # (3, quality): k-means on the encoder's embeddings computed in fp32 vs under bf16 autocast.
    from sklearn.cluster import KMeans

    model.eval()
    for dtype_name, dtype in (("fp32", None), ("bf16", torch.bfloat16)):
        start = time.perf_counter()
        emb = model.embed(texts, batch_size=128, precision=dtype_name)
        seconds = time.perf_counter() - start
        scores = clustering_scores(labels, KMeans(20, n_init=10, random_state=0).fit_predict(emb))
        rows.append({"measure": f"k-means on MiniLM embeddings of stackoverflow, inference in {dtype_name}: ACC / NMI",
                     "value": f"{100 * scores['acc']:.1f} / {100 * scores['nmi']:.1f}",
                     "detail": f"embedding 20,000 texts took {seconds:.1f}s"})

    # (2): pipeline("text-clustering") vs SentenceTransformer.encode on the same 20,000 texts (fp32, batch 64).
    with tempfile.TemporaryDirectory() as model_dir:
        model.save_pretrained(model_dir)
        clusterer = pipeline("text-clustering", model=model_dir, device="cpu")
        encoder = SentenceTransformer(resolve_encoder(None).name_or_path, device="cpu")
        encoder.max_seq_length = 32
        clusterer(texts[:256]), encoder.encode(texts[:256], batch_size=64)  # warm-up
        pipe_times, st_times = [], []
        for _ in range(args.pipeline_repeats):
            start = time.perf_counter(); encoder.encode(texts, batch_size=64); st_times.append(time.perf_counter() - start)
            start = time.perf_counter(); clusterer(texts, batch_size=64); pipe_times.append(time.perf_counter() - start)
        st, pipe = min(st_times), min(pipe_times)
        rows.append({"measure": "pipeline('text-clustering') throughput / SentenceTransformer.encode, 20,000 texts, fp32",
                     "value": round(st / pipe, 3),
                     "detail": f"{len(texts) / pipe:.0f} vs {len(texts) / st:.0f} texts/s (best of {args.pipeline_repeats})"})
    for i, row in enumerate(rows):
        put_row(store, {"section": "speed", "method": "sccl", "dataset": "stackoverflow", "seed": i, "run": run_id, **row})
        print(f"{row['measure']}: {row['value']} ({row['detail']})", flush=True)
    save_store(store)


# ----- rendering -----------------------------------------------------------------------------------------------------
def _mean_std(values: list[float]) -> str:
    values = [100 * v for v in values]
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}"


def _paper(method: str, dataset: str, index: int) -> str:
    spec = _methods().get(method)
    value = (spec.paper_results if spec else PAPER_BASELINES.get(method, {})).get(dataset)
    return f"{value[index]:.1f}" if value else "–"


def _run_header(store: dict, rows: list[dict]) -> list[str]:
    lines = []
    for run_id in sorted({r["run"] for r in rows}):
        run = store["runs"][run_id]
        versions = ", ".join(f"{k} {v}" for k, v in run["versions"].items())
        lines.append(f"- `{run['command']}` ({run['date']}; {run['machine']}; {versions})")
    return lines


def _method_order(method: str) -> tuple[int, str]:
    order = list(_methods())
    return (order.index(method) if method in order else len(order), method)


def _gain(rows: list[dict], metric: str) -> str:
    """Mean gain (points) of the trained head over the same run's k-means initialisation."""
    gain = round(100 * statistics.mean(r[metric] - r[f"init_kmeans_{metric}"] for r in rows), 1)
    return f"{gain + 0.0:+.1f}"  # + 0.0: no "-0.0"


def _summary(rows: list[dict]) -> list[str]:
    """One table, every method beside the MiniLM + k-means baseline, per corpus (means over seeds)."""
    from hf_textcluster.data import BENCHMARKS

    method_rows = [r for r in rows if r["section"] == "method"]
    if not method_rows:
        return []
    configurations = sorted({(r["method"], r.get("variant", "")) for r in method_rows},
                            key=lambda mv: (_method_order(mv[0]), mv[1]))
    out = ["## Side by side", "",
           "Means over seeds, from the sections above. *Δ ACC* / *Δ purity* = the head's minus k-means before, measured",
           "in the same run (same seed, same pooling): the fair gain of training; *MiniLM+k-means* is the baseline section's",
           "(L2-normalised embeddings, 10 restarts), for reference.", "",
           "| dataset | method | head ACC | head NMI | purity | Δ ACC | Δ purity | k-means after ACC | NMI | seeds |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name in BENCHMARKS:
        if not any(r["dataset"] == name for r in method_rows):
            continue
        base = [r for r in rows if r["section"] == "baselines" and r["method"] == "embeddings-kmeans" and r["dataset"] == name]
        if base:
            out.append(f"| {name} | MiniLM+k-means | {_mean_std([r['acc'] for r in base])} | {_mean_std([r['nmi'] for r in base])}"
                       f" | {_mean_std([r['purity'] for r in base]) if all('purity' in r for r in base) else '–'} | | | | | {len(base)} |")
        for method, variant in configurations:
            drows = [r for r in method_rows if (r["method"], r.get("variant", ""), r["dataset"]) == (method, variant, name)]
            if not drows:
                continue
            label = _display_name(method) + (f" ({variant})" if variant else "")
            out.append(
                f"| {name} | {label} | {_mean_std([r['acc'] for r in drows])} | {_mean_std([r['nmi'] for r in drows])}"
                f" | {_mean_std([r['purity'] for r in drows])} | {_gain(drows, 'acc')} | {_gain(drows, 'purity')}"
                f" | {_mean_std([r['kmeans_acc'] for r in drows])} | {_mean_std([r['kmeans_nmi'] for r in drows])} | {len(drows)} |"
            )
    out.append("")
    return out


def render(store: dict) -> str:
    from hf_textcluster.data import BENCHMARKS

    rows = store["rows"]
    out = [
        "# Results",
        "",
        "Written by `training/bench.py` from `docs/results.json`; do not edit by hand. ACC and NMI in %, mean ± std over",
        "seeds. All runs on CPU with the pip-shipped `sentence-transformers/all-MiniLM-L6-v2` (the default encoder).",
        "Labels are used only for scoring. Paper columns are the numbers the papers report (other encoders, GPUs,",
        "longer training): they are a reference point, not a like-for-like comparison.",
        "",
    ]
    baseline_rows = [r for r in rows if r["section"] == "baselines"]
    if baseline_rows:
        out += ["## Baselines: BoW / TF-IDF / MiniLM embeddings + k-means", ""]
        out += _run_header(store, baseline_rows) + [""]
        out += ["BoW and TF-IDF: 1,500 features (as in the SCCL paper), English stop words removed. Embeddings:",
                "MiniLM as its sentence-transformers config defines it (mean pooling, L2-normalised). k-means: 10 restarts.",
                "Embedding time is included in the time column (encoding once per corpus).", ""]
        out += ["| dataset | N | K | BoW ACC | BoW NMI | TF-IDF ACC | TF-IDF NMI | MiniLM+k-means ACC | MiniLM+k-means NMI | paper TF-IDF ACC / NMI | seeds | MiniLM time (s) |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        from hf_textcluster.data import CORPORA

        for name in BENCHMARKS:
            by = {m: [r for r in baseline_rows if r["dataset"] == name and r["method"] == m]
                  for m in ("bow-kmeans", "tfidf-kmeans", "embeddings-kmeans")}
            if not any(by.values()):
                continue
            cells = []
            for m in ("bow-kmeans", "tfidf-kmeans", "embeddings-kmeans"):
                cells += [_mean_std([r["acc"] for r in by[m]]) if by[m] else "–",
                          _mean_std([r["nmi"] for r in by[m]]) if by[m] else "–"]
            spec = CORPORA[name]
            seconds = statistics.mean(r["seconds"] for r in by["embeddings-kmeans"]) if by["embeddings-kmeans"] else 0
            out.append(f"| {name} | {spec.num_rows:,} | {spec.num_labels} | " + " | ".join(cells)
                       + f" | {_paper('tfidf-kmeans', name, 0)} / {_paper('tfidf-kmeans', name, 1)}"
                       + f" | {len(by['embeddings-kmeans'])} | {seconds:.0f} |")
        out.append("")

    method_rows = [r for r in rows if r["section"] == "method"]
    for method in sorted({r["method"] for r in method_rows}, key=_method_order):
        mrows = [r for r in method_rows if r["method"] == method]
        for variant in sorted({r.get("variant", "") for r in mrows}):
            vrows = [r for r in mrows if r.get("variant", "") == variant]
            out += [f"## {_display_name(method)}{f' ({variant})' if variant else ''}", ""]
            out += _run_header(store, vrows) + [""]
            note = _methods()[method].paper_note if method in _methods() else ""
            if note and not variant:
                out += [*textwrap.wrap(note, 110, break_on_hyphens=False), ""]
            out += ["*k-means before* = k-means (seeded) on the same encoder's embeddings with the method's pooling, before",
                    "training (the centroid initialisation, same run). *head* = argmax of the trained cluster head. *k-means",
                    "after* = k-means on the trained embeddings (the protocol of the SCCL paper's headline numbers). *purity*",
                    "is the head's (DEC-MLM's metric).", ""]
            out += ["| dataset | k-means before ACC | NMI | head ACC | NMI | purity | k-means after ACC | NMI | paper ACC | NMI | steps × batch | train (s) | seeds |",
                    "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
            for name in BENCHMARKS:
                drows = [r for r in vrows if r["dataset"] == name]
                if not drows:
                    continue
                out.append(
                    f"| {name} | {_mean_std([r['init_kmeans_acc'] for r in drows])} | {_mean_std([r['init_kmeans_nmi'] for r in drows])}"
                    f" | {_mean_std([r['acc'] for r in drows])} | {_mean_std([r['nmi'] for r in drows])}"
                    f" | {_mean_std([r['purity'] for r in drows])}"
                    f" | {_mean_std([r['kmeans_acc'] for r in drows])} | {_mean_std([r['kmeans_nmi'] for r in drows])}"
                    f" | {_paper(method, name, 0)} | {_paper(method, name, 1)}"
                    f" | {drows[0]['steps']} × {drows[0]['batch_size']} | {statistics.mean(r['train_seconds'] for r in drows):.0f} | {len(drows)} |"
                )
            out.append("")

    out += _summary(rows)

    speed_rows = sorted([r for r in rows if r["section"] == "speed"], key=lambda r: r["seed"])
    if speed_rows:
        out += ["## Speed (ratios measured side by side in one process)", ""]
        out += _run_header(store, speed_rows) + [""]
        out += ["| measure | value | detail |", "|---|---|---|"]
        out += [f"| {r['measure']} | {r['value']} | {r['detail']} |" for r in speed_rows]
        out.append("")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    from hf_textcluster.data import BENCHMARKS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("section", choices=["baselines", *_methods(), "speed", "render"])
    parser.add_argument("--datasets", nargs="+", default=["all"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--data-dir", default=os.environ.get("HF_TEXTCLUSTER_DATA_DIR") or str(REPO.parent / "shared" / "data"))
    parser.add_argument("--recipe", default="cpu")
    parser.add_argument("--variant", default="", help="A label for this configuration in the tables.")
    parser.add_argument("--augmentation", default=None)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="Model config override (JSON value), e.g. mlm_loss_weight=0 for DEC-MLM's ablation.")
    parser.add_argument("--speed-repeats", type=int, default=6)
    parser.add_argument("--pipeline-repeats", type=int, default=2)
    args = parser.parse_args(argv)
    args.datasets = list(BENCHMARKS) if args.datasets == ["all"] else args.datasets
    store = load_store()
    if args.section == "render":
        RESULTS_MD.write_text(render(store))
        return 0
    run_id = f"{args.section}-{dt.datetime.now(dt.timezone.utc).strftime('%Y%m%dT%H%M%S')}"
    store["runs"][run_id] = environment()
    if args.section == "baselines":
        run_baselines(args, store, run_id)
    elif args.section == "speed":
        run_speed(args, store, run_id)
    else:
        run_method(args, store, run_id)
    print(f"Wrote {RESULTS_MD.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
