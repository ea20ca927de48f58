"""Cache the pretrained MiniLM embeddings of a tuning corpus (seeded subsample) and of one word-deletion view."""

import os
import sys
import time

import numpy as np
import torch

from hf_textcluster.data import load_benchmark
from hf_textcluster.data.augmenters import RandomWordDeletion
from hf_textcluster.modeling.modeling_utils import TextClusteringPreTrainedModel
from hf_textcluster.models.building import from_encoder_pretrained

MAX_N = int(os.environ.get("MAX_N", 8000))
torch.set_num_threads(2)
model = from_encoder_pretrained(TextClusteringPreTrainedModel, None, num_clusters=2)
for name in sys.argv[1:]:
    out = f"/tmp/emb/{name}.npz"
    if os.path.exists(out):
        continue
    ds = load_benchmark(name, data_dir="/work/shared/data")
    n = len(ds)
    idx = np.sort(np.random.default_rng(0).permutation(n)[:MAX_N]) if n > MAX_N else np.arange(n)
    texts = [ds[int(i)]["text"] for i in idx]
    labels = np.asarray(ds["label"])[idx]
    t0 = time.perf_counter()
    e0 = model.embed(texts, show_progress_bar=False, precision="fp32")
    t_enc = time.perf_counter() - t0
    views = RandomWordDeletion(0.2)(texts, seed=0, view=1)
    e1 = model.embed(views, show_progress_bar=False, precision="fp32")
    np.savez(out, e0=e0.astype(np.float32), e1=e1.astype(np.float32), labels=labels, idx=idx, enc_seconds=t_enc)
    print(name, len(texts), f"{t_enc:.0f}s", flush=True)
