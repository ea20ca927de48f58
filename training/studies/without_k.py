"""Choosing K and the partition without labels, against BERTopic's default (UMAP -> HDBSCAN).

Per task, on the pretrained MiniLM embeddings (L2-normalised): one UMAP layout with BERTopic's settings (15 exact
cosine neighbours -> 5 dims, min_dist 0, seed 0), then

- ``hdbscan``: BERTopic's default partition, HDBSCAN (scikit-learn's; min_cluster_size 10, EOM) on that layout: its
  K, its outlier share, ACC / NMI with the outliers as one cluster (how BERTopic users meet it);
- ``hdbscan_assigned``: the same with every outlier given its nearest cluster centre (cosine, pretrained space);
- per K of a grid (2 .. 3 sqrt(N), about 10% steps): k-means on the layout (``layout``: the BERTopic way at K) and
  the HDBSCAN clusters merged to K by average linkage of their centres (``merged``, K below HDBSCAN's count), each
  with label-free scores: the silhouette in the layout (``sil_layout``) and in the pretrained space (``sil_emb``,
  cosine; both on one seeded sample of 3,000 rows), Calinski-Harabasz in the layout (``ch_layout``); and ACC / NMI
  against the labels (labels only score).

Tasks: each tuning corpus' 8,000-text subsample whole and one seeded draw each of 3, 5 and 10 of its classes (fewer
than it has; at least 300 texts), so a rule sees small K as well as the corpora's own. Rules are compared by leaving
one corpus out (with all its draws) in ``without_k_loco.py``.

Writes one JSON line per corpus (its tasks) to ``without_k.jsonl`` beside this file; caches embeddings in /tmp/emb.
Run: ``PYTHONPATH=. python training/studies/without_k.py agnews tweet ...``.
"""

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import calinski_harabasz_score, silhouette_score
from study_rows import EMBEDDINGS, append_row, class_subsets  # the script's folder is on sys.path

from hf_textcluster.editing.kmeans import exact_neighbours
from hf_textcluster.evaluation.metrics import clustering_scores

OUT = Path(__file__).with_name("without_k.jsonl")
SUBSET_SIZES = (3, 5, 10)
MIN_TEXTS = 300
MAX_N = 8000
SIL_SAMPLE = 3000


def embeddings(name: str) -> tuple[np.ndarray, np.ndarray]:
    path = EMBEDDINGS.format(name=name)
    if not os.path.exists(path):
        import torch

        from hf_textcluster.data import load_benchmark
        from hf_textcluster.modeling.modeling_utils import TextClusteringPreTrainedModel
        from hf_textcluster.models.building import from_encoder_pretrained

        torch.set_num_threads(2)
        model = from_encoder_pretrained(TextClusteringPreTrainedModel, None, num_clusters=2)
        ds = load_benchmark(name, data_dir="/work/shared/data")
        n = len(ds)
        idx = np.sort(np.random.default_rng(0).permutation(n)[:MAX_N]) if n > MAX_N else np.arange(n)
        texts = [ds[int(i)]["text"] for i in idx]
        e0 = model.embed(texts, show_progress_bar=False, precision="fp32")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        np.savez(path, e0=e0.astype(np.float32), labels=np.asarray(ds["label"])[idx], idx=idx)
    z = np.load(path)
    x = z["e0"].astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True), z["labels"]


def tasks(labels: np.ndarray):
    return class_subsets(labels, SUBSET_SIZES, 1, MIN_TEXTS)


def grid(n: int) -> list[int]:
    k_max = max(4, int(3 * np.sqrt(n)))
    ks, k = list(range(2, min(k_max, 10) + 1)), 10
    while k < k_max:
        k = max(k + 1, int(round(k * 1.12)))
        ks.append(min(k, k_max))
    return sorted(set(ks))


def layout(x, knn, seed):
    from umap import UMAP

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return UMAP(
            n_neighbors=15, n_components=5, min_dist=0.0, metric="cosine", random_state=seed, precomputed_knn=knn
        ).fit_transform(x)


