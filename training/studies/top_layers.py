"""Fine-tuning at a fraction of its cost: only the encoder's top layers trained, on the lower layers' token states
cached during the one encoding pass the BERTopic way makes anyway.

Per tuning corpus (the seeded subsample of ``cached_encode.py``, at most 8,000 texts, K = its classes):

1. **The BERTopic way**, timed: one length-sorted MiniLM pass (fp32, 32 tokens, as ``embed``) that also keeps each
   text's token states below the top ``TOP`` layers, then UMAP -> k-means (the package's three layouts, the most
   agreeing kept: ``editing.kmeans._umap_kmeans_groups``).
2. **Each variant**, timed on top of it: a copy of the top ``TOP`` layers trained for ``STEPS`` steps of ``BATCH``
   texts (AdamW, dropout on: two passes of a text through the trained layers are two views, so the cache stays
   valid), then the top layers re-run over every cached text and the BERTopic way (and plain k-means) on the new
   embeddings, at each checkpoint of ``CHECKPOINTS``. Variants (the objectives the issue names):

   - ``simcse``: instance contrast between the two dropout views (NT-Xent, temperature 0.05).
   - ``sccl``: ``simcse`` + SCCL's clustering term (KL to the sharpened target of a Student's t assignment to K
     centres, started at the means of the BERTopic way's clusters).
   - ``neighbours``: the positive of a text is one of its 10 nearest pretrained neighbours' view (intents:
     neighbours as positives, no word deletion).
   - ``dec``: ``sccl``'s clustering term alone (DEC's self-training; one pass per step, no contrast).
   - ``scan``: SCAN's neighbour consistency (-log <p_i, p_j> for a neighbour j, minus 5 x the entropy of the mean
     assignment) through a linear head started at the BERTopic way's cluster means.

Labels only score (ACC, NMI). Results: one JSON line per corpus in ``top_layers.jsonl`` (resumable). Seconds are
wall time on this machine with the load average beside them (a timing at a load above 1.5 is not a measurement).
Run: ``python training/studies/top_layers.py tweet agnews ...``; ``VARIANTS=sccl,scan STEPS=300 TOP=2``;
``--table`` prints the results as markdown.
"""

import copy
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from study_rows import append_row

from hf_textcluster.data import load_benchmark
from hf_textcluster.editing.kmeans import _umap_kmeans_groups, exact_neighbours, fit_kmeans
from hf_textcluster.evaluation.metrics import cluster_accuracy, normalized_mutual_info
from hf_textcluster.modeling.hardware import cpu_capability
from hf_textcluster.modeling.modeling_utils import TextClusteringPreTrainedModel
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.reuse import reusing_results

MAX_N = int(os.environ.get("MAX_N", 8000))
TOP = int(os.environ.get("TOP", 2))
STEPS = int(os.environ.get("STEPS", 300))
BATCH = int(os.environ.get("BATCH", 64))
LR = float(os.environ.get("LR", 5e-5))
CHECKPOINTS = [int(s) for s in os.environ.get("CHECKPOINTS", "100,300").split(",")]
VARIANTS = os.environ.get("VARIANTS", "simcse,sccl,neighbours,scan").split(",")
OUT = Path(__file__).parent / os.environ.get("OUT", "top_layers.jsonl")
NEIGHBOURS = 10
torch.set_num_threads(2)


