"""How many tokens the default should read: the texts' token counts per tuning corpus, and k-means / the BERTopic way
on the pretrained MiniLM embeddings of the same seeded subsample (``cached_encode.py``'s) read to 32 tokens and to
the length buckets that cover 90 / 95 / 99 % of the texts. ACC scores only (labels choose nothing here: the rule is
"cover the texts", the study shows what each quantile costs and gives on the tuning corpora).

Writes one JSON line per corpus to ``max_length.jsonl`` beside this file.
Run: ``PYTHONPATH=. python training/studies/max_length.py agnews searchsnippets ...`` (after ``cached_encode.py``).
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from study_rows import append_row, pending  # the script's folder is on sys.path

from hf_textcluster.data import load_benchmark
from hf_textcluster.editing.kmeans import _umap_kmeans_groups, fit_kmeans
from hf_textcluster.evaluation.metrics import clustering_scores
from hf_textcluster.modeling.modeling_utils import TextClusteringPreTrainedModel
from hf_textcluster.models.building import from_encoder_pretrained

torch.set_num_threads(int(os.environ.get("THREADS", 2)))
OUT = Path(__file__).with_name("max_length.jsonl")
DATA = os.environ.get("HF_TEXTCLUSTER_DATA_DIR", "/work/shared/data")
BUCKETS = (32, 64, 128, 256)


def bucket(tokens: float) -> int:
    return next((b for b in BUCKETS if b >= tokens), BUCKETS[-1])


if __name__ == "__main__":
    model = from_encoder_pretrained(TextClusteringPreTrainedModel, None, num_clusters=2)
    for name, z in pending(OUT, sys.argv[1:]):
        labels, idx = z["labels"], z["idx"]
        all_texts = load_benchmark(name, data_dir=DATA)["text"]
        texts = [all_texts[int(i)] for i in idx]
        K = len(np.unique(labels))
        counts = np.array([len(ids) for ids in model.tokenizer(texts, truncation=False)["input_ids"]])
        quantiles = {str(q): float(np.quantile(counts, q)) for q in (0.5, 0.9, 0.95, 0.99)}
        lengths = sorted({32} | {bucket(quantiles[q]) for q in ("0.9", "0.95", "0.99")})
        acc, seconds = {}, {}
        for length in lengths:
            model.config.max_length = length
            t = time.perf_counter()
            emb = z["e0"] if length == 32 else model.embed(texts, show_progress_bar=False, precision="fp32")
            seconds[length] = round(time.perf_counter() - t, 1)
            km = fit_kmeans(emb, K, random_state=0).labels_
            bw = _umap_kmeans_groups(emb, K, random_state=0)
            acc[length] = {
                "kmeans": round(100 * clustering_scores(labels, km)["acc"], 1),
                "bertopic_way": round(100 * clustering_scores(labels, bw)["acc"], 1),
            }
        row = {
            "dataset": name,
            "N": len(texts),
            "K": K,
            "token_quantiles": quantiles,
            "max_tokens": int(counts.max()),
            "buckets": {q: bucket(quantiles[q]) for q in ("0.9", "0.95", "0.99")},
            "acc": acc,
            "encode_seconds": seconds,
        }
        append_row(OUT, row)
        print(json.dumps(row), flush=True)