def centres(x, labels):
    ids = np.unique(labels)
    c = np.stack([x[labels == i].mean(0) for i in ids])
    return ids, c / np.linalg.norm(c, axis=1, keepdims=True)


def assign_outliers(x, topics):
    out = topics.copy()
    ids, c = centres(x[topics >= 0], topics[topics >= 0])
    if (topics < 0).any():
        out[topics < 0] = ids[np.argmax(x[topics < 0] @ c.T, axis=1)]
    return out


def merged(x, assigned, k):
    """HDBSCAN's clusters merged to k by average linkage of their centres (cosine)."""
    from sklearn.cluster import AgglomerativeClustering

    ids, c = centres(x, assigned)
    groups = AgglomerativeClustering(n_clusters=k, metric="cosine", linkage="average").fit_predict(c)
    return groups[np.searchsorted(ids, assigned)]


class Sample:
    """A seeded sample of rows with its distance matrices (pretrained cosine, layout Euclidean), computed once."""

    def __init__(self, x, red):
        from sklearn.metrics import pairwise_distances

        self.rows = np.random.default_rng(0).choice(len(x), min(SIL_SAMPLE, len(x)), replace=False)
        self.emb = np.maximum(1 - x[self.rows] @ x[self.rows].T, 0).astype(np.float64)
        np.fill_diagonal(self.emb, 0)
        self.lay = pairwise_distances(red[self.rows])


def scores(labels, part, x, red, sample) -> dict:
    s = clustering_scores(labels, part)
    row = {"acc": round(100 * s["acc"], 2), "nmi": round(100 * s["nmi"], 2)}
    p = part[sample.rows]
    if len(np.unique(p)) > 1:
        row["sil_layout"] = round(float(silhouette_score(sample.lay, p, metric="precomputed")), 5)
        row["sil_emb"] = round(float(silhouette_score(sample.emb, p, metric="precomputed")), 5)
        row["ch_layout"] = round(float(calinski_harabasz_score(red, part)), 3)
    return row


def run(x, labels) -> dict:
    from sklearn.cluster import HDBSCAN

    t0 = time.perf_counter()
    knn = (*exact_neighbours(x, 15), None)
    red = layout(x, knn, 0)
    t_umap = time.perf_counter() - t0
    topics = HDBSCAN(min_cluster_size=10).fit_predict(red)
    k_h = len(np.unique(topics[topics >= 0]))
    sample = Sample(x, red)
    row = {"N": len(x), "K": len(np.unique(labels)), "k_hdbscan": k_h, "outliers": round(float((topics < 0).mean()), 4)}
    s = clustering_scores(labels, topics)
    row["hdbscan"] = {"acc": round(100 * s["acc"], 2), "nmi": round(100 * s["nmi"], 2)}
    assigned = assign_outliers(x, topics) if k_h > 0 else np.zeros(len(x), int)
    row["hdbscan_assigned"] = scores(labels, assigned, x, red, sample)
    row["layout"], row["merged"] = {}, {}
    for k in grid(len(x)):
        km = KMeans(k, n_init=1, random_state=0).fit(red)
        row["layout"][k] = scores(labels, km.labels_, x, red, sample)
        if k < k_h:
            row["merged"][k] = scores(labels, merged(x, assigned, k), x, red, sample)
    row["seconds"] = {"umap": round(t_umap, 1), "all": round(time.perf_counter() - t0, 1)}
    return row


if __name__ == "__main__":
    import json

    done = {json.loads(line)["dataset"] for line in OUT.read_text().splitlines()} if OUT.exists() else set()
    for name in sys.argv[1:]:
        if name in done:
            continue
        x, labels = embeddings(name)
        row = {"dataset": name, "tasks": {}}
        for task, rows in tasks(labels):
            r = run(x[rows], labels[rows])
            row["tasks"][task] = r
            print(name, task, r["N"], r["K"], r["k_hdbscan"], r["hdbscan"], r["seconds"], flush=True)
        append_row(OUT, row)
