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
    from study_rows import leave_one_corpus_out

    corpora = [json.loads(line) for line in OUT.read_text().splitlines()]
    tasks = [
        (c["dataset"], t, {int(k): v for k, v in r["per_k"].items()}, r["K"])
        for c in corpora
        for t, r in c["tasks"].items()
    ]
    named = dict(rules())

    def served(name, task):
        k = named[name](task[2])
        v = task[2][k]
        return (v["acc"] + v["nmi_true"]) / 2, k, abs(k - task[3]) <= 0.25 * task[3]

    leave_one_corpus_out(tasks, list(named), served)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from study_rows import run_tasks

    if sys.argv[1:] == ["--rules"]:
        report()
    else:
        run_tasks(OUT, sys.argv[1:], lambda name, task, x, labels, texts: run(x, labels))
