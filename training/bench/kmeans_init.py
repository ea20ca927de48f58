"""How the initial k-means starts (``kmeans_init``): the partitions every method's training starts from, per start."""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from hf_textcluster.models.building import from_encoder_pretrained

from .common import add_corpus_arguments, mean_std, run_header
from .store import put_row, save_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``kmeans-init``: the corpora and seeds."""
    add_corpus_arguments(parser)


KMEANS_INIT_ENTRIES = ("k-means++", "umap", "umap groups", "umap + Lloyd", "DEC-CRL random FC_e", "DEC-CRL pca FC_e")


def run(args, store: dict, run_id: str) -> None:
    """Per corpus, on the pretrained MiniLM embeddings: k-means++ (the default start), ``kmeans_init="umap"`` (the
    nearest of the means of the UMAP -> k-means clusters), the UMAP -> k-means clusters themselves (the BERTopic way,
    not servable by a centroid head; the same UMAP run), Lloyd's iterations started from the umap centres, and
    k-means++ where DEC-CRL runs it: after its FC_e (L 128) at its random start and with ``latent_init="pca"``."""
    import torch
    from sklearn.cluster import KMeans

    from hf_textcluster import DECCRLModel
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.editing.kmeans import fit_kmeans
    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.models.deccrl.trainer_deccrl import init_latent_from_pca
    from hf_textcluster.runs.baselines import EmbeddingKMeans

    for name in args.datasets:
        dataset = load_benchmark(name, data_dir=args.data_dir)
        labels = np.asarray(dataset["label"])
        k = dataset.features["label"].num_classes
        embeddings = EmbeddingKMeans(k, show_progress_bar=False).embed(list(dataset["text"]))
        for seed in args.seeds:
            timed = {}
            for entry in ("k-means++", "umap"):
                start = time.perf_counter()
                timed[entry] = (fit_kmeans(embeddings, k, random_state=seed, init=entry), time.perf_counter() - start)
            umap = timed["umap"][0]
            lloyd = KMeans(k, init=umap.cluster_centers_, n_init=1).fit_predict(embeddings)
            partitions = {
                "k-means++": timed["k-means++"][0].labels_,
                "umap": umap.labels_,
                "umap groups": umap.groups_,
                "umap + Lloyd": lloyd,
            }
            torch.manual_seed(seed)  # the model's own FC_e, as a DEC-CRL run builds it
            deccrl = from_encoder_pretrained(DECCRLModel, None, num_clusters=k)
            for entry in ("DEC-CRL random FC_e", "DEC-CRL pca FC_e"):
                if entry.endswith("pca FC_e"):
                    init_latent_from_pca(deccrl, embeddings)
                with torch.no_grad():
                    latent = deccrl.cluster_features(torch.from_numpy(embeddings)).numpy()
                partitions[entry] = fit_kmeans(latent, k, random_state=seed).labels_
            accs = []
            for entry, predicted in partitions.items():
                scores = clustering_scores(labels, predicted)
                accs.append(f"{entry} {100 * scores['acc']:.1f}")
                row = {
                    "section": "kmeans-init",
                    "method": entry,
                    "dataset": name,
                    "seed": seed,
                    "run": run_id,
                    "k": k,
                    "acc": scores["acc"],
                    "nmi": scores["nmi"],
                }
                if entry in timed:
                    row["seconds"] = round(timed[entry][1], 1)
                put_row(store, row)
            save_store(store)
            print(f"{name:15s} seed {seed} " + " | ".join(accs), flush=True)


def render(store: dict, rows: list[dict]) -> list[str]:
    """One column per start, one line per corpus."""
    krows = [r for r in rows if r["section"] == "kmeans-init"]
    if not krows:
        return []
    from hf_textcluster.data import BENCHMARKS

    out = (
        ["## How the initial k-means starts (`kmeans_init`)", ""]
        + run_header(store, krows)
        + [
            "",
            "ACC / NMI of the partitions every method's training starts from, on the pretrained MiniLM embeddings.",
            '*k-means++*: scikit-learn\'s, 10 restarts (the default). *umap*: `kmeans_init="umap"` — the nearest of '
            "the",
            "means of the clusters k-means finds on a UMAP reduction (BERTopic's settings), what a centroid head "
            "serves.",
            "*umap groups*: those UMAP clusters themselves (the BERTopic way with the true K). *umap + Lloyd*: Lloyd's",
            "iterations in the original space started from the umap centres. *DEC-CRL random / pca FC_e*: k-means++ "
            "where",
            "DEC-CRL runs it, on its latent h = FC_e(embedding) (L 128), `FC_e` at its random start (the default) or",
            '`latent_init="pca"`. Seconds: the k-means (+ UMAP) fit.',
            "",
            "| dataset | K | "
            + " | ".join(f"{e} ACC / NMI" for e in KMEANS_INIT_ENTRIES)
            + " | seconds k-means++ / umap | seeds |",
            "|---|---|" + "---|" * len(KMEANS_INIT_ENTRIES) + "---|---|",
        ]
    )
    for name in BENCHMARKS:
        d = [r for r in krows if r["dataset"] == name]
        if not d:
            continue
        cells = []
        for entry in KMEANS_INIT_ENTRIES:
            e = [r for r in d if r["method"] == entry]
            cells.append(f"{mean_std([r['acc'] for r in e])} / {mean_std([r['nmi'] for r in e])}" if e else "–")
        secs = [statistics.mean(r["seconds"] for r in d if r["method"] == m) for m in ("k-means++", "umap")]
        out.append(
            f"| {name} | {d[0]['k']} | " + " | ".join(cells) + f" | {secs[0]:.0f} / {secs[1]:.0f} | "
            f"{len({r['seed'] for r in d})} |"
        )
    return out + [""]