def additive_mask(mask: torch.Tensor) -> torch.Tensor:
    return (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min


def run_top(layers, states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean-pooled output of ``layers`` over cached token states (as the model pools, not normalised)."""
    h, ext = states, additive_mask(mask)
    for layer in layers:
        h = layer(h, attention_mask=ext)
        h = h[0] if isinstance(h, tuple) else h
    m = mask.unsqueeze(-1).float()
    return (h * m).sum(1) / m.sum(1).clamp_min(1e-9)


def encode_and_cache(model, texts: list[str], batch_size: int = 64):
    """Embeddings of every text (length-sorted batches, as ``embed``) and each text's token states below ``TOP``."""
    enc = model.encoder.eval()
    order = np.argsort([len(t) for t in texts])
    embeddings = np.zeros((len(texts), enc.config.hidden_size), dtype=np.float32)
    cache: list[torch.Tensor] = [None] * len(texts)  # type: ignore[list-item]
    below = enc.config.num_hidden_layers - TOP
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            inputs = model.tokenize([texts[i] for i in rows])
            out = enc(**inputs, output_hidden_states=True)
            embeddings[rows] = model.pool(out.last_hidden_state, inputs["attention_mask"]).numpy()
            lengths = inputs["attention_mask"].sum(1)
            for j, i in enumerate(rows):
                cache[i] = out.hidden_states[below][j, : int(lengths[j])].clone()
    return embeddings, cache


def batch_of(cache, rows) -> tuple[torch.Tensor, torch.Tensor]:
    states = [cache[i] for i in rows]
    length = max(s.shape[0] for s in states)
    padded = torch.zeros(len(states), length, states[0].shape[1])
    mask = torch.zeros(len(states), length, dtype=torch.long)
    for j, s in enumerate(states):
        padded[j, : s.shape[0]], mask[j, : s.shape[0]] = s, 1
    return padded, mask


def reencode(layers, cache, batch_size: int = 256) -> np.ndarray:
    order = np.argsort([c.shape[0] for c in cache])
    out = np.zeros((len(cache), cache[0].shape[1]), dtype=np.float32)
    layers.eval()
    with torch.inference_mode():
        for start in range(0, len(cache), batch_size):
            rows = order[start : start + batch_size]
            out[rows] = run_top(layers, *batch_of(cache, rows)).numpy()
    layers.train()
    return out


def nt_xent(a: torch.Tensor, b: torch.Tensor, temperature: float) -> torch.Tensor:
    """Symmetric InfoNCE: row i of ``a`` and of ``b`` are positives, every other row of both a negative."""
    z = F.normalize(torch.cat([a, b]), dim=-1)
    sim = z @ z.T / temperature
    sim.fill_diagonal_(float("-inf"))
    n = a.shape[0]
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(sim, targets)


def student_t(z: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    q = 1.0 / (1.0 + torch.cdist(z, centres).pow(2))
    return q / q.sum(1, keepdim=True)


def train_variant(variant, layers, cache, neighbours, centres, rng, on_checkpoint):
    head = None
    params = list(layers.parameters())
    if variant in ("sccl", "dec"):
        head = torch.nn.Parameter(torch.as_tensor(centres))
        params.append(head)
    elif variant == "scan":
        head = torch.nn.Linear(centres.shape[1], centres.shape[0])
        with torch.no_grad():
            head.weight.copy_(torch.as_tensor(F.normalize(torch.as_tensor(centres), dim=-1)) * 10)
            head.bias.zero_()
        params += list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=LR)
    layers.train()
    seconds = 0.0
    for step in range(1, STEPS + 1):
        t0 = time.perf_counter()
        rows = rng.choice(len(cache), BATCH, replace=False)
        z1 = run_top(layers, *batch_of(cache, rows))
        if variant in ("neighbours", "scan"):
            partners = neighbours[rows, rng.integers(0, NEIGHBOURS, BATCH)]
            z2 = run_top(layers, *batch_of(cache, partners))
        elif variant != "dec":
            z2 = run_top(layers, *batch_of(cache, rows))
        if variant in ("simcse", "neighbours"):
            loss = nt_xent(z1, z2, 0.05)
        elif variant == "sccl":
            q = student_t(z1, head)
            p = (q.pow(2) / q.sum(0)).detach()
            p = p / p.sum(1, keepdim=True)
            loss = nt_xent(z1, z2, 0.05) + F.kl_div(q.log(), p, reduction="batchmean")
        elif variant == "dec":  # the clustering term alone: DEC's self-training, one pass per step
            q = student_t(z1, head)
            p = (q.pow(2) / q.sum(0)).detach()
            loss = F.kl_div(q.log(), p / p.sum(1, keepdim=True), reduction="batchmean")
        else:  # scan
            p1, p2 = F.softmax(head(F.normalize(z1, dim=-1)), -1), F.softmax(head(F.normalize(z2, dim=-1)), -1)
            consistency = -torch.log((p1 * p2).sum(1).clamp_min(1e-7)).mean()
            mean = p1.mean(0)
            loss = consistency + 5.0 * (mean * torch.log(mean.clamp_min(1e-7))).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        seconds += time.perf_counter() - t0
        if step in CHECKPOINTS:
            on_checkpoint(step, seconds, float(loss.detach()))


def scores(labels, predicted) -> dict:
    return {
        "acc": round(100 * cluster_accuracy(labels, predicted), 2),
        "nmi": round(100 * normalized_mutual_info(labels, predicted), 2),
    }


def bertopic_way(features, k) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    with reusing_results():
        groups = _umap_kmeans_groups(features, k, 10, 0)
    return groups, time.perf_counter() - t0


def study(name: str, model) -> dict:
    ds = load_benchmark(name, data_dir=os.environ.get("HF_TEXTCLUSTER_DATA_DIR", "/work/shared/data"))
    n = len(ds)
    idx = np.sort(np.random.default_rng(0).permutation(n)[:MAX_N]) if n > MAX_N else np.arange(n)
    texts = [ds[int(i)]["text"] for i in idx]
    labels = np.asarray(ds["label"])[idx]
    k = len(np.unique(labels))
    row = {
        "dataset": name,
        "n": len(texts),
        "k": k,
        "top": TOP,
        "batch": BATCH,
        "lr": LR,
        "steps": STEPS,
        "cpu": cpu_capability(),
        "load_before": os.getloadavg()[0],
    }
    t0 = time.perf_counter()
    e0, cache = encode_and_cache(model, texts)
    t_encode = time.perf_counter() - t0
    groups, t_way = bertopic_way(e0, k)
    row["bertopic_way"] = {
        **scores(labels, groups),
        "seconds": round(t_encode + t_way, 1),
        "encode_seconds": round(t_encode, 1),
        "umap_kmeans_seconds": round(t_way, 1),
    }
    row["kmeans"] = scores(labels, fit_kmeans(e0, k).labels_)
    t0 = time.perf_counter()
    neighbours = exact_neighbours(e0, NEIGHBOURS + 1)[0][:, 1:]
    t_neighbours = time.perf_counter() - t0
    centres = np.stack([e0[groups == c].mean(0) for c in range(k)]).astype(np.float32)
    print(name, len(texts), k, row["bertopic_way"], row["kmeans"], flush=True)
    top_layers = model.encoder.encoder.layer[-TOP:]
    for variant in VARIANTS:
        layers = copy.deepcopy(top_layers)
        curve = []

        def on_checkpoint(step, seconds, loss, layers=layers, curve=curve, variant=variant):
            t0 = time.perf_counter()
            e1 = reencode(layers, cache)
            t_re = time.perf_counter() - t0
            served, t_way1 = bertopic_way(e1, k)
            extra = t_neighbours if variant in ("neighbours", "scan") else 0.0
            total = row["bertopic_way"]["seconds"] + extra + seconds + t_re + t_way1
            point = {
                "step": step,
                "loss": round(loss, 4),
                "way": scores(labels, served),
                "kmeans": scores(labels, fit_kmeans(e1, k).labels_),
                "train_seconds": round(seconds, 1),
                "seconds": round(total, 1),
                "x_way": round(total / row["bertopic_way"]["seconds"], 2),
                "load": os.getloadavg()[0],
            }
            curve.append(point)
            print(name, variant, point, flush=True)

        train_variant(variant, layers, cache, neighbours, centres, np.random.default_rng(0), on_checkpoint)
        row[variant] = curve
    return row


def table(rows: list[dict]) -> str:
    """Markdown: per corpus the BERTopic way's ACC / NMI and seconds, then each variant's BERTopic way on the trained
    embeddings at each checkpoint as ACC / NMI (its wall time over the BERTopic way's)."""
    variants = [v for v in VARIANTS if any(v in r for r in rows)]
    head = ["corpus", "N", "K", "BERTopic way", "s", *[f"{v} @ {c}" for v in variants for c in CHECKPOINTS]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        way = r["bertopic_way"]
        cells = [
            r["dataset"],
            f"{r['n']:,}",
            str(r["k"]),
            f"{way['acc']:.1f} / {way['nmi']:.1f}",
            f"{way['seconds']:.0f}",
        ]
        for v in variants:
            points = {p["step"]: p for p in r.get(v, [])}
            for c in CHECKPOINTS:
                p = points.get(c)
                cells.append(f"{p['way']['acc']:.1f} / {p['way']['nmi']:.1f} ({p['x_way']:.1f}x)" if p else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:] == ["--table"]:
        print(table([json.loads(line) for line in OUT.read_text().splitlines()]))
        sys.exit()
    done = {json.loads(line)["dataset"] for line in OUT.read_text().splitlines()} if OUT.exists() else set()
    model = from_encoder_pretrained(TextClusteringPreTrainedModel, None, num_clusters=2)
    for corpus in sys.argv[1:]:
        if corpus not in done:
            append_row(OUT, study(corpus, model))
