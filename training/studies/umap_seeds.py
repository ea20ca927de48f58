"""How much the BERTopic way's partition hangs on its one UMAP run, and whether a label-free pick among several runs
avoids the bad ones. Per tuning corpus (``cached_encode.py``'s subsample and 32-token MiniLM embeddings): UMAP ->
k-means (BERTopic's settings) with seeds 0-4; for each run its ACC (labels only score) and label-free read-outs: the
within-cluster sum of squares of its partition in the pretrained space (lower: tighter), its mean NMI with the other
runs (higher: the runs agree) and its cosine silhouette in the pretrained space.

Writes one JSON line per corpus to ``umap_seeds.jsonl`` beside this file.
Run: ``PYTHONPATH=. python training/studies/umap_seeds.py agnews tweet ...`` (after ``cached_encode.py``).
"""

import json
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import normalized_mutual_info_score, silhouette_score
from study_rows import append_row, pending  # the script's folder is on sys.path

from hf_textcluster.editing.kmeans import _umap_kmeans_groups
from hf_textcluster.evaluation.metrics import clustering_scores

OUT = Path(__file__).with_name("umap_seeds.jsonl")
SEEDS = range(5)


def within_ss(x: np.ndarray, labels: np.ndarray) -> float:
    return float(sum(((x[labels == c] - x[labels == c].mean(0)) ** 2).sum() for c in np.unique(labels)))


if __name__ == "__main__":
    for name, z in pending(OUT, sys.argv[1:]):
        x, labels = z["e0"], z["labels"]
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        K = len(np.unique(labels))
        parts = [_umap_kmeans_groups(x, K, random_state=seed) for seed in SEEDS]
        runs = []
        for i, p in enumerate(parts):
            others = [normalized_mutual_info_score(p, q) for j, q in enumerate(parts) if j != i]
            runs.append(
                {
                    "seed": i,
                    "acc": round(100 * clustering_scores(labels, p)["acc"], 1),
                    "within_ss": round(within_ss(x, p), 2),
                    "agreement": round(float(np.mean(others)), 4),
                    "silhouette": round(
                        float(silhouette_score(x, p, metric="cosine", sample_size=4000, random_state=0)), 4
                    ),
                }
            )
        row = {"dataset": name, "N": len(x), "K": K, "runs": runs}
        append_row(OUT, row)
        print(json.dumps(row), flush=True)
