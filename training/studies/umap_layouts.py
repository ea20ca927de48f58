"""Whether several UMAP layouts with a label-free pick among them keep the BERTopic way's partition from merging
classes. Per task, UMAP -> k-means (BERTopic's settings) on *exact* cosine neighbours computed once, with layout
seeds 0-4; for each run its ACC (labels only score), the NMI between every pair of runs and the within-cluster sum of
squares of its partition in the pretrained space.

Tasks (the tuning set grown by resampling it, so a rule sees more than one case of a merge): each tuning corpus'
cached subsample whole, and per corpus two seeded draws of 3, 5 and 10 of its classes (fewer than it has; at least
300 texts). Leave-one-corpus-out in ``umap_layouts_loco.py`` holds out a corpus with all its draws.

Writes one JSON line per corpus (its tasks) to ``umap_layouts.jsonl`` beside this file.
Run: ``PYTHONPATH=. python training/studies/umap_layouts.py agnews tweet ...`` (after ``cached_encode.py``).
"""

import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score
from study_rows import append_row, class_subsets, pending  # the script's folder is on sys.path
from umap_seeds import within_ss

from hf_textcluster.editing.kmeans import exact_neighbours
from hf_textcluster.evaluation.metrics import clustering_scores

OUT = Path(__file__).with_name("umap_layouts.jsonl")
SEEDS = range(5)
SUBSET_SIZES = (3, 5, 10)
DRAWS = 2
MIN_TEXTS = 300


def tasks(labels: np.ndarray):
    return class_subsets(labels, SUBSET_SIZES, DRAWS, MIN_TEXTS)


def runs(x: np.ndarray, labels: np.ndarray) -> dict:
    from umap import UMAP

    K = len(np.unique(labels))
    knn = (*exact_neighbours(x, 15), None)
    parts = []
    for seed in SEEDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reduced = UMAP(
                n_neighbors=15, n_components=5, min_dist=0.0, metric="cosine", random_state=seed, precomputed_knn=knn
            ).fit_transform(x)
        parts.append(KMeans(n_clusters=K, n_init=10, random_state=seed).fit_predict(reduced))
    return {
        "N": len(x),
        "K": K,
        "acc": [round(100 * clustering_scores(labels, p)["acc"], 1) for p in parts],
        "nmi": [[round(float(normalized_mutual_info_score(p, q)), 4) for q in parts] for p in parts],
        "within_ss": [round(within_ss(x, p), 2) for p in parts],
    }


if __name__ == "__main__":
    for name, z in pending(OUT, sys.argv[1:]):
        x, labels = z["e0"].astype(np.float32), z["labels"]
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        row = {"dataset": name, "tasks": {}}
        for task, rows in tasks(labels):
            row["tasks"][task] = runs(x[rows], labels[rows])
            print(name, task, row["tasks"][task]["acc"], flush=True)
        append_row(OUT, row)
