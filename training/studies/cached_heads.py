"""Cheap candidates trained on cached (frozen) MiniLM embeddings, against the BERTopic way, per tuning corpus."""

import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.cluster import KMeans

from hf_textcluster.editing.kmeans import _umap_kmeans_groups
from hf_textcluster.evaluation.metrics import clustering_scores

torch.set_num_threads(int(os.environ.get("THREADS", 2)))


def knn(e, k):
    x = torch.from_numpy(e)
    x = F.normalize(x, dim=1)
    out = []
    for s in range(0, len(x), 2048):
        sim = x[s : s + 2048] @ x.T
        sim[torch.arange(sim.shape[0]), torch.arange(s, s + sim.shape[0])] = -2
        out.append(sim.topk(k, dim=1).indices)
    return torch.cat(out)


def scan(e, K, seed=0, k=20, heads=5, epochs=60, ent_w=5.0, hidden=0, lr=1e-3, bs=256, selflabel=0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    x = F.normalize(torch.from_numpy(e), dim=1)
    nn_idx = knn(e, k)
    d = x.shape[1]
    body = torch.nn.Sequential(torch.nn.Linear(d, hidden), torch.nn.ReLU()) if hidden else torch.nn.Identity()
    hd = hidden or d
    hs = torch.nn.ModuleList([torch.nn.Linear(hd, K) for _ in range(heads)])
    params = list(body.parameters()) + list(hs.parameters())
    opt = torch.optim.Adam(params, lr=lr, weight_decay=1e-4)
    n = len(x)
    steps = max(200, epochs * n // bs)
    for _step in range(steps):
        i = torch.randint(0, n, (bs,), generator=g)
        j = nn_idx[i, torch.randint(0, k, (bs,), generator=g)]
        zi, zj = body(x[i]), body(x[j])
        loss_all = []
        for h in hs:
            pi, pj = h(zi).softmax(-1), h(zj).softmax(-1)
            cons = -torch.log((pi * pj).sum(-1).clamp_min(1e-8)).mean()
            pm = pi.mean(0)
            ent = (pm * torch.log(pm.clamp_min(1e-8))).sum()  # negative entropy
            loss_all.append(cons + ent_w * ent)
        loss = torch.stack(loss_all).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        # choose the head with the lowest total loss over the whole data (label-free, SCAN's rule)
        z = body(x)
        best, best_loss = None, 1e9
        for h in hs:
            p = h(z).softmax(-1)
            pn = p[nn_idx]  # n,k,K
            cons = -torch.log((p[:, None, :] * pn).sum(-1).clamp_min(1e-8)).mean()
            pm = p.mean(0)
            total = cons + ent_w * (pm * torch.log(pm.clamp_min(1e-8))).sum()
            if total < best_loss:
                best, best_loss = h, float(total)
        probs = best(z).softmax(-1)
    return probs.argmax(-1).numpy(), (body, best)


def sccl_cache(e0, e1, K, seed=0, steps=1500, bs=256, temp=0.5, eta=1.0, lr=1e-3, contrast=1.0):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    x0, x1 = torch.from_numpy(e0), torch.from_numpy(e1)
    d = x0.shape[1]
    adapter = torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.ReLU(), torch.nn.Linear(d, d))
    torch.nn.init.zeros_(adapter[2].weight)
    torch.nn.init.zeros_(adapter[2].bias)

    def f(v):
        return v + adapter(v)

    proj = torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.ReLU(), torch.nn.Linear(d, 128))
    km = KMeans(K, n_init=10, random_state=seed).fit(e0)
    centers = torch.nn.Parameter(torch.from_numpy(km.cluster_centers_.astype(np.float32)))
    opt = torch.optim.Adam(list(adapter.parameters()) + list(proj.parameters()) + [centers], lr=lr)
    n = len(x0)
    for _step in range(steps):
        i = torch.randint(0, n, (bs,), generator=g)
        a, b = f(x0[i]), f(x1[i])
        za, zb = F.normalize(proj(a), dim=1), F.normalize(proj(b), dim=1)
        z = torch.cat([za, zb])
        sim = z @ z.T / temp
        sim.fill_diagonal_(-1e9)
        tgt = torch.cat([torch.arange(bs, 2 * bs), torch.arange(bs)])
        lc = F.cross_entropy(sim, tgt)
        q = 1.0 / (1.0 + torch.cdist(a, centers) ** 2)
        q = q / q.sum(1, keepdim=True)
        p = q**2 / q.sum(0)
        p = (p / p.sum(1, keepdim=True)).detach()
        lk = (p * torch.log(p / q.clamp_min(1e-8))).sum(1).mean()
        loss = contrast * lc + eta * lk
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        z = f(x0)
        q = 1.0 / (1.0 + torch.cdist(z, centers) ** 2)
    return q.argmax(1).numpy(), z.numpy()


def acc(labels, pred):
    return round(100 * clustering_scores(labels, pred)["acc"], 1)


if __name__ == "__main__":
    rows = []
    for name in sys.argv[1:]:
        z = np.load(f"/tmp/emb/{name}.npz")
        e0, e1, labels = z["e0"], z["e1"], z["labels"]
        K = len(np.unique(labels))
        r = {"dataset": name, "N": len(e0), "K": K}
        t = time.perf_counter()
        r["pre_kmeans"] = acc(labels, KMeans(K, n_init=10, random_state=0).fit_predict(e0))
        r["t_kmeans"] = round(time.perf_counter() - t, 1)
        t = time.perf_counter()
        r["bertopic_way"] = acc(labels, _umap_kmeans_groups(e0, K, random_state=0))
        r["t_umap"] = round(time.perf_counter() - t, 1)
        for variant, kw in json.loads(os.environ.get("SCAN", '{"scan": {}}')).items():
            t = time.perf_counter()
            pred, _ = scan(e0, K, **kw)
            r[variant] = acc(labels, pred)
            r["t_" + variant] = round(time.perf_counter() - t, 1)
        if os.environ.get("SCCL"):
            t = time.perf_counter()
            head, zz = sccl_cache(e0, e1, K)
            r["sccl_head"] = acc(labels, head)
            r["sccl_kmeans"] = acc(labels, KMeans(K, n_init=10, random_state=0).fit_predict(zz))
            r["sccl_umap"] = acc(labels, _umap_kmeans_groups(zz, K, random_state=0))
            r["t_sccl"] = round(time.perf_counter() - t, 1)
        if os.environ.get("DEC"):
            t = time.perf_counter()
            head, zz = sccl_cache(e0, e1, K, contrast=0.0)
            r["dec_head"] = acc(labels, head)
            r["dec_kmeans"] = acc(labels, KMeans(K, n_init=10, random_state=0).fit_predict(zz))
            r["t_dec"] = round(time.perf_counter() - t, 1)
        print(json.dumps(r), flush=True)
