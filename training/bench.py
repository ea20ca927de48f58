#!/usr/bin/env python
"""Benchmarks: methods x corpora x seeds, and speed ratios. Writes docs/results.md and README's leaderboard-in-short
table (never edit them by hand).

    python training/bench.py baselines --datasets all --seeds 0 1 2
    python training/bench.py <method> --datasets stackoverflow searchsnippets agnews biomedical tweet --seeds 0 1 2
    python training/bench.py decmlm ... --config mlm_loss_weight=0 --variant "w/o MLM"    # the paper's ablation

<method> is any registered method (hf_textcluster.models.METHODS: sccl, decmlm, ...); its paper's numbers and
display name come from the registry.
    python training/bench.py speed
    python training/bench.py authors-sccl --from side_by_side.jsonl   # record timings of the authors' code, run outside
    python training/bench.py render        # re-write docs/results.md from docs/results.json
    python training/bench.py auto-k --datasets all --seeds 0   # choosing K without labels: criteria and BERTopic

Each run stores its rows in docs/results.json (keyed by section/method/dataset/seed, with the exact command, the
package versions and the machine) and re-renders docs/results.md from everything stored, so sections can be
re-run independently. Ratios are measured side by side in one process; absolute times on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
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
from typing import NamedTuple

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS_JSON = Path(os.environ.get("HF_TEXTCLUSTER_BENCH_STORE", REPO / "docs" / "results.json"))
RESULTS_MD = RESULTS_JSON.with_suffix(".md")
README_MD = REPO / "README.md"
# README's "leaderboard in short" table sits between these lines; every render rewrites it from the store.
README_MARKERS = ("<!-- bench.py: leaderboard in short -->", "<!-- /bench.py -->")
README_CORPUS_NAMES = {"agnews": "AgNews", "searchsnippets": "SearchSnippets", "stackoverflow": "StackOverflow",
                       "biomedical": "Biomedical", "googlenews_ts": "GoogleNews-TS", "googlenews_t": "GoogleNews-T",
                       "googlenews_s": "GoogleNews-S", "tweet": "Tweet"}

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
# Reported rows of other methods that top a corpus in the papers' tables (SCCL paper, Table 1): the leaderboard's
# "best reported" takes them with the five methods' own numbers, as issue 14's goal figures do (GoogleNews-T 81.8,
# Tweet 89.6 are HAC-SD's).
PAPER_OTHER_METHODS = {
    "HAC-SD": {"agnews": 81.8, "searchsnippets": 82.7, "stackoverflow": 64.8, "biomedical": 40.1,
               "googlenews_ts": 85.8, "googlenews_t": 81.8, "googlenews_s": 80.6, "tweet": 89.6},
    "Self-Train": {"searchsnippets": 77.1, "stackoverflow": 59.8, "biomedical": 54.8},
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

    from hf_textcluster.modeling.precision import cpu_capability

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


def _row_key(row: dict) -> tuple:
    return (row["section"], row["method"], row["dataset"], row.get("seed"), row.get("variant", ""))


def save_store(store: dict) -> None:
    """Write the rows this process put (``put_row``) into the file as it is now: rows written meanwhile by another
    bench process (or corrected by hand) are kept, not overwritten with this process's copy from its start."""
    current = load_store()
    dirty = store.pop("_dirty", set())
    current["runs"] = {**current.get("runs", {}), **store.get("runs", {})}
    mine = {_row_key(r): r for r in store["rows"] if _row_key(r) in dirty}
    current["rows"] = [r for r in current["rows"] if _row_key(r) not in mine] + list(mine.values())
    store.clear()
    store.update(current)
    RESULTS_JSON.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS_JSON.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(store, indent=1, sort_keys=True))
    os.replace(tmp, RESULTS_JSON)
    write_rendered(store)


def put_row(store: dict, row: dict) -> None:
    key = _row_key(row)
    store["rows"] = [r for r in store["rows"] if _row_key(r) != key]
    store["rows"].append(row)
    store.setdefault("_dirty", set()).add(key)


def _encoder_variant(encoder: str | None) -> str:
    """The label of runs with a non-default encoder: its short name ("all-mpnet-base-v2"); "" for the default."""
    from hf_textcluster.encoders import DEFAULT_ENCODER

    if encoder is None or encoder == DEFAULT_ENCODER:
        return ""
    return Path(encoder.rstrip("/")).name


# ----- sections ------------------------------------------------------------------------------------------------------
def run_baselines(args, store, run_id) -> None:
    from sklearn.cluster import KMeans

    from hf_textcluster.training.baselines import EmbeddingKMeans, VectorizerKMeans
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.training.metrics import clustering_scores

    # With --encoder only the embeddings baselines run (k-means, and the BERTopic way at the true K), stored under
    # the encoder's short name as their variant.
    variant = _encoder_variant(args.encoder)
    for name in args.datasets:
        dataset = load_benchmark(name, data_dir=args.data_dir)
        texts, labels = dataset["text"], dataset["label"]
        k = dataset.features["label"].num_classes
        start = time.perf_counter()
        # once per corpus, shared by seeds
        embeddings = EmbeddingKMeans(k, encoder=args.encoder, show_progress_bar=False).embed(texts)
        embed_seconds = time.perf_counter() - start
        for seed in args.seeds:
            fits = [
                ("bow-kmeans", lambda s: VectorizerKMeans(k, kind="bow", random_state=s).fit_predict(texts)),
                ("tfidf-kmeans", lambda s: VectorizerKMeans(k, kind="tfidf", random_state=s).fit_predict(texts)),
                ("embeddings-kmeans", lambda s: KMeans(k, n_init=10, random_state=s).fit_predict(embeddings)),
            ]
            if variant:  # the BERTopic way at the true K on this encoder (MiniLM's is in the auto-k section)
                fits.append(("bertopic-kmeans", lambda s: KMeans(k, n_init=10, random_state=s).fit_predict(
                    _bertopic_umap(s).fit(embeddings).embedding_)))
            for method, fit in [f for f in fits if not variant or f[0] in ("embeddings-kmeans", "bertopic-kmeans")]:
                start = time.perf_counter()
                predictions = fit(seed)
                seconds = time.perf_counter() - start + (embed_seconds if method == "embeddings-kmeans" else 0.0)
                scores = clustering_scores(labels, predictions)
                put_row(store, {"section": "baselines", "method": method, "dataset": name, "seed": seed,
                                "run": run_id, "seconds": round(seconds, 2), **scores,
                                **({"variant": variant, "encoder": args.encoder} if variant else {})})
                print(f"{name:15s} seed {seed} {method:18s} ACC {100 * scores['acc']:.1f} NMI {100 * scores['nmi']:.1f}", flush=True)
            save_store(store)


def run_dir(method: str, dataset: str, seed: int, variant: str) -> Path:
    """Where a method run keeps its trained model (runs/ is git-ignored), so a model card or a later measurement
    (`rescore`) can use a real run."""
    variant_slug = re.sub(r"[^a-z0-9]+", "-", variant.lower()).strip("-")  # "w/o MLM" -> "w-o-mlm"
    return REPO / "runs" / "bench" / f"{method}-{dataset}-seed{seed}{'-' + variant_slug if variant_slug else ''}"


def run_method(args, store, run_id) -> None:
    import torch

    from hf_textcluster.training.baselines import EmbeddingKMeans
    from hf_textcluster.data import CORPORA
    from hf_textcluster.training.metrics import clustering_scores
    from hf_textcluster.training.trainer import evaluate_clusterer
    from hf_textcluster.training.runs import train_clusterer

    spec = _methods()[args.section]
    variant = ", ".join(v for v in (args.variant, _encoder_variant(args.encoder)) if v)
    if args.held_out:
        missing = [name for name in args.datasets if name not in spec.paper_test_sizes]
        if missing:
            raise SystemExit(f"error: --held-out: the {spec.display_name} paper gives no test split for {missing} "
                             f"(it has {sorted(spec.paper_test_sizes) or 'none'}).")
        variant = f"{variant}, held-out split" if variant else "held-out split"
    overrides = {"save_strategy": "no", "disable_tqdm": True, "logging_steps": 100}
    if args.max_steps:
        overrides["max_steps"] = args.max_steps
    overrides.update({k: json.loads(v) for k, _, v in (c.partition("=") for c in args.training)})
    done = {(r["dataset"], r.get("seed")) for r in store["rows"]
            if r["section"] == "method" and r["method"] == args.section and r.get("variant", "") == variant}
    for name in args.datasets:
        for seed in args.seeds:
            if args.skip_done and (name, seed) in done:
                print(f"{name:15s} seed {seed} {args.section}: stored already (--skip-done)", flush=True)
                continue
            output_dir = str(run_dir(args.section, name, seed, variant))
            result = train_clusterer(
                args.section, name, output_dir, data_dir=args.data_dir, recipe=args.recipe, seed=seed,
                augmentation=args.augmentation or "recipe", training_overrides=overrides,
                config_overrides={k: json.loads(v) for k, _, v in (c.partition("=") for c in args.config)},
                resume=False, evaluate=False, save=True, encoder=args.encoder,
                test_size=spec.paper_test_sizes[name] if args.held_out else None,
            )
            trainer = result.trainer
            scored = result.test_dataset if result.test_dataset is not None else trainer.train_dataset
            if result.test_dataset is None:
                baseline = clustering_scores(trainer.train_dataset["label"], trainer.initial_kmeans_labels)
            else:  # the held-out texts were not in the centroid initialisation: MiniLM+k-means on them instead
                k = trainer.model.config.num_clusters
                baseline = clustering_scores(scored["label"], EmbeddingKMeans(k, random_state=seed, show_progress_bar=False)
                                             .fit_predict(scored["text"]))
            start = time.perf_counter()
            metrics = evaluate_clusterer(
                result.model, scored["text"], scored["label"], batch_size=128,
                random_state=seed, precision=trainer.precision, umap_kmeans=True,
            )
            row = {"section": "method", "method": args.section, "dataset": name, "seed": seed, "run": run_id,
                   "variant": variant, "encoder": args.encoder, "train_seconds": round(result.train_seconds, 1),
                   "eval_seconds": round(time.perf_counter() - start, 1),
                   "steps": trainer.state.global_step, "batch_size": trainer.args.per_device_train_batch_size,
                   "augmentation": result.trainer.train_dataset.info.description or args.augmentation or "recipe",
                   **{f"init_kmeans_{k}": v for k, v in baseline.items()}, **metrics}
            if result.model.config.has_topic_model:
                row["topics"] = topics_by_cluster(result.model, trainer.train_dataset)
            if trainer.health_history:  # label-free checks during training (agreement with k-means, sizes)
                row["health"] = trainer.health_history
            if getattr(trainer, "stage_metrics", None):  # ClusterBERT: scores after each stage (its Figure 3)
                row["stages"] = trainer.stage_metrics
            if hasattr(result.model.config, "serving_attention"):
                row.update(serving_modes(result.model, scored, trainer.args.per_device_train_batch_size, seed))
            if result.test_dataset is not None:
                row["note"] = f"trained on {len(trainer.train_dataset):,}, scored on {len(scored):,} held-out texts"
            elif len(trainer.train_dataset) != CORPORA[name].num_rows:
                row["note"] = "rows from the augmented file"
            run_file = Path(output_dir) / "training_run.json"
            run_info = json.loads(run_file.read_text())
            run_info["metrics"].update({f"eval_{k}": v for k, v in metrics.items()})
            run_info["log_history"] = trainer.state.log_history  # losses per step, for training/figures.py
            run_info["command"] = store["runs"][run_id]["command"]
            run_file.write_text(json.dumps(run_info, indent=2))
            put_row(store, row)
            save_store(store)
            print(f"{name:15s} seed {seed} {args.section}: head ACC {100 * metrics['acc']:.1f} NMI {100 * metrics['nmi']:.1f}"
                  f" | k-means on trained ACC {100 * metrics['kmeans_acc']:.1f} NMI {100 * metrics['kmeans_nmi']:.1f}"
                  f" | k-means before ACC {100 * baseline['acc']:.1f} NMI {100 * baseline['nmi']:.1f}", flush=True)
            del result, trainer
            torch.manual_seed(0)


