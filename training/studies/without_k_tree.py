"""K without labels from a tree of clusters: the current rule's clusters, each split again where its own silhouette
says it holds groups.

The layout's silhouette favours the coarsest split of nested groups (topics within themes: AgNews 2 for 4). A cluster
that holds several groups should show them when it is clustered alone, so the rule reads K from a tree: the top level
is the current rule (k-means on the layout at the K of the best layout silhouette), then every cluster of at least
``MIN_SPLIT`` texts is clustered alone for k = 2 .. min(16, size / 10) and split at its best k when that k's
silhouette is at least a threshold ``t``, down to ``DEPTH`` levels below the top. Two ways to cluster a cluster alone
(fixed before any result was seen):

- ``global``: k-means on its rows of the corpus' layout, silhouette in that layout;
- ``own``: a UMAP layout of its own embeddings (BERTopic's settings, exact neighbours, seed 0) when it has at least
  ``MIN_OWN`` texts (smaller ones stay leaves), k-means and silhouette there.

A node's best k does not depend on ``t``, so each tree is grown once to its full depth and cut per threshold
(``THRESHOLDS``: 0.3 .. 0.8). Recorded per task, variant and threshold: the K of the leaves and their ACC / NMI
(labels only score). ``--rules`` compares them with the current rule (the tree's top level) by leaving one corpus
out. Tasks and layout: ``without_k.py``'s. Writes ``without_k_tree.jsonl`` (``OUT=...``: another file, as the
confirmation corpora's, whose top level is found here the same way); reads /tmp/emb. Run: ``PYTHONPATH=. python
training/studies/without_k_tree.py agnews ...``, then ``... --rules``.
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
OUT = Path(__file__).parent / os.environ.get("OUT", "without_k_tree.jsonl")
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
MIN_SPLIT = 20
MIN_OWN = 100
DEPTH = 2
SAMPLE = 3000


def best_split(points):
    """(best k, its silhouette, its labels) of k-means on ``points`` for k = 2 .. min(16, n / 10)."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import pairwise_distances, silhouette_score

    n = len(points)
    rows = np.sort(np.random.default_rng(0).choice(n, min(SAMPLE, n), replace=False))
    d = pairwise_distances(points[rows])
    best = (None, -1.0, None)
    for k in range(2, min(16, n // 10) + 1):
        labels = KMeans(k, n_init=1, random_state=0).fit_predict(points)
        if 1 < len(np.unique(labels[rows])) < len(rows):
            s = float(silhouette_score(d, labels[rows], metric="precomputed"))
            if s > best[1]:
                best = (k, s, labels)
    return best


def grow(x, red, rows, depth, own):
    """The node of ``rows``: its best split's silhouette and its children (grown to ``DEPTH``)."""
    from without_k import layout

    from hf_textcluster.editing.kmeans import exact_neighbours

    node = {"rows": rows, "sil": -1.0, "children": []}
    if depth >= DEPTH or len(rows) < MIN_SPLIT or (own and len(rows) < MIN_OWN):
        return node
    if own:
        sub = x[rows]
        points = layout(sub, (*exact_neighbours(sub, 15), None), 0)
    else:
        points = red[rows]
    k, s, labels = best_split(points)
    if k is None:
        return node
    node["sil"] = s
    node["children"] = [grow(x, red, rows[labels == c], depth + 1, own) for c in range(k)]
    return node


def leaves(node, t):
    if not node["children"] or node["sil"] < t:
        return [node["rows"]]
    return [leaf for child in node["children"] for leaf in leaves(child, t)]


def silhouette_k(red) -> int:
    """The current rule's K on a corpus ``without_k.py`` did not run on: the best layout silhouette over its grid."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import pairwise_distances, silhouette_score
    from without_k import SIL_SAMPLE, grid

    rows = np.random.default_rng(0).choice(len(red), min(SIL_SAMPLE, len(red)), replace=False)
    d = pairwise_distances(red[rows])
    sil = {
        k: silhouette_score(d, KMeans(k, n_init=1, random_state=0).fit_predict(red)[rows], metric="precomputed")
        for k in grid(len(red))
    }
    return max(sorted(sil), key=sil.get)


def run(x, labels, k_top) -> dict:
    from sklearn.cluster import KMeans
    from without_k import layout

    from hf_textcluster.editing.kmeans import exact_neighbours
    from hf_textcluster.evaluation.metrics import clustering_scores

    t0 = time.perf_counter()
    red = layout(x, (*exact_neighbours(x, 15), None), 0)
    k_top = k_top or silhouette_k(red)
    top = KMeans(k_top, n_init=1, random_state=0).fit_predict(red)
    s = clustering_scores(labels, top)
    out = {
        "N": len(x),
        "K": len(np.unique(labels)),
        "top": {"k": k_top, "acc": round(100 * s["acc"], 2), "nmi": round(100 * s["nmi"], 2)},
        "options": {},
    }
    for variant in ("global", "own"):
        tree = [grow(x, red, np.flatnonzero(top == c), 0, variant == "own") for c in range(k_top)]
        for t in THRESHOLDS:
            part = np.empty(len(x), int)
            parts = [leaf for node in tree for leaf in leaves(node, t)]
            for i, r in enumerate(parts):
                part[r] = i
            s = clustering_scores(labels, part)
            out["options"][f"{variant}/{t}"] = {
                "k": len(parts),
                "acc": round(100 * s["acc"], 2),
                "nmi": round(100 * s["nmi"], 2),
            }
        out[f"seconds_{variant}"] = round(time.perf_counter() - t0, 1)
    return out


def report() -> None:
    from study_rows import leave_one_corpus_out

    corpora = [json.loads(line) for line in OUT.read_text().splitlines()]
    tasks = [(c["dataset"], t, r) for c in corpora for t, r in c["tasks"].items()]
    options = ["current", *corpora[0]["tasks"]["whole"]["options"]]

    def served(option, task):
        v = task[2]["top"] if option == "current" else task[2]["options"][option]
        return (v["acc"] + v["nmi"]) / 2, v["k"], abs(v["k"] - task[2]["K"]) <= 0.25 * task[2]["K"]

    print(f"true K: {[t[2]['K'] for t in tasks]}")
    leave_one_corpus_out(tasks, options, served)
    # the leaves' K served the BERTopic way instead (k-means on the layout at the nearest K of without_k.py's grid)
    base = {r["dataset"]: r["tasks"] for r in map(json.loads, Path(__file__).with_name("without_k.jsonl").open())}
    for o in ("global/0.8", "own/0.8"):
        at_k = []
        for name, task, r in tasks:
            grid = {int(k): v for k, v in base[name][task]["layout"].items()}
            nearest = grid[min(grid, key=lambda k: abs(k - r["options"][o]["k"]))]
            at_k.append((nearest["acc"] + nearest["nmi"]) / 2)
        print(f"  {o}'s K served by k-means on the layout: {np.mean(at_k):6.2f}")


def confirm(rule: str = "global/0.8") -> None:
    """The rule the tuning corpora chose, on the corpora of ``OUT``, once, beside the current rule."""
    for c in map(json.loads, OUT.read_text().splitlines()):
        for t, r in c["tasks"].items():
            now, new = r["top"], r["options"][rule]
            print(
                f"  {c['dataset']:8s} {t:10s} true K {r['K']:3d}  current K {now['k']:3d} ACC {now['acc']:5.1f} NMI "
                f"{now['nmi']:5.1f}  {rule} K {new['k']:3d} ACC {new['acc']:5.1f} NMI {new['nmi']:5.1f}"
            )


if __name__ == "__main__":
    from study_rows import run_tasks
    from without_k_merge import current

    if sys.argv[1:] in (["--rules"], ["--confirm"]):
        report() if sys.argv[1] == "--rules" else confirm()
        sys.exit()
    base = {r["dataset"]: r["tasks"] for r in map(json.loads, Path(__file__).with_name("without_k.jsonl").open())}

    def task_run(name, task, x, labels, texts):  # the top level: without_k.py's choice where it ran, else found here
        return run(x, labels, current(base[name][task])["k"] if name in base else None)

    run_tasks(OUT, sys.argv[1:], task_run)
