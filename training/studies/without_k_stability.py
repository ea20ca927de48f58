"""K without labels by the stability of the partition across UMAP layouts, against the layout's silhouette alone.

The default reads K where the layout's silhouette of k-means peaks, on the first of the three layouts the BERTopic
way draws anyway. A K the texts really have should also be found again in the other two layouts: a K that cuts one
group in two (or puts two in one) cuts it where the layout happens to stretch, which differs from seed to seed.

Per task (``without_k.py``'s: each tuning corpus' 8,000-text subsample whole and one seeded draw each of 3, 5 and 10
of its classes), the three layouts the package draws (exact cosine neighbours computed once, seeds 0, 1, 2), and for
every K of ``without_k.py``'s grid k-means (one start, seed 0) on each layout, recorded:

- ``sil0``: the silhouette of layout 0's partition in layout 0 (the current rule's criterion), ``sil3``: the mean of
  the three partitions' silhouettes each in its own layout (on one seeded sample of 3,000 rows);
- ``ari``, ``nmi``: the mean pairwise agreement of the three partitions (adjusted Rand, NMI);
- ``acc``, ``nmi_true``: the served partition against the labels (labels only score): the partition agreeing most
  with the other two (mean NMI), as the package serves the BERTopic way.

Rules are estimated offline by leaving one corpus out in ``--rules`` (families and grids fixed in ``rules()`` before
any result was seen). Writes one JSON line per corpus to ``without_k_stability.jsonl`` beside this file; reads the
embeddings ``cached_encode.py`` cached in /tmp/emb. Run: ``PYTHONPATH=. python training/studies/without_k_stability.py
agnews tweet ...``, then ``python training/studies/without_k_stability.py --rules``.
"""

import json
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("without_k_stability.jsonl")
LAYOUTS = 3
SAMPLE = 3000


def run(x, labels) -> dict:
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score, pairwise_distances, silhouette_score
    from without_k import grid, layout

    from hf_textcluster.editing.kmeans import exact_neighbours
    from hf_textcluster.evaluation.metrics import clustering_scores

    t0 = time.perf_counter()
    knn = (*exact_neighbours(x, 15), None)
    reds = [layout(x, knn, seed) for seed in range(LAYOUTS)]
    rows = np.sort(np.random.default_rng(0).choice(len(x), min(SAMPLE, len(x)), replace=False))
    dists = [pairwise_distances(r[rows]) for r in reds]
    out = {"N": len(x), "K": len(np.unique(labels)), "per_k": {}}
    for k in grid(len(x)):
        parts = [KMeans(k, n_init=1, random_state=0).fit_predict(r) for r in reds]
        sils = [
            float(silhouette_score(d, p[rows], metric="precomputed")) if len(np.unique(p[rows])) > 1 else -1.0
            for d, p in zip(dists, parts)
        ]
        pairs = list(combinations(range(LAYOUTS), 2))
        nmi = {(i, j): normalized_mutual_info_score(parts[i], parts[j]) for i, j in pairs}
        agree = [np.mean([v for (i, j), v in nmi.items() if a in (i, j)]) for a in range(LAYOUTS)]
        s = clustering_scores(labels, parts[int(np.argmax(agree))])
        out["per_k"][k] = {
            "sil0": round(sils[0], 5),
            "sil3": round(float(np.mean(sils)), 5),
            "ari": round(float(np.mean([adjusted_rand_score(parts[i], parts[j]) for i, j in pairs])), 5),
            "nmi": round(float(np.mean(list(nmi.values()))), 5),
            "acc": round(100 * s["acc"], 2),
            "nmi_true": round(100 * s["nmi"], 2),
        }
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


# ----------------------------------------------------------------------------------------------------------- rules


