"""With K given: which label-free scores see the BERTopic way merge two classes that plain k-means keeps apart.

The candidates are the committed candidate store's (``training/bench/candidates/auto-<corpus>-seed0.npz``: the
default run's partitions of every text at the true K), scored on a seeded subsample of at most 8,000 of the same texts
(their pretrained MiniLM embeddings, fp32, cached in ``/tmp/emb_store/<corpus>.npz``). Per candidate: ACC and NMI
(labels score only), the largest cluster's share, and label-free scores that fewer, larger clusters cannot win by
size alone — the held-out 10-neighbour vote's agreement with the partition adjusted for chance (Cohen's kappa, ARI)
beside the package's NMI form, in the pretrained and in the lexical space, and the cosine silhouette. Run:
``python training/studies/merge_guard.py tweet agnews ...`` (one JSON line a corpus in ``merge_guard.jsonl``).

``SUBSETS=1`` grows the tuning set as the layout study did: per corpus two seeded draws of 3 and of 5 of its classes
(at least 300 texts) of ``cached_encode.py``'s subsample (``/tmp/emb/<corpus>.npz``), each partitioned afresh by the
BERTopic way (the package's, three layouts) and by plain k-means at the draw's K, scored alike
(``merge_guard_subsets.jsonl``).
"""

import json
import os
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score, cohen_kappa_score, normalized_mutual_info_score
from sklearn.neighbors import KNeighborsClassifier
from study_rows import append_row

from hf_textcluster.choosing.criteria import cosine_silhouette, lexical_space
from hf_textcluster.choosing.linear_heads import l2_normalize
from hf_textcluster.evaluation.metrics import cluster_accuracy
from training.bench import candidate_store
from training.bench.auto import corpus_dataset

OUT = Path(__file__).with_name("merge_guard.jsonl")
CACHE = Path("/tmp/emb_store")
MAX_N = 8000
CANDIDATES = ("pretrained/umap_kmeans", "pretrained/kmeans", "pretrained/scan", "consensus")


def held_out_votes(x: np.ndarray, y: np.ndarray, seed: int = 0) -> dict[str, float]:
    """Two halves; a 10-neighbour cosine vote in one predicts the other's clusters: NMI, kappa and ARI of the
    predictions with the partition, averaged over both directions."""
    rows = np.random.default_rng(seed).permutation(len(y))
    halves = (rows[: len(rows) // 2], rows[len(rows) // 2 :])
    scores: dict[str, list[float]] = {"nmi": [], "kappa": [], "ari": []}
    for fit, held in (halves, halves[::-1]):
        vote = KNeighborsClassifier(n_neighbors=10, metric="cosine", algorithm="brute").fit(x[fit], y[fit])
        p = vote.predict(x[held])
        scores["nmi"].append(normalized_mutual_info_score(y[held], p))
        scores["kappa"].append(cohen_kappa_score(y[held], p))
        scores["ari"].append(adjusted_rand_score(y[held], p))
    return {k: float(np.mean(v)) for k, v in scores.items()}


def embeddings(name: str, texts: list[str]) -> np.ndarray:
    path = CACHE / f"{name}.npz"
    if not path.exists():
        from hf_textcluster.modeling.modeling_utils import TextClusteringPreTrainedModel
        from hf_textcluster.models.building import from_encoder_pretrained

        model = from_encoder_pretrained(TextClusteringPreTrainedModel, None, num_clusters=2)
        CACHE.mkdir(exist_ok=True)
        np.savez(path, e=model.embed(texts, show_progress_bar=False, precision="fp32").astype(np.float32))
    return np.load(path)["e"].astype(np.float64)


def score(labels: np.ndarray, y: np.ndarray, spaces: dict) -> dict[str, float]:
    y = np.unique(y, return_inverse=True)[1]
    scores = {
        "acc": 100 * cluster_accuracy(labels, y),
        "nmi": 100 * normalized_mutual_info_score(labels, y),
        "largest": float(np.bincount(y).max() / len(y)),
    }
    for space, x in spaces.items():
        if x is None:
            continue
        for key, value in held_out_votes(x, y).items():
            scores[f"vote_{key}_{space}"] = value
        scores[f"silhouette_{space}"] = cosine_silhouette(x, y)
    return {k: round(v, 4) for k, v in scores.items()}


def subsets(names: list[str]) -> None:
    from study_rows import class_subsets, pending

    from hf_textcluster.data import load_benchmark
    from hf_textcluster.editing.kmeans import _umap_kmeans_groups, fit_kmeans

    out = OUT.with_name("merge_guard_subsets.jsonl")
    for name, cached in pending(out, names):
        dataset = load_benchmark(name, data_dir="/work/shared/data")
        texts_all = [dataset[int(i)]["text"] for i in cached["idx"]]
        x_all, labels_all = l2_normalize(cached["e0"].astype(np.float64)), cached["labels"]
        row: dict = {"dataset": name, "tasks": {}}
        for task, rows in class_subsets(labels_all, (3, 5), 2, 300):
            if task == "whole":
                continue
            x, labels = x_all[rows], labels_all[rows]
            k = int(np.unique(labels).size)
            spaces = {"pretrained": x, "lexical": lexical_space([texts_all[i] for i in rows])}
            parts = {
                CANDIDATES[0]: _umap_kmeans_groups(x.astype(np.float32), k),
                CANDIDATES[1]: np.asarray(fit_kmeans(x, k, random_state=0).labels_),
            }
            row["tasks"][task] = {
                "n": int(len(rows)),
                "k": k,
                **{c: score(labels, p, spaces) for c, p in parts.items()},
            }
            print(name, task, {c: row["tasks"][task][c]["acc"] for c in parts}, flush=True)
        append_row(out, row)


def main(names: list[str]) -> None:
    done = {json.loads(line)["dataset"] for line in OUT.read_text().splitlines()} if OUT.exists() else set()
    for name in [n for n in names if n not in done]:
        found = candidate_store.load(candidate_store.STORE_DIR / f"auto-{name}-seed0.npz")
        assert found is not None, name
        partitions = found[0]
        dataset = corpus_dataset("/work/shared/data", name)
        n = len(dataset)
        idx = np.sort(np.random.default_rng(0).permutation(n)[:MAX_N]) if n > MAX_N else np.arange(n)
        labels = np.asarray(dataset["label"])[idx]
        texts = [dataset[int(i)]["text"] for i in idx]
        spaces = {"pretrained": l2_normalize(embeddings(name, texts)), "lexical": lexical_space(texts)}
        row: dict = {"dataset": name, "n": int(len(idx)), "k": int(np.unique(labels).size), "candidates": {}}
        for cand in CANDIDATES:
            row["candidates"][cand] = score(labels, partitions[cand][idx], spaces)
        agree = {
            a: {b: round(adjusted_rand_score(partitions[a][idx], partitions[b][idx]), 4) for b in CANDIDATES if b != a}
            for a in CANDIDATES
        }
        row["ari_between"] = agree
        append_row(OUT, row)
        way, km = row["candidates"][CANDIDATES[0]], row["candidates"][CANDIDATES[1]]
        print(
            name,
            " ".join(f"{k}={way[k]:.3f}/{km[k]:.3f}" for k in way),
            f"ari(way,kmeans)={agree[CANDIDATES[0]][CANDIDATES[1]]}",
            flush=True,
        )


if __name__ == "__main__":
    (subsets if os.environ.get("SUBSETS") else main)(sys.argv[1:])
