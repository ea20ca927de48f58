"""K without labels by over-splitting, then merging the clusters whose keywords (or centres) are alike.

BERTopic's ``reduce_topics`` idea, as a rule for K: start from more clusters than the texts have and merge the ones
that say the same thing, until no two left are alike within a threshold. Unlike a silhouette, a threshold on how alike
two clusters' words are does not favour the coarsest split of nested groups (topics within themes): two themes' topics
use different words.

Per task (``without_k.py``'s tasks and its layout: seed 0, exact cosine neighbours), two over-split starts:

- ``hdbscan``: BERTopic's default partition on the layout (HDBSCAN, min_cluster_size 10), outliers given their
  nearest cluster centre (``without_k.assign_outliers``);
- ``kmeans``: k-means (one start) on the layout at the grid's largest K (3 sqrt(N)),

each merged by average linkage with a distance threshold, in two spaces: ``words`` (the cosine distance between the
clusters' c-TF-IDF rows, the package's keyword weighting and token pattern, English stop words) and ``centres``
(the cosine distance between the clusters' mean pretrained embeddings). Thresholds: words 0.5 .. 0.95, centres 0.1 ..
0.5 (grids fixed here before any result was seen). Recorded per option: the K it ends with and ACC / NMI (labels
only score). ``--rules`` compares them, left one corpus out, with the current rule (the layout's silhouette, read from
``without_k.jsonl``: the same layout). Writes ``without_k_merge.jsonl``; reads /tmp/emb and the corpora's texts.
Run: ``PYTHONPATH=. python training/studies/without_k_merge.py agnews ...``, then ``... --rules``.
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
OUT = Path(__file__).parent / os.environ.get("OUT", "without_k_merge.jsonl")
THRESHOLDS = {"words": (0.5, 0.6, 0.7, 0.8, 0.9, 0.95), "centres": (0.1, 0.2, 0.3, 0.4, 0.5)}


def ctfidf(texts, clusters, k):
    """Clusters x words c-TF-IDF (ClassTfidfRepresentation's weighting), rows L2-normalised."""
    from sklearn.feature_extraction.text import CountVectorizer

    from hf_textcluster.representation.ctfidf import TOKEN_PATTERN

    docs = [" ".join(texts[i] for i in np.flatnonzero(clusters == c)) for c in range(k)]
    counts = CountVectorizer(token_pattern=TOKEN_PATTERN, stop_words="english").fit_transform(docs).toarray()
    counts = counts.astype(np.float64)
    words = counts.sum(1, keepdims=True)
    tf = np.divide(counts, words, out=np.zeros_like(counts), where=words > 0)
    scores = tf * np.log1p(max(words.mean(), 1.0) / np.maximum(counts.sum(0), 1.0))
    return scores / np.maximum(np.linalg.norm(scores, axis=1, keepdims=True), 1e-12)


def merge(vectors, clusters, threshold):
    from sklearn.cluster import AgglomerativeClustering

    groups = AgglomerativeClustering(
        n_clusters=None, distance_threshold=threshold, metric="cosine", linkage="average"
    ).fit_predict(vectors)
    return groups[clusters]


def run(x, labels, texts) -> dict:
    from sklearn.cluster import HDBSCAN, KMeans
    from without_k import assign_outliers, centres, grid, layout

    from hf_textcluster.editing.kmeans import exact_neighbours
    from hf_textcluster.evaluation.metrics import clustering_scores

    t0 = time.perf_counter()
    red = layout(x, (*exact_neighbours(x, 15), None), 0)
    starts = {
        "hdbscan": assign_outliers(x, HDBSCAN(min_cluster_size=10).fit_predict(red)),
        "kmeans": KMeans(grid(len(x))[-1], n_init=1, random_state=0).fit_predict(red),
    }
    out = {"N": len(x), "K": len(np.unique(labels)), "options": {}}
    for start, part in starts.items():
        ids, part = np.unique(part, return_inverse=True)
        k0 = len(ids)
        space = {"words": ctfidf(texts, part, k0), "centres": centres(x, part)[1]}
        for name, vectors in space.items():
            for t in THRESHOLDS[name]:
                merged = merge(vectors, part, t)
                s = clustering_scores(labels, merged)
                out["options"][f"{start}/{name}/{t}"] = {
                    "k0": k0,
                    "k": int(len(np.unique(merged))),
                    "acc": round(100 * s["acc"], 2),
                    "nmi": round(100 * s["nmi"], 2),
                }
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def current(task) -> dict:
    grid = {int(k): v for k, v in task["layout"].items()}
    k = max(sorted(grid), key=lambda k: grid[k]["sil_layout"])
    return {"k": k, **grid[k]}


def report() -> None:
    from study_rows import leave_one_corpus_out

    base = {r["dataset"]: r["tasks"] for r in map(json.loads, Path(__file__).with_name("without_k.jsonl").open())}
    corpora = [json.loads(line) for line in OUT.read_text().splitlines()]
    tasks = [(c["dataset"], t, r, current(base[c["dataset"]][t])) for c in corpora for t, r in c["tasks"].items()]
    options = ["current", *corpora[0]["tasks"]["whole"]["options"]]

    def served(option, task):
        v = task[3] if option == "current" else task[2]["options"][option]
        return (v["acc"] + v["nmi"]) / 2, v["k"], abs(v["k"] - task[2]["K"]) <= 0.25 * task[2]["K"]

    print(f"true K: {[t[2]['K'] for t in tasks]}")
    leave_one_corpus_out(tasks, options, served)


if __name__ == "__main__":
    from study_rows import run_tasks

    if sys.argv[1:] == ["--rules"]:
        report()
    else:
        run_tasks(OUT, sys.argv[1:], lambda name, task, x, labels, texts: run(x, labels, texts), texts=True)