def run_rescore(args, store, run_id) -> None:
    """Score the models earlier method runs kept (`run_dir`) with today's `evaluate_clusterer` and add the metrics
    their rows lack (e.g. ``latent_kmeans_*``, added after those runs); stored numbers are not changed, and a model
    whose head no longer gives the stored ACC on the same texts is left alone."""
    from transformers import AutoModel

    from hf_textcluster.training.runs import prepare_dataset
    from hf_textcluster.training.trainer import evaluate_clusterer

    rows = [r for r in store["rows"] if r["section"] == "method" and r["dataset"] in args.datasets
            and r.get("seed") in args.seeds and (not args.methods or r["method"] in args.methods)]
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
        dataset = prepare_dataset(row["dataset"], run_info["augmentation"], data_dir=args.data_dir, seed=row["seed"])
        model = AutoModel.from_pretrained(str(directory))
        metrics = evaluate_clusterer(model, dataset["text"], dataset["label"], batch_size=128, random_state=row["seed"],
                                     umap_kmeans=True)
        if not math.isclose(metrics["acc"], row["acc"], abs_tol=1e-3):
            print(f"{label}: skipped (head ACC {metrics['acc']:.4f} here, {row['acc']:.4f} stored)", flush=True)
            continue
        added = {k: v for k, v in metrics.items() if k not in row}
        if added:
            put_row(store, {**row, **added, "rescored": run_id})
            save_store(store)
        print(f"{label}: added {sorted(added) or 'nothing'}", flush=True)


def topics_by_cluster(model, dataset) -> dict:
    """A topic model's learned topics per cluster, with the class most of the cluster's ``dataset`` texts have."""
    predicted = model.predict(dataset["text"], batch_size=128)
    names, gold = dataset.features["label"].names, np.asarray(dataset["label"])
    return {
        str(k): {"topics": words, "size": int((predicted == k).sum()),
                 "majority_class": names[int(np.bincount(gold[predicted == k]).argmax())] if (predicted == k).any() else None}
        for k, words in model.cluster_topics(top_n=4).items()
    }


def serving_modes(model, dataset, batch_size: int, seed: int) -> dict:
    """ACC / NMI of an attention-over-samples model (AECL) when each text attends to the reference set (served), to
    itself only, and to the other texts of random batches of the training batch size (the authors' evaluation)."""
    import torch

    from hf_textcluster.training.metrics import clustering_scores

    embeddings = torch.from_numpy(model.embed(dataset["text"], batch_size=128))
    labels = dataset["label"]
    model.eval()
    out = {}
    with torch.no_grad():
        z = model.cluster_features(embeddings)
        for mode in ("reference", "self"):
            h, _ = model.attend(z, mode=mode)
            predicted = model.cluster_head(h).argmax(-1).numpy()
            out.update({f"serving_{mode}_{k}": v for k, v in clustering_scores(labels, predicted).items()})
        order = np.random.default_rng(seed).permutation(len(z))
        predicted = np.empty(len(z), dtype=int)
        for start in range(0, len(z), batch_size):
            rows = order[start:start + batch_size]
            h, _ = model.attend(z[rows], mode="batch")
            predicted[rows] = model.cluster_head(h).argmax(-1).numpy()
        out.update({f"serving_batch_{k}": v for k, v in clustering_scores(labels, predicted).items()})
    return out


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _speed_variant() -> str:
    """Rows measured with oneDNN capped (an AVX2-only CPU emulated) are kept apart from native ones, and native rows
    per CPU kind ("": the first kind measured, a Xeon with AMX), so that a run on another kind adds a section
    instead of replacing the rows of the first."""
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA")
    if isa:
        return f"oneDNN capped to {isa}"
    from hf_textcluster.modeling.precision import cpu_capability

    capability = cpu_capability()
    return "" if _cpu_kind(capability) == "bf16 AMX" else f"Native, {capability}"


def run_speed(args, store, run_id) -> None:

    import hf_textcluster  # noqa: F401
    from hf_textcluster import SCCLModel
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.modeling.precision import native_bf16, resolve_precision

    variant = _speed_variant()
    emulated = not native_bf16("cpu")  # bf16 emulated (~30x slower per step): timed less, skipped where redundant
    auto = resolve_precision("auto", "cpu")
    dataset = load_benchmark("stackoverflow", data_dir=args.data_dir, augmentation="sccl_contextual")
    texts, labels = list(dataset["text"]), dataset["label"]
    model = SCCLModel.from_encoder_pretrained(None, num_clusters=20)
    parts = set(args.parts)
    rows = [{"part": "precision", "measure": "precision chosen by `auto` on this CPU", "value": auto,
             "detail": f"native bf16: {native_bf16('cpu')}"}]

    # (1) a training step vs the bare encoder's forward + backward on the same three views, per precision / padding.
    step_rows = _speed_steps(args, dataset, model, emulated) if "steps" in parts else []
    rows += [{"part": "steps", **row} for row in step_rows]

    # (2) pipeline("text-clustering") vs SentenceTransformer.encode on the same 20,000 texts, same batch (128):
    # both in fp32, and the pipeline at its default (auto) precision.
    if "pipeline" in parts:
        rows += [{"part": "pipeline", **row} for row in _speed_pipeline(args, texts, model, auto)]

    # (3) inference paths on a trained model (the demo's SCCL run: 60 steps x 64 on 4,000 titles, fp32 training):
    # throughput on all 20,000 texts and how the head's clusters change.
    if "inference" in parts:
        rows += [{"part": "inference", **row} for row in _speed_inference(dataset, texts, labels, emulated)]

    # (4) k-means on the encoder's embeddings computed in fp32 vs under bf16 autocast (skipped when emulated).
    if "kmeans" in parts:
        rows += [{"part": "kmeans", **row} for row in _speed_kmeans(texts, labels, emulated)]
    offsets = {"precision": 0, "steps": 10, "pipeline": 40, "inference": 50, "kmeans": 60}
    counts: dict[str, int] = {}
    for row in rows:
        part = row.pop("part")
        seed = offsets[part] + counts.get(part, 0)
        counts[part] = counts.get(part, 0) + 1
        put_row(store, {"section": "speed", "method": "sccl", "dataset": "stackoverflow", "seed": seed, "run": run_id,
                        "variant": variant, "part": part, **row})
        print(f"{row['measure']}: {row['value']} ({row['detail']})", flush=True)
    # a re-run replaces the rows of the parts it measured
    store["rows"] = [r for r in store["rows"] if not (r["section"] == "speed" and r.get("variant", "") == variant
                                                       and r["run"] != run_id and r.get("part", "steps") in counts)]
    save_store(store)


def _speed_steps(args, dataset, model, emulated) -> list[dict]:
    import torch

    from hf_textcluster import SCCLTrainer
    from hf_textcluster.training.trainer import ClusteringTrainingArguments, TextViewsCollator

    rows = []
    trainer = SCCLTrainer(model=model, args=ClusteringTrainingArguments(output_dir=tempfile.mkdtemp(), report_to="none",
                                                                        bf16=False), train_dataset=dataset)
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
    # Emulated bf16 is ~30x slower per step: there it is timed once, with dynamic padding only.
    settings = [("fp32", None, pad) for pad in (False, True)]
    settings += [("bf16", torch.bfloat16, pad) for pad in ((False,) if emulated else (False, True))]
    for dtype_name, dtype, pad in settings:
        timed = batches[pad][1:2] if (emulated and dtype is not None) else batches[pad][1:]
        for kind, step in (("bare", bare_step), ("sccl", sccl_step)):
            step(batches[pad][0], dtype)  # warm-up
            timings[(dtype_name, pad, kind)] = statistics.median(_median_time(lambda b=b: step(b, dtype), 1) for b in timed)
    for dtype_name, _, pad in settings:
        ratio = timings[(dtype_name, pad, "sccl")] / timings[(dtype_name, pad, "bare")]
        rows.append({"measure": f"SCCL step / bare encoder fwd+bwd, 3 views x 64, {dtype_name}, "
                                f"{'pad to 32' if pad else 'dynamic padding'}",
                     "value": round(ratio, 3), "detail": f"{timings[(dtype_name, pad, 'sccl')]:.2f}s vs "
                                                       f"{timings[(dtype_name, pad, 'bare')]:.2f}s"})
    base = timings[("fp32", True, "sccl")]
    for dtype_name, _, pad in settings:
        rows.append({"measure": f"SCCL step speed-up vs fp32 + pad to 32: {dtype_name}, "
                                f"{'pad to 32' if pad else 'dynamic padding'}",
                     "value": round(base / timings[(dtype_name, pad, "sccl")], 2),
                     "detail": f"{timings[(dtype_name, pad, 'sccl')]:.2f}s per step"})

    return rows


def _speed_pipeline(args, texts, model, auto) -> list[dict]:

    from sentence_transformers import SentenceTransformer
    from transformers import pipeline

    from hf_textcluster.encoders import resolve_encoder

    rows = []
    model.eval()
    with tempfile.TemporaryDirectory() as model_dir:
        model.save_pretrained(model_dir)
        encoder = SentenceTransformer(resolve_encoder(None).name_or_path, device="cpu")
        encoder.max_seq_length = 32
        clusterers = {}
        for precision in ("fp32", "auto"):
            clusterers[precision] = pipeline("text-clustering", model=model_dir, device="cpu", precision=precision)
        encoder.encode(texts[:256], batch_size=128)
        times = {"st": [], "fp32": [], "auto": []}
        for _ in range(args.pipeline_repeats):
            start = time.perf_counter(); encoder.encode(texts, batch_size=128); times["st"].append(time.perf_counter() - start)
            for precision, clusterer in clusterers.items():
                clusterer(texts[:256], batch_size=128)  # warm-up
                start = time.perf_counter(); clusterer(texts, batch_size=128); times[precision].append(time.perf_counter() - start)
        st = min(times["st"])
        for precision in ("fp32", "auto"):
            pipe = min(times[precision])
            rows.append({"measure": f"pipeline('text-clustering') throughput / SentenceTransformer.encode (fp32), "
                                    f"20,000 texts, batch 128, pipeline {precision}"
                                    + (f" (= {auto})" if precision == "auto" else ""),
                         "value": round(st / pipe, 3),
                         "detail": f"{len(texts) / pipe:.0f} vs {len(texts) / st:.0f} texts/s (best of {args.pipeline_repeats})"})

    return rows


