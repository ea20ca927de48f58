"""Candidates trained on cached pretrained embeddings, scored by the default's label-free criteria, per tuning corpus.

For each corpus (the seeded subsample and embeddings of ``cached_encode.py``): the pretrained candidates (k-means,
the BERTopic way), SCAN's neighbour-consistency head (``pretrained/scan``: a linear read-out of the pretrained space)
and SCCL's objectives on a residual adapter (``adapter/head``, ``adapter/kmeans``, ``adapter/umap_kmeans``, in the
adapter's space); every criterion of ``AUTO_CRITERIA`` on each, and each candidate's ACC (labels score only).
Writes one JSON line per corpus to ``cached_choice.jsonl`` beside this file, and the partitions to
``$PARTS/<corpus>.npz``. ``choice_loco.py`` then estimates choice rules by leaving one corpus out.

Run: ``PYTHONPATH=. python training/studies/cached_choice.py tweet agnews ...`` (after ``cached_encode.py``).
"""

import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from hf_textcluster.choosing.candidate_choice import candidate_criteria
from hf_textcluster.data import load_benchmark
from hf_textcluster.editing.kmeans import _umap_kmeans_groups, fit_kmeans
from hf_textcluster.evaluation.metrics import clustering_scores

sys.path.insert(0, str(Path(__file__).parent))
from cached_heads import scan, sccl_cache  # noqa: E402
from study_rows import append_row, pending  # noqa: E402

torch.set_num_threads(int(os.environ.get("THREADS", 2)))
OUT = Path(__file__).with_name("cached_choice.jsonl")
PARTS = Path(os.environ.get("PARTS", "/work/study/parts"))
DATA = os.environ.get("HF_TEXTCLUSTER_DATA_DIR", "/work/shared/data")


def timed(seconds, key, make, *args, **kwargs):
    t = time.perf_counter()
    out = make(*args, **kwargs)
    seconds[key] = round(time.perf_counter() - t, 1)
    return out


if __name__ == "__main__":
    for name, z in pending(OUT, sys.argv[1:]):
        e0, e1, labels, idx = z["e0"], z["e1"], z["labels"], z["idx"]
        all_texts = load_benchmark(name, data_dir=DATA)["text"]
        texts = [all_texts[int(i)] for i in idx]
        K = len(np.unique(labels))
        seconds, parts = {}, {}

        parts["pretrained/kmeans"] = timed(seconds, "kmeans", fit_kmeans, e0, K, random_state=0).labels_
        parts["pretrained/umap_kmeans"] = timed(seconds, "umap_kmeans", _umap_kmeans_groups, e0, K, random_state=0)
        parts["pretrained/scan"] = timed(seconds, "scan", scan, e0, K)[0]
        head, adapted = timed(seconds, "adapter", sccl_cache, e0, e1, K)
        parts["adapter/head"] = head
        parts["adapter/kmeans"] = fit_kmeans(adapted, K, random_state=0).labels_
        parts["adapter/umap_kmeans"] = timed(seconds, "adapter_umap", _umap_kmeans_groups, adapted, K, random_state=0)
        spaces = {"pretrained": e0, "adapter": adapted}
        values = timed(seconds, "criteria", candidate_criteria, parts, spaces, texts=texts)
        acc = {n: round(100 * clustering_scores(labels, p)["acc"], 1) for n, p in parts.items()}
        row = {"dataset": name, "N": len(texts), "K": K, "acc": acc, "criteria": values, "seconds": seconds}
        PARTS.mkdir(parents=True, exist_ok=True)
        np.savez(PARTS / f"{name}.npz", labels=labels, **{n.replace("/", "__"): p for n, p in parts.items()})
        append_row(OUT, row)
        print(name, acc, seconds, flush=True)