def rules():
    """(name, function of a task's per-K rows -> K). Fixed before any result of this study was seen."""
    yield "silhouette, layout 0 (current)", lambda r: _argmax(r, lambda v: v["sil0"])
    yield "silhouette, mean of 3 layouts", lambda r: _argmax(r, lambda v: v["sil3"])
    yield "stability ARI", lambda r: _argmax(r, lambda v: v["ari"])
    yield "stability NMI", lambda r: _argmax(r, lambda v: v["nmi"])
    yield "silhouette x ARI", lambda r: _argmax(r, lambda v: max(v["sil0"], 0) * v["ari"])
    yield "mean silhouette x ARI", lambda r: _argmax(r, lambda v: max(v["sil3"], 0) * v["ari"])
    for t in (0.8, 0.9, 0.95):
        yield f"silhouette among ARI >= {t} max", lambda r, t=t: _best_among(r, "sil0", "ari", t)
        yield f"mean silhouette among ARI >= {t} max", lambda r, t=t: _best_among(r, "sil3", "ari", t)
    for d in (0.02, 0.05, 0.1):
        yield f"largest K with ARI >= max - {d}", lambda r, d=d: max(k for k, v in r.items() if v["ari"] >= _top(r) - d)


def _top(r):
    return max(v["ari"] for v in r.values())


def _argmax(r, f):
    return max(sorted(r), key=lambda k: f(r[k]))  # ties: the smaller K


def _best_among(r, crit, gate, t):
    top = max(v[gate] for v in r.values())
    return _argmax({k: v for k, v in r.items() if v[gate] >= t * top}, lambda v: v[crit])


def report() -> None:
    corpora = [json.loads(line) for line in OUT.read_text().splitlines()]
    tasks = [(c["dataset"], t, {int(k): v for k, v in r["per_k"].items()}, r["K"]) for c in corpora for t, r in c["tasks"].items()]
    named = list(rules())

    def served(rule, task):
        k = rule(task[2])
        v = task[2][k]
        return (v["acc"] + v["nmi_true"]) / 2, k, abs(k - task[3]) <= 0.25 * task[3]

    print(f"{len(tasks)} tasks on {len(corpora)} corpora; (ACC + NMI) / 2 of the served partition, K within 25%")
    for name, rule in named:
        got = [served(rule, t) for t in tasks]
        print(f"  {name:42s} {np.mean([g[0] for g in got]):6.2f}  K ok {sum(g[2] for g in got):2d}/{len(tasks)}")
    for label, folds in (("one corpus", [[c["dataset"]] for c in corpora]), ("GoogleNews together", _grouped(corpora))):
        print(f"\nleaving {label} out (the fold picks the best rule on the others, the current one first on ties):")
        held, ok = [], 0
        for fold in folds:
            train = [t for t in tasks if t[0] not in fold]
            test = [t for t in tasks if t[0] in fold]
            best = max(named, key=lambda nr: round(np.mean([served(nr[1], t)[0] for t in train]), 6))
            got = [served(best[1], t) for t in test]
            cur = [served(named[0][1], t) for t in test]
            held += [g[0] for g in got]
            ok += sum(g[2] for g in got)
            print(f"  {'+'.join(fold):32s} picks {best[0]:42s} held out {np.mean([g[0] for g in got]):6.2f} "
                  f"(current {np.mean([c[0] for c in cur]):6.2f}), K {[g[1] for g in got]} for {[t[3] for t in test]}")
        cur_all = np.mean([served(named[0][1], t)[0] for t in tasks])
        print(f"  held out mean {np.mean(held):.2f} against the current rule's {cur_all:.2f}; K within 25% on {ok}/{len(tasks)}")


def _grouped(corpora):
    names = [c["dataset"] for c in corpora]
    news = [n for n in names if n.startswith("googlenews")]
    return [news] + [[n] for n in names if n not in news]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    if sys.argv[1:] == ["--rules"]:
        report()
        sys.exit()
    from study_rows import append_row, pending
    from without_k import SUBSET_SIZES, MIN_TEXTS
    from study_rows import class_subsets

    for name, z in pending(OUT, sys.argv[1:]):
        x = z["e0"].astype(np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        row = {"dataset": name, "tasks": {}}
        for task, idx in class_subsets(z["labels"], SUBSET_SIZES, 1, MIN_TEXTS):
            r = run(x[idx], z["labels"][idx])
            row["tasks"][task] = r
            print(name, task, r["N"], r["K"], r["seconds"], flush=True)
        append_row(OUT, row)