def _speed_inference(dataset, texts, labels, emulated) -> list[dict]:
    from hf_textcluster.apps.demo import DEMO_NUM_TEXTS, DEMO_STEPS
    from hf_textcluster.training.metrics import clustering_scores
    from hf_textcluster.training.runs import train_clusterer

    rows = []
    sample = dataset.shuffle(seed=0).select(range(DEMO_NUM_TEXTS))
    with tempfile.TemporaryDirectory() as run_dir:
        trained = train_clusterer("sccl", sample, run_dir, recipe="cpu", resume=False, evaluate=False, save=False,
                                  training_overrides={"max_steps": DEMO_STEPS, "save_strategy": "no",
                                                      "disable_tqdm": True, "bf16": False}).model.eval()
    # predict's own precisions; the int8 one quantizes in its warm-up call (the quantized copy is cached)
    paths = [("fp32", "fp32"), ("int8 dynamic quantization of the encoder's Linear layers", "int8")]
    if not emulated:
        paths.insert(1, ("bf16 autocast", "bf16"))
    reference = None
    for name, precision in paths:
        trained.predict(texts[:256], precision=precision)  # warm-up
        start = time.perf_counter()
        predictions = trained.predict(texts, precision=precision)
        seconds = time.perf_counter() - start
        scores = clustering_scores(labels, predictions)
        if reference is None:
            reference = (predictions, seconds, scores)
        rows.append({"measure": f"predict on a trained SCCL model (demo run), {name}: speed-up vs fp32 / head ACC change",
                     "value": f"{reference[1] / seconds:.2f}x / {100 * (scores['acc'] - reference[2]['acc']):+.2f}",
                     "detail": f"{len(texts) / seconds:.0f} texts/s, head ACC {100 * scores['acc']:.1f}, "
                               f"{100 * (predictions == reference[0]).mean():.1f}% of texts in the fp32 cluster"})
    # int8 scales activations per batch: how often does a text's cluster depend on its batch companions?
    sample_texts = texts[:2000]
    for precision in ("fp32", "int8"):
        alone = trained.predict(sample_texts, batch_size=1, precision=precision)
        together = trained.predict(sample_texts, precision=precision)
        rows.append({"measure": f"predict at {precision}: texts whose cluster differs between batch 1 and batch 128",
                     "value": f"{100 * (alone != together).mean():.2f}%",
                     "detail": "first 2,000 texts of stackoverflow, the same trained SCCL model"})

    return rows


def _speed_kmeans(texts, labels, emulated) -> list[dict]:
    from hf_textcluster import SCCLModel
    from hf_textcluster.training.metrics import clustering_scores

    rows = []
    from sklearn.cluster import KMeans

    fresh = SCCLModel.from_encoder_pretrained(None, num_clusters=20)
    for dtype_name in ("fp32",) if emulated else ("fp32", "bf16"):
        start = time.perf_counter()
        emb = fresh.embed(texts, precision=dtype_name)
        seconds = time.perf_counter() - start
        scores = clustering_scores(labels, KMeans(20, n_init=10, random_state=0).fit_predict(emb))
        rows.append({"measure": f"k-means on MiniLM embeddings of stackoverflow, inference in {dtype_name}: ACC / NMI",
                     "value": f"{100 * scores['acc']:.1f} / {100 * scores['nmi']:.1f}",
                     "detail": f"embedding 20,000 texts took {seconds:.1f}s"})
    return rows


def record_authors_sccl(args, store, run_id) -> None:
    """Record a side-by-side timing of the SCCL authors' code and ours, measured outside this repository.

    The authors' code (github.com/amazon-science/sccl) is never part of this repository: it was checked out elsewhere
    and timed by a driver that imports it unchanged and monkeypatches what a CPU-only, offline, transformers-5 run
    needs (each patch is listed in the rows). Each line of ``--from`` is one run: ``{"who": "authors" | "ours",
    "seconds_per_step": ..., "steps": ..., "isa": ..., "precision": ..., "patches": [...]}``."""
    runs = [json.loads(line) for line in Path(args.source).read_text().splitlines() if line.startswith("{")]
    for i, run in enumerate(runs):
        put_row(store, {"section": "authors-sccl", "method": "sccl", "dataset": "stackoverflow", "seed": i,
                        "run": run_id, **run})
    store["rows"] = [r for r in store["rows"] if not (r["section"] == "authors-sccl" and r["run"] != run_id)]
    save_store(store)


def _render_authors_sccl(store: dict, rows: list[dict]) -> list[str]:
    if not rows:
        return []
    out = ["## SCCL training step: ours vs the authors' code", "",
           *_run_header(store, rows), "",
           "Same machine, encoder (the pip-shipped all-MiniLM-L6-v2), batch 64, StackOverflow with the authors' contextual",
           "augmentation file, max length 32, lr 1e-5 / heads x100, seconds per step between the first and the last timed",
           "step (k-means initialisation excluded), one process at a time, torch threads 2. Ours: `train_clusterer(\"sccl\",",
           "\"stackoverflow\", recipe=\"cpu\")` (dynamic padding, the three views in one encoder pass, the Trainer's loop).",
           "Theirs: `SCCLvTrainer.train_step_explicit` of github.com/amazon-science/sccl (pads to 32, three encoder passes,",
           "Adam, their DataLoader with 4 workers), run outside this repository with the patches below. *oneDNN capped to",
           "AVX2* emulates a CPU without native bf16 (`auto` then picks fp32).", "",
           "| run | CPU mode | precision | steps × batch | s / step |", "|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: r["seed"]):
        mode = "native" if r.get("isa", "native") == "native" else f"oneDNN capped to {r['isa']}"
        out.append(f"| {r['who']} | {mode} | {r.get('precision', 'fp32 (their code)')} | {r['steps']} × 64 | "
                   f"{r['seconds_per_step']:.2f} |")
    out.append("")
    for mode in sorted({r.get("isa", "native") for r in rows}):
        theirs = [r["seconds_per_step"] for r in rows if r["who"] == "authors" and r.get("isa", "native") == mode]
        for precision in sorted({r.get("precision", "").split(" ")[0] for r in rows if r["who"] == "ours"}):
            ours = [r["seconds_per_step"] for r in rows if r["who"] == "ours" and r.get("isa", "native") == mode
                    and r.get("precision", "").startswith(precision)]
            if theirs and ours:
                out.append(f"- {'native' if mode == 'native' else 'capped to ' + mode}: theirs (fp32) / ours ({precision})"
                           f" = **{statistics.mean(theirs) / statistics.mean(ours):.2f}x** "
                           f"(means of {len(theirs)} and {len(ours)} runs)")
    patches = next((r["patches"] for r in rows if r.get("patches")), [])
    if patches:
        out += ["", "Patches the authors' code needed here (applied by the driver, their files unchanged):", ""]
        out += [f"- {p}" for p in patches]
    return out + [""]


# ----- what the augmented views keep of the label signal --------------------------------------------------------------
def run_augmentation(args, store, run_id) -> None:
    """Per corpus: how far the precomputed views (``--augmentation``, default the SCCL authors' contextual ones) move
    a text in MiniLM space, and whether they cross cluster or class boundaries: the instance contrastive loss pulls
    a text and its views together, so a view that lands among another class's texts teaches the encoder to merge
    classes. Measured on the pretrained encoder (what the first steps of training see)."""
    import torch
    from sklearn.cluster import KMeans

    from hf_textcluster.training.baselines import EmbeddingKMeans
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.training.metrics import clustering_scores

    family = args.augmentation or "sccl_contextual"
    for name in args.datasets:
        dataset = load_benchmark(name, data_dir=args.data_dir, augmentation=family)
        labels = np.asarray(dataset["label"])
        k = dataset.features["label"].num_classes
        start = time.perf_counter()
        n = len(labels)  # the texts and both views in one pass (one encoder load)
        everything = EmbeddingKMeans(k, show_progress_bar=False).embed(
            [text for column in ("text", "text_aug1", "text_aug2") for text in dataset[column]])
        texts, views = everything[:n], [everything[n:2 * n], everything[2 * n:]]
        embed_seconds = time.perf_counter() - start
        originals = torch.from_numpy(texts)
        for seed in args.seeds:
            kmeans = KMeans(k, n_init=10, random_state=seed).fit(texts)
            row = {"section": "augmentation", "method": family, "dataset": name, "seed": seed, "run": run_id,
                   "num_texts": len(labels), "k": k, "embed_seconds": round(embed_seconds, 1),
                   "text_kmeans_acc": clustering_scores(labels, kmeans.labels_)["acc"]}
            cos, moved, own_first, nearest_same_class, view_acc = [], [], [], [], []
            for view in views:
                cos.append(float(np.mean(np.sum(texts * view, axis=1))))
                moved.append(float(np.mean(kmeans.predict(view) != kmeans.labels_)))
                own, same = _nearest_text(view, originals, labels)
                own_first.append(own)
                nearest_same_class.append(same)
                view_acc.append(clustering_scores(labels, KMeans(k, n_init=10, random_state=seed).fit_predict(view))["acc"])
            row.update({"cos_text_view": statistics.mean(cos), "view_changes_cluster": statistics.mean(moved),
                        "view_nearest_is_own_text": statistics.mean(own_first),
                        "view_nearest_other_same_class": statistics.mean(nearest_same_class),
                        "view_kmeans_acc": statistics.mean(view_acc)})
            # the same check for the texts themselves: the level a view should not fall below
            row["text_nearest_other_same_class"] = _nearest_text(texts, originals, labels)[1]
            put_row(store, row)
            save_store(store)
            print(f"{name:15s} seed {seed} cos {row['cos_text_view']:.3f} changes cluster {row['view_changes_cluster']:.3f} "
                  f"nearest same class view {row['view_nearest_other_same_class']:.3f} text "
                  f"{row['text_nearest_other_same_class']:.3f} view ACC {row['view_kmeans_acc']:.3f}", flush=True)


def _nearest_text(queries: np.ndarray, texts, labels: np.ndarray) -> tuple[float, float]:
    """For row i of ``queries`` (a view of text i, or text i itself): the share whose nearest text is text i, and the
    share whose nearest text other than i has text i's class (cosine; unit vectors)."""
    import torch

    own, same = [], []
    for lo in range(0, len(labels), 2048):
        sims = torch.from_numpy(queries[lo:lo + 2048]) @ texts.T
        rows = torch.arange(sims.shape[0])
        own.append((sims.argmax(1) == rows + lo).numpy())
        sims[rows, rows + lo] = -2.0
        same.append(labels[sims.argmax(1).numpy()] == labels[lo:lo + 2048])
    return float(np.concatenate(own).mean()), float(np.concatenate(same).mean())


def _render_augmentation(store: dict, rows: list[dict]) -> list[str]:
    arows = [r for r in rows if r["section"] == "augmentation"]
    if not arows:
        return []
    out = ["## What the augmented views keep", ""] + _run_header(store, arows) + [
        "", "The precomputed views (two per text) embedded with the pretrained MiniLM, as the first training steps see",
        "them. *cos* = mean cosine between a text and its view; *changes cluster* = share of views that k-means (fit on",
        "the texts) puts in another cluster than their text; *own text first* = share of views whose nearest text is",
        "their own; *nearest other: same class* = share of views (texts, for the last column) whose nearest other text",
        "has the same class; *k-means ACC* on the texts and on the views alone. Means over the two views and the seeds.",
        "", "| dataset | views | K | cos | changes cluster | own text first | nearest other: same class (view / text) "
        "| k-means ACC text / view | seeds |", "|---|---|---|---|---|---|---|---|---|"]
    from hf_textcluster.data import BENCHMARKS

    for name in BENCHMARKS:
        for family in sorted({r["method"] for r in arows if r["dataset"] == name}):
            d = [r for r in arows if (r["dataset"], r["method"]) == (name, family)]
            m = lambda key: statistics.mean(r[key] for r in d)  # noqa: E731
            out.append(f"| {name} | {family} | {d[0]['k']} | {m('cos_text_view'):.3f} | {100 * m('view_changes_cluster'):.1f}%"
                       f" | {100 * m('view_nearest_is_own_text'):.1f}% | {100 * m('view_nearest_other_same_class'):.1f}% / "
                       f"{100 * m('text_nearest_other_same_class'):.1f}% | {100 * m('text_kmeans_acc'):.1f} / "
                       f"{100 * m('view_kmeans_acc'):.1f} | {len(d)} |")
    out.append("")
    return out


# ----- how the k-means of the initialisation starts (hf_textcluster.modeling.kmeans: kmeans_init) ----------------------------
KMEANS_INIT_ENTRIES = ("k-means++", "umap", "umap groups", "umap + Lloyd", "DEC-CRL random FC_e", "DEC-CRL pca FC_e")


def run_kmeans_init(args, store, run_id) -> None:
    """Per corpus, on the pretrained MiniLM embeddings: k-means++ (the default start), ``kmeans_init="umap"`` (the
    nearest of the means of the UMAP -> k-means clusters), the UMAP -> k-means clusters themselves (the BERTopic way,
    not servable by a centroid head; the same UMAP run), Lloyd's iterations started from the umap centres, and
    k-means++ where DEC-CRL runs it: after its FC_e (L 128) at its random start and with ``latent_init="pca"``."""
    import torch
    from sklearn.cluster import KMeans

    from hf_textcluster import DECCRLModel
    from hf_textcluster.training.baselines import EmbeddingKMeans
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.modeling.kmeans import fit_kmeans
    from hf_textcluster.training.metrics import clustering_scores

    for name in args.datasets:
        dataset = load_benchmark(name, data_dir=args.data_dir)
        labels = np.asarray(dataset["label"])
        k = dataset.features["label"].num_classes
        embeddings = EmbeddingKMeans(k, show_progress_bar=False).embed(list(dataset["text"]))
        for seed in args.seeds:
            timed = {}
            for entry in ("k-means++", "umap"):
                start = time.perf_counter()
                timed[entry] = (fit_kmeans(embeddings, k, random_state=seed, init=entry), time.perf_counter() - start)
            umap = timed["umap"][0]
            lloyd = KMeans(k, init=umap.cluster_centers_, n_init=1).fit_predict(embeddings)
            partitions = {"k-means++": timed["k-means++"][0].labels_, "umap": umap.labels_,
                          "umap groups": umap.groups_, "umap + Lloyd": lloyd}
            torch.manual_seed(seed)  # the model's own FC_e, as a DEC-CRL run builds it
            deccrl = DECCRLModel.from_encoder_pretrained(None, num_clusters=k)
            for entry in ("DEC-CRL random FC_e", "DEC-CRL pca FC_e"):
                if entry.endswith("pca FC_e"):
                    deccrl.init_latent_from_pca(embeddings)
                with torch.no_grad():
                    latent = deccrl.cluster_features(torch.from_numpy(embeddings)).numpy()
                partitions[entry] = fit_kmeans(latent, k, random_state=seed).labels_
            accs = []
            for entry, predicted in partitions.items():
                scores = clustering_scores(labels, predicted)
                accs.append(f"{entry} {100 * scores['acc']:.1f}")
                row = {"section": "kmeans-init", "method": entry, "dataset": name, "seed": seed, "run": run_id,
                       "k": k, "acc": scores["acc"], "nmi": scores["nmi"]}
                if entry in timed:
                    row["seconds"] = round(timed[entry][1], 1)
                put_row(store, row)
            save_store(store)
            print(f"{name:15s} seed {seed} " + " | ".join(accs), flush=True)


def _render_kmeans_init(store: dict, rows: list[dict]) -> list[str]:
    krows = [r for r in rows if r["section"] == "kmeans-init"]
    if not krows:
        return []
    from hf_textcluster.data import BENCHMARKS

    out = ["## How the initial k-means starts (`kmeans_init`)", ""] + _run_header(store, krows) + [
        "", "ACC / NMI of the partitions every method's training starts from, on the pretrained MiniLM embeddings.",
        "*k-means++*: scikit-learn's, 10 restarts (the default). *umap*: `kmeans_init=\"umap\"` — the nearest of the",
        "means of the clusters k-means finds on a UMAP reduction (BERTopic's settings), what a centroid head serves.",
        "*umap groups*: those UMAP clusters themselves (the BERTopic way with the true K). *umap + Lloyd*: Lloyd's",
        "iterations in the original space started from the umap centres. *DEC-CRL random / pca FC_e*: k-means++ where",
        "DEC-CRL runs it, on its latent h = FC_e(embedding) (L 128), `FC_e` at its random start (the default) or",
        "`latent_init=\"pca\"`. Seconds: the k-means (+ UMAP) fit.", "",
        "| dataset | K | " + " | ".join(f"{e} ACC / NMI" for e in KMEANS_INIT_ENTRIES) + " | seconds k-means++ / umap | seeds |",
        "|---|---|" + "---|" * len(KMEANS_INIT_ENTRIES) + "---|---|"]
    for name in BENCHMARKS:
        d = [r for r in krows if r["dataset"] == name]
        if not d:
            continue
        cells = []
        for entry in KMEANS_INIT_ENTRIES:
            e = [r for r in d if r["method"] == entry]
            cells.append(f"{_mean_std([r['acc'] for r in e])} / {_mean_std([r['nmi'] for r in e])}" if e else "–")
        secs = [statistics.mean(r["seconds"] for r in d if r["method"] == m) for m in ("k-means++", "umap")]
        out.append(f"| {name} | {d[0]['k']} | " + " | ".join(cells) + f" | {secs[0]:.0f} / {secs[1]:.0f} | "
                   f"{len({r['seed'] for r in d})} |")
    return out + [""]


# ----- choosing K without labels (hf_textcluster.training.auto_k) -------------------------------------------------------------
def run_auto_k(args, store, run_id) -> None:
    """Per corpus: MiniLM embeddings (as the baselines' embeddings-kmeans), each criterion of hf_textcluster.training.auto_k
    (default range and sample), k-means (10 restarts) at the K found and at the true K; and BERTopic's default
    pipeline (seeded UMAP -> HDBSCAN) on the same embeddings, when installed (the `bench` extra)."""
    from sklearn.cluster import KMeans

    from hf_textcluster.training.auto_k import CRITERIA, compare_criteria
    from hf_textcluster.training.baselines import EmbeddingKMeans
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.training.metrics import clustering_scores

    wanted = list(CRITERIA) + ["bertopic"] if args.k_criteria == ["all"] else args.k_criteria
    unknown = sorted(set(wanted) - set(CRITERIA) - {"bertopic"})
    if unknown:
        raise SystemExit(f"error: --k-criteria: unknown {unknown}; choose from {', '.join(CRITERIA)}, bertopic, all.")
    criteria = [c for c in wanted if c != "bertopic"]
    for name in args.datasets:
        dataset = load_benchmark(name, data_dir=args.data_dir)
        texts, labels = dataset["text"], np.asarray(dataset["label"])
        k_true = dataset.features["label"].num_classes
        start = time.perf_counter()
        embeddings = EmbeddingKMeans(k_true, show_progress_bar=False).embed(texts)  # the baselines' code path
        embed_seconds = round(time.perf_counter() - start, 2)
        for seed in args.seeds:
            at_k: dict[int, dict] = {}

            def kmeans_scores(k):
                if k not in at_k:
                    at_k[k] = clustering_scores(labels, KMeans(k, n_init=10, random_state=seed).fit_predict(embeddings))
                return at_k[k]

            truth = kmeans_scores(k_true)
            common = {"section": "auto-k", "dataset": name, "seed": seed, "run": run_id, "k_true": k_true,
                      "num_texts": len(texts), "embed_seconds": embed_seconds,
                      "true_k_acc": truth["acc"], "true_k_nmi": truth["nmi"]}
            results = compare_criteria(embeddings, methods=criteria, random_state=seed) if criteria else {}
            for criterion, result in results.items():
                found = kmeans_scores(result.num_clusters)
                put_row(store, {**common, "method": criterion, "k_found": result.num_clusters,
                                "k_range": [result.k_min, result.k_max], "sample_size": result.sample_size,
                                "seconds": round(result.seconds, 2), "acc": found["acc"], "nmi": found["nmi"],
                                "scores": {str(k): round(v, 6) for k, v in sorted(result.scores.items())}})
                print(f"{name:15s} seed {seed} {criterion:18s} K {result.num_clusters:3d} (true {k_true}) "
                      f"ACC {100 * found['acc']:.1f} NMI {100 * found['nmi']:.1f} | at true K ACC {100 * truth['acc']:.1f} "
                      f"NMI {100 * truth['nmi']:.1f} | {result.seconds:.0f}s", flush=True)
            if "bertopic" in wanted:
                rows = _bertopic_rows(texts, labels, embeddings, seed, k_true)
                if rows is not None:
                    row, with_k = rows
                    put_row(store, {**common, **row})
                    put_row(store, {**common, **with_k})
                    print(f"{name:15s} seed {seed} bertopic           {row['k_found']} topics, "
                          f"{100 * row['outlier_share']:.1f}% outliers, ACC {100 * row['acc']:.1f} NMI {100 * row['nmi']:.1f} "
                          f"(non-outliers ACC {100 * row['inlier_acc']:.1f} NMI {100 * row['inlier_nmi']:.1f}) | "
                          f"{row['seconds']:.0f}s; UMAP -> k-means at the true K: ACC {100 * with_k['acc']:.1f} "
                          f"NMI {100 * with_k['nmi']:.1f}", flush=True)
            save_store(store)


def run_scale(args, store, run_id) -> None:
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
    from hf_textcluster.modeling.kmeans import DEFAULT_KMEANS_MAX_SAMPLES, fit_kmeans

    work = REPO / "runs" / "scale"
    work.mkdir(parents=True, exist_ok=True)
    done = {(r["method"], r["num_texts"]) for r in store["rows"] if r["section"] == "scale"} if args.skip_done else set()
    model_dir = work / "model"
    stackoverflow = load_benchmark("stackoverflow", data_dir=args.data_dir)["text"]
    embeddings = None
    if not (model_dir / "config.json").exists() or "kmeans" in args.parts:
        model = SCCLModel.from_encoder_pretrained(None, num_clusters=20)
        embeddings = model.embed(stackoverflow, show_progress_bar=False)
        model.initialize_clusters(embeddings=embeddings, random_state=0)
        model.save_pretrained(model_dir)
    if "predict" in args.parts:
        corpus = [t.replace("\n", " ") for name in BENCHMARKS_FOR_SCALE
                  for t in load_benchmark(name, data_dir=args.data_dir)["text"]]
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
            command = [sys.executable, "-m", "hf_textcluster.cli", "predict", "--model", str(model_dir), "--input",
                       str(source), "--output", str(output), "--overwrite"]
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
            put_row(store, {"section": "scale", "method": "predict", "dataset": f"{n} texts", "num_texts": n, "run": run_id,
                            "seconds": round(seconds, 1), "texts_per_second": round(n / seconds, 1),
                            "clustering_texts_per_second": float(rate.group(1)) if rate else None,
                            "peak_rss_mb": round(usage.ru_maxrss / 1024), "output_mb": round(output.stat().st_size / 2**20)})
            save_store(store)
            print(f"predict {n:>9,} texts: {seconds:7.1f}s, {n / seconds:6.1f} texts/s "
                  f"({rate.group(1) if rate else '?'} in the clustering pass), peak RSS "
                  f"{usage.ru_maxrss / 1024:,.0f} MB", flush=True)
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
            row = {"section": "scale", "method": "kmeans", "dataset": f"{n} texts", "num_texts": n, "run": run_id,
                   "seconds": round(seconds, 1),
                   "sample": min(n, DEFAULT_KMEANS_MAX_SAMPLES)}
            if DEFAULT_KMEANS_MAX_SAMPLES < n <= 10 * DEFAULT_KMEANS_MAX_SAMPLES:  # below, the two are the same fit
                start = time.perf_counter()
                exact = KMeans(20, n_init=10, random_state=0).fit(features)
                row["exact_seconds"] = round(time.perf_counter() - start, 1)
                from hf_textcluster.training.metrics import normalized_mutual_info

                row["agreement_nmi"] = round(normalized_mutual_info(exact.labels_, sampled.labels_), 4)
                row["inertia_ratio"] = round(float(((features - sampled.cluster_centers_[sampled.labels_]) ** 2).sum())
                                             / exact.inertia_, 4)
            put_row(store, row)
            save_store(store)
            print(f"kmeans  {n:>9,} rows: {seconds:7.1f}s (sample {row['sample']:,})"
                  + (f", exact {row['exact_seconds']}s, NMI(sampled, exact) {row['agreement_nmi']}, inertia ratio "
                     f"{row['inertia_ratio']}" if "exact_seconds" in row else ""), flush=True)


BENCHMARKS_FOR_SCALE = ("stackoverflow", "searchsnippets", "biomedical", "agnews", "googlenews_ts", "tweet")


def _render_scale(store: dict, rows: list[dict]) -> list[str]:
    if not rows:
        return []
    out = ["## Scale: 10k, 100k, 1M texts", "", *_run_header(store, rows), "",
           "*predict*: `hf-textcluster predict` streaming a .txt of N short texts (six corpora's texts shuffled, cycled) in chunks",
           "of 10,000 to a JSON-lines file, in its own process (wall time includes loading the model; peak RSS of that",
           "process; *pass texts/s*: the CLI's own rate over the clustering pass, without start-up). *k-means*: the initialisation's k-means (K 20, 10 restarts) on N MiniLM embeddings (StackOverflow's,",
           "cycled, plus a little noise): centres fitted on a seeded sample of at most 100,000 rows, then every row",
           "assigned; beside scikit-learn's exact KMeans on all rows where it was run (agreement NMI, and the sampled",
           "fit's inertia on all rows over the exact fit's). *ms / text*: wall time per text (constant = linear cost).", "",
           "| measure | texts | time (s) | ms / text | texts/s | pass texts/s | peak RSS (MB) | exact k-means (s) | NMI sampled vs exact | inertia ratio |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["method"] != "predict", r["num_texts"])):
        out.append(f"| {r['method']} | {r['num_texts']:,} | {r['seconds']} | {1000 * r['seconds'] / r['num_texts']:.2f}"
                   f" | {r.get('texts_per_second', '–')} | {r.get('clustering_texts_per_second') or '–'}"
                   f" | {r.get('peak_rss_mb', '–')} | {r.get('exact_seconds', '–')} | {r.get('agreement_nmi', '–')}"
                   f" | {r.get('inertia_ratio', '–')} |")
    out += [f"- {r['method']}, {r['num_texts']:,} texts: {r['note']}" for r in rows if r.get("note")]
    return out + [""]


def _bertopic_umap(seed: int):
    """BERTopic's default UMAP (15 neighbours -> 5 dims, cosine), seeded."""
    from umap import UMAP

    return UMAP(n_neighbors=15, n_components=5, min_dist=0.0, metric="cosine", random_state=seed)


def _bertopic_rows(texts, labels, embeddings, seed, k_true) -> list[dict] | None:
    """BERTopic with its defaults (UMAP 15 neighbours -> 5 dims, cosine; HDBSCAN min_cluster_size 10), UMAP seeded,
    on the given embeddings: its topics as clusters, topic -1 (outliers) as one more cluster or left out; and the
    same UMAP reduction clustered by k-means with the true K."""
    try:
        from bertopic import BERTopic
    except ImportError as err:
        print(f"bertopic skipped: {err} (pip install -e '.[bench]')", flush=True)
        return None
    from hf_textcluster.training.metrics import clustering_scores

    from sklearn.cluster import KMeans

    start = time.perf_counter()
    umap_model = _bertopic_umap(seed)
    topics, _ = BERTopic(umap_model=umap_model).fit_transform(list(texts), embeddings=embeddings)
    seconds = time.perf_counter() - start
    topics = np.asarray(topics)
    inliers = topics != -1
    everything = clustering_scores(labels, topics)
    kept = clustering_scores(labels[inliers], topics[inliers]) if inliers.any() else {"acc": 0.0, "nmi": 0.0}
    # the BERTopic way with the true K: the same UMAP reduction, then k-means (BERTopic's `hdbscan_model=KMeans(K)`)
    start = time.perf_counter()
    reduced = KMeans(k_true, n_init=10, random_state=seed).fit_predict(umap_model.embedding_)
    with_k = clustering_scores(labels, reduced)
    return [{"method": "bertopic", "k_found": int(len(set(topics[inliers].tolist()))),
             "outlier_share": float(1 - inliers.mean()), "seconds": round(seconds, 2),
             "acc": everything["acc"], "nmi": everything["nmi"], "inlier_acc": kept["acc"], "inlier_nmi": kept["nmi"]},
            {"method": "bertopic-kmeans", "k_found": k_true, "seconds": round(time.perf_counter() - start, 2),
             "acc": with_k["acc"], "nmi": with_k["nmi"]}]


def _render_auto_k(store: dict, rows: list[dict]) -> list[str]:
    """The K each criterion found per corpus, k-means at that K vs at the true K, and one line per criterion."""
    if not rows:
        return []
    from hf_textcluster.training.auto_k import CRITERIA, DEFAULT_CRITERION
    from hf_textcluster.data import BENCHMARKS

    order = {m: i for i, m in enumerate([*CRITERIA, "bertopic", "bertopic-kmeans"])}
    names_of = {"bertopic": "BERTopic default (UMAP -> HDBSCAN)", "bertopic-kmeans": "BERTopic, true K (UMAP -> k-means)"}
    label = lambda m: names_of.get(m, f"`{m}`")  # noqa: E731
    out = ["## Choosing K without labels", "", *_run_header(store, rows), "",
           "MiniLM embeddings of every text (as in the baselines). Each criterion of `hf_textcluster.training.auto_k`",
           "(`--num-clusters auto`) searches K in its default range, 2..min(200, 3√N), on a seeded sample of at most",
           "4,000 texts; then k-means (10 restarts, seeded) on all embeddings at the K found and at the true K (the",
           "number of classes, which the criteria never see). BERTopic: its default pipeline (UMAP, seeded -> HDBSCAN)",
           "on the same embeddings; its topics are its clusters; ACC / NMI with the outliers (topic -1) as one more",
           "cluster, and on the non-outliers only; and the same UMAP reduction clustered by k-means at the true K (the",
           "BERTopic way when K is known). ACC / NMI in %, mean over seeds; K found per seed.", "",
           "| dataset | N | true K | criterion | K found | ACC at K found | NMI | ACC at true K | NMI | outliers "
           "| non-outliers ACC / NMI | search (s) | seeds |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    names = [n for n in BENCHMARKS if any(r["dataset"] == n for r in rows)]
    names += sorted({r["dataset"] for r in rows} - set(names))
    for name in names:
        for method in sorted({r["method"] for r in rows if r["dataset"] == name}, key=lambda m: (order.get(m, 99), m)):
            drows = sorted([r for r in rows if r["dataset"] == name and r["method"] == method], key=lambda r: r["seed"])
            found = ", ".join(str(k) for k in dict.fromkeys(r["k_found"] for r in drows))
            bert = method == "bertopic"
            outliers = f"{100 * statistics.mean(r['outlier_share'] for r in drows):.1f}%" if bert else "–"
            inliers = (f"{_mean_std([r['inlier_acc'] for r in drows])} / {_mean_std([r['inlier_nmi'] for r in drows])}"
                       if bert else "–")
            out.append(f"| {name} | {drows[0]['num_texts']:,} | {drows[0]['k_true']} | {label(method)} | {found}"
                       f" | {_mean_std([r['acc'] for r in drows])} | {_mean_std([r['nmi'] for r in drows])}"
                       f" | {_mean_std([r['true_k_acc'] for r in drows])} | {_mean_std([r['true_k_nmi'] for r in drows])}"
                       f" | {outliers} | {inliers} | {statistics.mean(r['seconds'] for r in drows):.0f} | {len(drows)} |")
    out += ["", "Per criterion, over the corpora above (each corpus and seed counts once): *log2 error* = the absolute",
            "value of log2(K found / true K) (1.0 = off by a factor of 2), median and mean; *within 25%* = corpora-seeds",
            "with K found within ±25% of the true K; *Δ ACC / Δ NMI* = k-means at K found minus at the true K, in points.",
            "", "| criterion | median log2 error | mean log2 error | within 25% | Δ ACC | Δ NMI | mean search (s) |",
            "|---|---|---|---|---|---|---|"]
    errors = {}
    for method in sorted({r["method"] for r in rows} - {"bertopic-kmeans"}, key=lambda m: (order.get(m, 99), m)):
        mrows = [r for r in rows if r["method"] == method]
        err = [abs(math.log2(max(r["k_found"], 1) / r["k_true"])) for r in mrows]
        errors[method] = statistics.median(err)
        within = sum(abs(r["k_found"] - r["k_true"]) <= 0.25 * r["k_true"] for r in mrows)
        d_acc = 100 * statistics.mean(r["acc"] - r["true_k_acc"] for r in mrows)
        d_nmi = 100 * statistics.mean(r["nmi"] - r["true_k_nmi"] for r in mrows)
        out.append(f"| {label(method)} | {statistics.median(err):.2f} | {statistics.mean(err):.2f} | {within} of {len(mrows)}"
                   f" | {d_acc + 0.0:+.1f} | {d_nmi + 0.0:+.1f} | {statistics.mean(r['seconds'] for r in mrows):.0f} |")
    measured = [m for m in errors if m in CRITERIA]
    if measured:
        best = min(measured, key=lambda m: (errors[m], m != DEFAULT_CRITERION, order[m]))  # ties: the default
        out += ["", f"Lowest median log2 error among the criteria: `{best}`; the default of `--num-clusters auto` is "
                    f"`{DEFAULT_CRITERION}` (`hf_textcluster.training.auto_k.DEFAULT_CRITERION`)."]
    return out + [""]


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


def _cpu_kind(machine: str) -> str:
    """The CPU kind of a machine description (`hf_textcluster.modeling.precision.cpu_capability`'s words): fp32 without native
    bf16, bf16 with AMX (a Xeon), bf16 on AVX-512-BF16 alone (a Zen 4 EPYC)."""
    if not machine:
        return "?"
    return "AVX2" if "no native bf16" in machine else "bf16 AMX" if "AMX" in machine else "bf16 AVX512"


def _train_time(store: dict, rows: list[dict]) -> str:
    """Mean train seconds per CPU kind: a mean over a bf16 Xeon and an AVX2 EPYC would mean nothing, and bf16 with
    AMX (a Xeon) runs faster than bf16 on AVX-512-BF16 alone (a Zen 4 EPYC). A run whose time another job inflated
    (its note says so) counts only when its kind has no other (then marked †)."""
    by_kind: dict[str, list[dict]] = {}
    for r in rows:
        machine = store.get("runs", {}).get(r.get("run"), {}).get("machine", "")
        by_kind.setdefault(_cpu_kind(machine), []).append(r)
    parts = []
    for kind, krows in sorted(by_kind.items()):
        clean = [r for r in krows if "inflated" not in r.get("note", "")]
        parts.append(f"{statistics.mean(r['train_seconds'] for r in clean or krows):.0f}{'' if clean else '†'} ({kind})")
    return " / ".join(parts)


TRAIN_TIME_LEGEND = ("*train (s)*: mean per CPU kind (bf16 AMX = native bf16 with AMX, a Xeon; bf16 AVX512 = native "
                     "bf16 without AMX, a Zen 4 EPYC; AVX2 = fp32, no native bf16); a run that shared "
                     "the CPU with another job (its note says so) is left out unless all of its kind did (†).")


def _run_header(store: dict, rows: list[dict]) -> list[str]:
    lines = []
    for run_id in sorted({r["run"] for r in rows}):
        run = store["runs"][run_id]
        versions = ", ".join(f"{k} {v}" for k, v in sorted(run["versions"].items()))
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
        base = [r for r in _default_baselines(rows) if r["method"] == "embeddings-kmeans" and r["dataset"] == name]
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


def _render_head_or_kmeans(rows: list[dict]) -> list[str]:
    """Which partition to serve: each method's head against k-means on its own trained embeddings (what
    ``hf-textcluster recluster`` serves), per corpus, from the main-configuration rows."""
    from hf_textcluster.data import BENCHMARKS

    method_rows = [r for r in rows if r["section"] == "method" and not r.get("variant") and "kmeans_acc" in r]
    if not method_rows:
        return []
    out = ["## Serve the head or k-means after?", "",
           "The head's ACC / NMI against k-means on the same trained embeddings (means over seeds; Δ = k-means after −",
           "head). `hf-textcluster recluster --model DIR --input TRAINING_TEXTS` (or `model.initialize_clusters(texts)`",
           "then `calibrate`) makes a trained model serve the latter: exactly for the methods whose head works on the",
           "pooled embedding (SCCL, DEC-MLM, ClusterBERT) and for AECL (its re-clustered model serves k-means centres",
           "on the embeddings instead of its clustering network). DEC-CRL re-clusters in its latent space FC_e:",
           "*k-means in the head's space* is that partition (for AECL: k-means on its projector's output, shown for",
           "comparison; not what it serves). Models trained before that column existed were re-scored by",
           "`bench.py rescore` (seeds without a kept model show –).", "",
           "| method | dataset | head ACC | k-means after ACC | Δ ACC | Δ NMI | k-means in the head's space ACC | NMI "
           "| seeds |", "|---|---|---|---|---|---|---|---|---|"]
    deltas = []
    for method in sorted({r["method"] for r in method_rows}, key=_method_order):
        for name in BENCHMARKS:
            d = [r for r in method_rows if r["method"] == method and r["dataset"] == name]
            if not d:
                continue
            acc, after = statistics.mean(r["acc"] for r in d), statistics.mean(r["kmeans_acc"] for r in d)
            nmi = statistics.mean(r["kmeans_nmi"] - r["nmi"] for r in d)
            deltas.append((after - acc, nmi))
            latent = [r for r in d if "latent_kmeans_acc" in r]
            own_space = (f"{_mean_std([r['latent_kmeans_acc'] for r in latent])} ({len(latent)}) | "
                         f"{_mean_std([r['latent_kmeans_nmi'] for r in latent])}" if latent else "– | –")
            out.append(f"| {_display_name(method)} | {name} | {100 * acc:.1f} | {100 * after:.1f} | "
                       f"{100 * (after - acc):+.1f} | {100 * nmi:+.1f} | {own_space} | {len(d)} |")
    better = sum(a > 0 for a, _ in deltas)
    out += ["", f"k-means after has the higher ACC in {better} of {len(deltas)} method × corpus cells (higher NMI in "
                f"{sum(n > 0 for _, n in deltas)}); median Δ ACC {100 * statistics.median(a for a, _ in deltas):+.1f}, "
                f"largest loss {100 * min(a for a, _ in deltas):+.1f}, largest gain {100 * max(a for a, _ in deltas):+.1f}.",
            ""]
    return out


class _Entry(NamedTuple):
    """One leaderboard line: ACC / NMI values over seeds; the "after" / "before" lists are empty for baselines."""
    label: str
    acc: list
    nmi: list
    seeds: int
    kind: str  # "baseline" or "method"
    after_acc: list = []
    after_nmi: list = []
    before_acc: list = []
    umap_acc: list = []
    umap_nmi: list = []


def _render_leaderboard(rows: list[dict]) -> tuple[list[str], list[_Verdict]]:
    """Per corpus: the baselines (TF-IDF / MiniLM + k-means, the BERTopic way with the true K and its HDBSCAN default)
    and every method's main configuration (head, k-means after, k-means before), the best ACC marked; then, per corpus,
    our best against the baselines and against the best number the five papers report."""
    from hf_textcluster.data import BENCHMARKS

    method_rows = [r for r in rows if r["section"] == "method" and not r.get("variant")]
    if not method_rows:
        return [], []
    out = ["## Leaderboard", "",
           "Means over seeds of the sections above; each method in its main configuration (no ablations), trained on",
           "this CPU with its `cpu` recipe (steps × batch in the method sections). For each corpus the best ACC is in",
           "bold. *head* = the trained cluster head; *k-means after* = k-means on the trained embeddings; *before* =",
           "k-means on the same run's initial embeddings. BERTopic rows come from the auto-K measurement (same MiniLM",
           "embeddings): UMAP -> k-means at the true K, and its default UMAP -> HDBSCAN (its number of topics and outlier",
           "share in brackets; outliers counted as one more cluster). *UMAP k-means after* = the BERTopic way on the",
           "trained embeddings, as `hf-textcluster recluster --kmeans-init umap` serves it (the nearest of the means of",
           "the clusters k-means finds on their UMAP reduction); measured on the runs made or kept since it exists",
           "(how many in brackets when fewer than the seeds). DEC-CRL re-clusters in its latent space instead, so its",
           "two \"after\" columns are not what its `recluster` serves (see the next section).", "",
           "| dataset | entry | ACC | NMI | k-means after ACC | NMI | UMAP k-means after ACC | NMI | k-means before ACC "
           "| seeds |", "|---|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for name in BENCHMARKS:
        mrows = [r for r in method_rows if r["dataset"] == name]
        if not mrows:
            continue
        entries = []

        def baseline(method):
            return [r for r in _default_baselines(rows) if r["method"] == method and r["dataset"] == name]

        for method, label in (("tfidf-kmeans", "TF-IDF + k-means"), ("embeddings-kmeans", "MiniLM + k-means")):
            b = baseline(method)
            if b:
                entries.append(_Entry(label, [r["acc"] for r in b], [r["nmi"] for r in b], len(b), "baseline"))
        for method, label in (("bertopic-kmeans", "BERTopic way, true K (UMAP -> k-means)"),
                              ("bertopic", "BERTopic default (UMAP -> HDBSCAN)")):
            b = [r for r in rows if r["section"] == "auto-k" and r["method"] == method and r["dataset"] == name]
            if b:
                if method == "bertopic":
                    label += f" [{b[0]['k_found']} topics, {100 * statistics.mean(r['outlier_share'] for r in b):.0f}% outliers]"
                entries.append(_Entry(label, [r["acc"] for r in b], [r["nmi"] for r in b], len(b), "baseline"))
        for method in sorted({r["method"] for r in mrows}, key=_method_order):
            d = [r for r in mrows if r["method"] == method]
            entries.append(_Entry(_display_name(method), [r["acc"] for r in d], [r["nmi"] for r in d], len(d), "method",
                                  [r["kmeans_acc"] for r in d], [r["kmeans_nmi"] for r in d],
                                  [r["init_kmeans_acc"] for r in d], *_umap_scores(d)))
        mean = lambda values: statistics.mean(values) if values else -1.0  # noqa: E731
        best = max(max(mean(e.acc), mean(e.after_acc), mean(e.umap_acc)) for e in entries)

        def cell(values):
            if not values:
                return "–"
            text = _mean_std(values)
            return f"**{text}**" if abs(mean(values) - best) < 1e-12 else text

        for e in entries:
            out.append(f"| {name} | {e.label} | {cell(e.acc)} | {_mean_std(e.nmi)} | {cell(e.after_acc)}"
                       f" | {_mean_std(e.after_nmi) if e.after_nmi else '–'}"
                       f" | {_umap_cells(e.umap_acc, e.umap_nmi, e.seeds, cell)}"
                       f" | {_mean_std(e.before_acc) if e.before_acc else '–'} | {e.seeds} |")
        ours = max((value, f"{e.label}{how}") for e in entries if e.kind == "method"
                   for value, how in ((mean(e.acc), ""), (mean(e.after_acc), ", k-means after"),
                                      (mean(e.umap_acc), ", UMAP k-means after")))
        baselines = [(mean(e.acc), e.label) for e in entries if e.kind == "baseline"]
        strongest = max(baselines) if baselines else None
        papers = [(spec.paper_results[name][0], spec.display_name) for spec in _methods().values()
                  if name in spec.paper_results]
        papers += [(acc[name], f"{other}, SCCL's Table 1") for other, acc in PAPER_OTHER_METHODS.items() if name in acc]
        paper = max(papers) if papers else None
        # The same over every configuration measured with the default encoder (ablations and earlier recipes too):
        # what a user could train today with the variant's --config, chosen with labels like "our best" is.
        configs = {}
        for r in rows:
            if (r["section"] == "method" and r["dataset"] == name and not r.get("encoder")
                    and "held-out" not in (r.get("variant") or "")):
                configs.setdefault((r["method"], r.get("variant") or ""), []).append(r)
        any_best = max((mean([r[key] for r in d if key in r]), len([r for r in d if key in r]),
                        f"{_display_name(method)}{f' {variant}' if variant else ''}{how}")
                       for (method, variant), d in configs.items()
                       for key, how in (("acc", ""), ("kmeans_acc", ", k-means after"),
                                        ("umap_kmeans_acc", ", UMAP k-means after")))
        verdicts.append(_Verdict(name, 100 * ours[0], ours[1], strongest and 100 * strongest[0],
                                 strongest and strongest[1].split(" [")[0], paper and paper[0], paper and paper[1],
                                 100 * any_best[0], f"{any_best[2]}; {any_best[1]} seed{'s' * (any_best[1] > 1)}"))
    out += ["", "Per corpus: our best ACC (head, k-means after or UMAP k-means after, any method; servable with `recluster`",
            "except DEC-CRL's \"after\" partitions)",
            "against the strongest baseline above and against the best ACC the five papers report for the corpus (their",
            "encoders, GPUs and schedules): their own methods' numbers and the rows of other methods in their tables",
            "that top them (HAC-SD and Self-Train in the SCCL paper's Table 1; the papers disagree on such rows: the",
            "AECL paper reports Self-Train at 40.1 on Biomedical where SCCL's reports 54.8). The last column takes every",
            "configuration measured with MiniLM (ablations and earlier recipes too; each trainable with the `--config` of",
            "its section's command), when one beats our best: a choice made with labels, so optimistic on one seed.", "",
            *_verdict_table(verdicts, "dataset"), ""]
    return out, verdicts


class _Verdict(NamedTuple):
    """One corpus of the leaderboard in short: our best ACC against the strongest baseline and the best reported."""
    dataset: str
    ours: float
    ours_how: str  # "<method>[, k-means after | , UMAP k-means after]"
    baseline: float | None
    baseline_label: str | None
    paper: float | None
    paper_label: str | None
    any_config: float  # the best over every configuration measured, variants included
    any_config_how: str


def _verdict_table(verdicts: list[_Verdict], first_column: str, names: dict | None = None) -> list[str]:
    """The leaderboard in short as markdown lines; `names` maps corpus keys to display names (README)."""
    lines = [f"| {first_column} | our best ACC | strongest baseline ACC | Δ | best reported ACC | Δ "
             "| best of any configuration measured |", "|---|---|---|---|---|---|---|"]
    for v in verdicts:
        lines.append(
            f"| {(names or {}).get(v.dataset, v.dataset)} | {v.ours:.1f} ({v.ours_how}) | "
            + (f"{v.baseline:.1f} ({v.baseline_label}) | {v.ours - v.baseline:+.1f} | " if v.baseline else "– | – | ")
            + (f"{v.paper:.1f} ({v.paper_label}) | {v.ours - v.paper:+.1f} | " if v.paper else "– | – | ")
            + (f"{v.any_config:.1f} ({v.any_config_how}) |" if v.any_config > v.ours + 1e-9 else "the same |"))
    return lines


def _default_baselines(rows: list[dict]) -> list[dict]:
    """The baseline rows made with the default encoder (another encoder's are its variant, in their own section)."""
    return [r for r in rows if r["section"] == "baselines" and not r.get("variant")]


def _render_encoders(store: dict, rows: list[dict]) -> list[str]:
    """A stronger encoder beside the default: its embeddings + k-means and the methods trained with it, next to the
    same entries with MiniLM (means over seeds; methods in their main configuration)."""
    from hf_textcluster.data import BENCHMARKS

    encoders = sorted({r["variant"] for r in rows if r["section"] == "baselines" and r.get("variant")}
                      | {r["variant"] for r in rows if r["section"] == "method" and r.get("encoder")})
    if not encoders:
        return []
    base = [r for r in rows if r["section"] == "baselines" and r["method"] in ("embeddings-kmeans", "bertopic-kmeans")]
    base += [{**r, "section": "baselines"} for r in rows  # MiniLM's BERTopic way comes from the auto-k section
             if r["section"] == "auto-k" and r["method"] == "bertopic-kmeans" and not r.get("variant")]
    methods = [r for r in rows if r["section"] == "method" and r.get("variant", "") in ("", *encoders)]
    out = ["## Stronger encoders", ""] + _run_header(store, [r for r in base + methods if r.get("variant")]) + [
        "", "The same entries with the default MiniLM and with another encoder (its short name in the encoder column);",
        "`--encoder` of `training/bench.py`. Methods run their `cpu` recipe unchanged (same steps × batch); their time",
        "column shows what the bigger encoder costs on this CPU.", *textwrap.wrap(TRAIN_TIME_LEGEND, 110), "",
        "*BERTopic way* = UMAP -> k-means at the true K on the untrained embeddings; *UMAP k-means after* = the same on",
        "the trained ones (`recluster --kmeans-init umap`; how many seeds in brackets when fewer).", "",
        "| dataset | entry | encoder | ACC | NMI | k-means after ACC | NMI | UMAP k-means after ACC | NMI | train (s) "
        "| seeds |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in BENCHMARKS:
        if not any(r["dataset"] == name and r.get("variant") in encoders for r in base + methods):
            continue
        for method, label in (("embeddings-kmeans", "embeddings + k-means"), ("bertopic-kmeans", "BERTopic way, true K")):
            for encoder in ("", *encoders):
                b = [r for r in base if (r["dataset"], r["method"], r.get("variant", "")) == (name, method, encoder)]
                if b:
                    out.append(f"| {name} | {label} | {encoder or 'all-MiniLM-L6-v2'} | {_mean_std([r['acc'] for r in b])}"
                               f" | {_mean_std([r['nmi'] for r in b])} | – | – | – | – | – | {len(b)} |")
        with_encoder = {r["method"] for r in methods if r["dataset"] == name and r.get("variant")}
        for method in sorted(with_encoder, key=_method_order):
            for encoder in ("", *encoders):
                d = [r for r in methods if (r["dataset"], r["method"], r.get("variant", "")) == (name, method, encoder)]
                if d:
                    out.append(f"| {name} | {_display_name(method)} | {encoder or 'all-MiniLM-L6-v2'}"
                               f" | {_mean_std([r['acc'] for r in d])} | {_mean_std([r['nmi'] for r in d])}"
                               f" | {_mean_std([r['kmeans_acc'] for r in d])} | {_mean_std([r['kmeans_nmi'] for r in d])}"
                               f" | {_umap_cells(*_umap_scores(d), len(d))} | {_train_time(store, d)} | {len(d)} |")
    out.append("")
    return out


def _umap_scores(rows: list[dict]) -> tuple[list, list]:
    """UMAP k-means after ACC and NMI of the rows that have them (runs made or rescored since the metric exists)."""
    have = [r for r in rows if "umap_kmeans_acc" in r]
    return [r["umap_kmeans_acc"] for r in have], [r["umap_kmeans_nmi"] for r in have]


def _umap_cells(acc: list, nmi: list, seeds: int, acc_cell=_mean_std) -> str:
    """The UMAP k-means after ACC | NMI cells: how many of the seeds have it in brackets when not all do."""
    if not acc:
        return "– | –"
    return f"{acc_cell(acc)}{f' ({len(acc)})' if len(acc) < seeds else ''} | {_mean_std(nmi)}"


def _by_method_and_dataset(rows: list[dict]):
    """(display name with variant, dataset, rows) per method, variant and dataset, in a stable order."""
    for key in sorted({(r["method"], r.get("variant", ""), r["dataset"]) for r in rows}):
        name = _display_name(key[0]) + (f" ({key[1]})" if key[1] else "")
        yield name, key[2], [r for r in rows if (r["method"], r.get("variant", ""), r["dataset"]) == key]


def _render_serving(rows: list[dict]) -> list[str]:
    """Served (reference set) vs. the authors' batch-dependent prediction, measured on the same trained models."""
    served = [r for r in rows if r["section"] == "method" and "serving_batch_acc" in r]
    if not served:
        return []
    out = ["## Serving without the batch (AECL)", "",
           "The same trained models, predicted three ways: *reference* (served: each text attends to itself and the",
           "reference set stored with the checkpoint; a text's cluster never depends on its companions), *self* (to",
           "itself only) and *batch* (to the other texts of random batches of the training batch size: the authors'",
           "evaluation, batch-dependent). ACC / NMI in %, mean ± std over seeds.", "",
           "| method | dataset | reference ACC | NMI | self ACC | NMI | batch ACC | NMI | ACC reference − batch | seeds |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name, dataset, drows in _by_method_and_dataset(served):
        diff = [r["serving_reference_acc"] - r["serving_batch_acc"] for r in drows]
        out.append(f"| {name} | {dataset} | " + " | ".join(
            _mean_std([r[f"serving_{m}_{k}"] for r in drows]) for m in ("reference", "self", "batch") for k in ("acc", "nmi"))
            + f" | {_mean_std(diff)} | {len(drows)} |")
    return out + [""]


def _render_stages(rows: list[dict]) -> list[str]:
    """Scores after each training stage (the ClusterBERT paper's Figure 3), mean over seeds."""
    staged = [r for r in rows if r["section"] == "method" and r.get("stages")]
    if not staged:
        return []
    from hf_textcluster.models.clusterbert.trainer_clusterbert import STAGE_NAMES

    out = ["## After each stage (the ClusterBERT paper's Figure 3)", "",
           "k-means (seeded) on the embeddings of all training texts after each stage, the head's argmax from stage 2 on,",
           "and the silhouette index of the k-means clusters (Euclidean, a seeded sample of 3,000 texts). Stage 0 is the",
           "pretrained encoder. ACC / NMI in %, mean ± std over seeds.", "",
           "| method | dataset | stage | step | k-means ACC | NMI | head ACC | NMI | silhouette | seeds |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name, dataset, drows in _by_method_and_dataset(staged):
        for stage in sorted({m["stage"] for r in drows for m in r["stages"]}):
            entries = [m for r in drows for m in r["stages"] if m["stage"] == stage]
            cell = lambda k: _mean_std([m[k] for m in entries]) if all(k in m for m in entries) else "–"  # noqa: E731
            sil = statistics.mean(m["silhouette"] for m in entries)
            out.append(f"| {name} | {dataset} | {stage} {STAGE_NAMES[stage]} | {entries[0]['step']} | {cell('kmeans_acc')}"
                       f" | {cell('kmeans_nmi')} | {cell('head_acc')} | {cell('head_nmi')} | {sil:.3f} | {len(entries)} |")
    return out + [""]


TABLE4_CLUSTERS = ("osx", "excel", "oracle")  # the StackOverflow clusters of the DEC-CRL paper's Table 4


def _render_topics(rows: list[dict]) -> list[str]:
    """The DEC-CRL paper's Table 4: the top four words of learned topics of the StackOverflow clusters whose texts are
    mostly 'osx', 'excel' and 'oracle' (seed 0 of the plain configuration first, else the first run with topics)."""
    candidates = [r for r in rows if r["section"] == "method" and r.get("topics") and r["dataset"] == "stackoverflow"]
    if not candidates:
        return []
    row = sorted(candidates, key=lambda r: (r.get("variant", "") != "", r.get("seed") or 0))[0]
    clusters = row["topics"]
    variant = f" ({row['variant']})" if row.get("variant") else ""
    out = [f"## {_display_name(row['method'])} topics (the paper's Table 4)", "",
           f"StackOverflow, {_display_name(row['method'])}{variant}, seed {row['seed']}: each cluster's topics as the four "
           "most probable words of β_k^t (`model.cluster_topics(top_n=4)`). A cluster is named by the class most of its",
           "training texts belong to (labels are used for this naming only); the paper shows 'osx', 'excel', 'oracle'.", ""]
    num_topics = max(len(c["topics"]) for c in clusters.values())
    out += ["| cluster (majority class, texts) | " + " | ".join(f"topic {t + 1}" for t in range(num_topics)) + " |",
            "|---|" + "---|" * num_topics]
    chosen = [(k, c) for name in TABLE4_CLUSTERS for k, c in sorted(clusters.items(), key=lambda kc: int(kc[0]))
              if c["majority_class"] == name]
    for k, c in chosen:
        out.append(f"| {k} ({c['majority_class']}, {c['size']:,}) | " + " | ".join(", ".join(t) for t in c["topics"]) + " |")
    missing = [name for name in TABLE4_CLUSTERS if name not in {c["majority_class"] for c in clusters.values()}]
    if missing:
        out += ["", f"No cluster has a majority of {', '.join(repr(m) for m in missing)} texts in this run."]
    out += ["", "All clusters (first topic only):", "",
            "| cluster | majority class | texts | topic 1 |", "|---|---|---|---|"]
    out += [f"| {k} | {c['majority_class']} | {c['size']:,} | {', '.join(c['topics'][0])} |"
            for k, c in sorted(clusters.items(), key=lambda kc: int(kc[0]))]
    return out + [""]


def write_rendered(store: dict) -> None:
    """results.md from the store, and README's leaderboard-in-short table when the store is the repository's own."""
    RESULTS_MD.write_text(render(store))
    if RESULTS_JSON.resolve() == (REPO / "docs" / "results.json").resolve() and README_MD.exists():
        README_MD.write_text(readme_with_verdicts(README_MD.read_text(), _render_leaderboard(store["rows"])[1]))


def readme_with_verdicts(text: str, verdicts: list[_Verdict]) -> str:
    """`text` with the lines between README_MARKERS replaced by the verdict table (unchanged without markers)."""
    start, end = README_MARKERS
    if start not in text or end not in text or not verdicts:
        return text
    head, rest = text.split(start, 1)
    table = "\n".join(_verdict_table(verdicts, "corpus", README_CORPUS_NAMES))
    return f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}"


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
    baseline_rows = _default_baselines(rows)
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
            notes = sorted({r["note"] for r in vrows if r.get("note", "").startswith("trained on")})
            if notes:  # --held-out
                out += ["Trained on the paper's training split and scored on its held-out test split (sizes from the",
                        "paper; which texts is not published: a stratified split of ours, the same for every seed): "
                        + "; ".join(notes) + ". *k-means before* = MiniLM+k-means on the held-out texts.", ""]
            out += ["*k-means before* = k-means (seeded) on the same encoder's embeddings with the method's pooling, before",
                    "training (the centroid initialisation, same run). *head* = argmax of the trained cluster head. *k-means",
                    "after* = k-means on the trained embeddings (the protocol of the SCCL paper's headline numbers). *purity*",
                    "is the head's (DEC-MLM's metric).", *textwrap.wrap(TRAIN_TIME_LEGEND, 110), ""]
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
                    f" | {drows[0]['steps']} × {drows[0]['batch_size']} | {_train_time(store, drows)} | {len(drows)} |"
                )
            out.append("")
            other_notes = [(r["dataset"], r.get("seed"), r["note"]) for r in vrows
                           if r.get("note") and not r["note"].startswith(("trained on", "rows from"))]
            if other_notes:
                out += [f"- {name}, seed {seed}: {note}" for name, seed, note in sorted(other_notes)] + [""]

    out += _render_topics(rows)
    out += _render_stages(rows)
    out += _render_serving(rows)
    out += _summary(rows)
    out += _render_leaderboard(rows)[0]
    out += _render_head_or_kmeans(rows)
    out += _render_encoders(store, rows)
    out += _render_augmentation(store, rows)
    out += _render_kmeans_init(store, rows)
    out += _render_authors_sccl(store, [r for r in rows if r["section"] == "authors-sccl"])
    out += _render_auto_k(store, [r for r in rows if r["section"] == "auto-k"])
    out += _render_scale(store, [r for r in rows if r["section"] == "scale"])

    speed_rows = [r for r in rows if r["section"] == "speed"]
    if speed_rows:
        out += ["## Speed (ratios measured side by side in one process)", "",
                "The machine line names the CPU and its vector capability. *oneDNN capped to AVX2*: the same CPU run with",
                "`ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2`, which emulates a CPU without native bf16 (bf16 becomes",
                "as slow as on an AVX2-only EPYC); `auto` then chooses fp32.", ""]
        for variant in sorted({r.get("variant", "") for r in speed_rows}):
            vrows = sorted([r for r in speed_rows if r.get("variant", "") == variant], key=lambda r: r["seed"])
            out += [f"### {variant or 'Native, AVX512 + AVX512-BF16 + AMX'}", ""] + _run_header(store, vrows) + [""]
            out += ["| measure | value | detail |", "|---|---|---|"]
            out += [f"| {r['measure']} | {r['value']} | {r['detail']} |" for r in vrows]
            out.append("")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    from hf_textcluster.data import BENCHMARKS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("section", choices=["baselines", *_methods(), "speed", "authors-sccl", "auto-k", "scale", "augmentation", "kmeans-init",
                                            "rescore", "render"])
    parser.add_argument("--from", dest="source", help="authors-sccl: the JSON lines of the side-by-side runs.")
    parser.add_argument("--datasets", nargs="+", default=["all"])
    parser.add_argument("--methods", nargs="+", default=None, help="rescore: only these methods' runs (default: all).")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--data-dir", default=os.environ.get("HF_TEXTCLUSTER_DATA_DIR") or str(REPO.parent / "shared" / "data"))
    parser.add_argument("--recipe", default="cpu")
    parser.add_argument("--variant", default="", help="A label for this configuration in the tables.")
    parser.add_argument("--encoder", default=None,
                        help="baselines / methods: a hub id or path instead of the default MiniLM (e.g. "
                             "sentence-transformers/all-mpnet-base-v2, pip-shipped with the mpnet-encoder extra); "
                             "its short name becomes the variant.")
    parser.add_argument("--augmentation", default=None)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--training", action="append", default=[], metavar="KEY=VALUE",
                        help="A TrainingArguments override (JSON value), e.g. max_grad_norm=0.")
    parser.add_argument("--held-out", action="store_true",
                        help="Train on the paper's train split, score on its held-out test split (sizes: the registry).")
    parser.add_argument("--skip-done", action="store_true",
                        help="Skip (dataset, seed) runs of this method and variant already in results.json (resume).")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="Model config override (JSON value), e.g. mlm_loss_weight=0 for DEC-MLM's ablation.")
    parser.add_argument("--speed-repeats", type=int, default=6)
    parser.add_argument("--pipeline-repeats", type=int, default=2)
    parser.add_argument("--parts", nargs="+", default=None,
                        choices=["steps", "pipeline", "inference", "kmeans", "predict"],
                        help="speed: steps, pipeline, inference, kmeans (default: all four); scale: predict, kmeans.")
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000, 1_000_000],
                        help="scale: numbers of texts.")
    parser.add_argument("--k-criteria", nargs="+", default=["all"], metavar="NAME",
                        help="auto-k: the criteria of hf_textcluster.training.auto_k to run, and/or bertopic (default: all).")
    args = parser.parse_args(argv)
    args.datasets = list(BENCHMARKS) if args.datasets == ["all"] else args.datasets
    store = load_store()
    if args.section == "render":
        write_rendered(store)
        return 0
    run_id = f"{args.section}-{dt.datetime.now(dt.timezone.utc).strftime('%Y%m%dT%H%M%S')}"
    store["runs"][run_id] = environment()
    if args.section == "speed":
        args.parts = args.parts or ["steps", "pipeline", "inference", "kmeans"]
    if args.section == "baselines":
        run_baselines(args, store, run_id)
    elif args.section == "speed":
        run_speed(args, store, run_id)
    elif args.section == "authors-sccl":
        if not args.source:
            parser.error("authors-sccl needs --from <side-by-side JSON lines>")
        record_authors_sccl(args, store, run_id)
    elif args.section == "auto-k":
        run_auto_k(args, store, run_id)
    elif args.section == "augmentation":
        run_augmentation(args, store, run_id)
    elif args.section == "kmeans-init":
        run_kmeans_init(args, store, run_id)
    elif args.section == "rescore":
        run_rescore(args, store, run_id)
    elif args.section == "scale":
        args.parts = args.parts or ["predict", "kmeans"]
        run_scale(args, store, run_id)
    else:
        run_method(args, store, run_id)
    print(f"Wrote {RESULTS_MD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
