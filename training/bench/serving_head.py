"""How a partition made in a UMAP reduction is served: the linear head fitted on its clusters, per head.

A UMAP -> k-means partition cannot be served by the nearest of its centres in the embedding space (the clusters were
found elsewhere); a linear head on the L2-normalised embeddings, fitted on its clusters, serves it, and its argmax is
what the model then gives. On the models ``train --method auto`` runs kept (``python -m training.bench auto``), in
each space a candidate is made in (the pretrained encoder's and each trained signal's), this section scores the UMAP
k-means partition itself (the BERTopic way: not servable) beside the heads that serve it.
"""

from __future__ import annotations

import argparse

import numpy as np

from .common import add_corpus_arguments, mean_std, run_header
from .store import put_row, run_dir, save_store

SECTION = "serving-head"
# head -> what the table calls it
HEADS = {
    "umap groups": "UMAP k-means itself",
    "lda": "shrunk LDA, no rounds",
    "lr-c10": "logistic regression, C = 10",
    "lr-c1": "logistic regression, C = 1",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``serving-head``: the corpora and seeds whose kept ``auto`` runs are used."""
    add_corpus_arguments(parser)


def run(args, store: dict, run_id: str) -> None:
    """Per kept ``auto`` run and space: the UMAP k-means partition of the run's training texts (the run's seed), and
    the argmax of each head fitted on it, scored against the labels, with their agreement with the partition."""
    from hf_textcluster.choosing.criteria import PRETRAINED
    from hf_textcluster.choosing.linear_heads import DISTIL_C, distil_partition
    from hf_textcluster.choosing.refinement import refine_partition
    from hf_textcluster.choosing.serving import partition_features
    from hf_textcluster.editing.kmeans import fit_kmeans
    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.models import get_method
    from hf_textcluster.runs.gather_candidates import pretrained_embedder
    from hf_textcluster.runs.signals import SIGNALS, SIGNALS_DIR

    from .auto import SECTION as AUTO
    from .auto import corpus_dataset

    for name in args.datasets:
        for seed in args.seeds:
            folder = run_dir(AUTO, name, seed, "")
            if not (folder / SIGNALS_DIR).is_dir():
                print(f"{name:15s} seed {seed}: no kept auto run", flush=True)
                continue
            # the texts as the auto run read them
            dataset = corpus_dataset(args.data_dir, name)
            texts, labels = list(dataset["text"]), np.asarray(dataset["label"])
            models = {
                signal: get_method(SIGNALS[signal].method).model_class.from_pretrained(folder / SIGNALS_DIR / signal)
                for signal in SIGNALS
            }
            models[PRETRAINED] = pretrained_embedder(next(iter(models.values())), None)
            for space, model in models.items():
                features = partition_features(model, model.embed(texts, show_progress_bar=False))
                k = model.config.num_clusters
                groups = fit_kmeans(features, k, random_state=seed, init="umap").groups_
                fits = {
                    "lda": refine_partition(features, groups, num_clusters=k, max_rounds=0, random_state=seed),
                    "lr-c10": distil_partition(features, groups, num_clusters=k, C=DISTIL_C, random_state=seed),
                    "lr-c1": distil_partition(features, groups, num_clusters=k, C=1.0, random_state=seed),
                }
                served = {"umap groups": groups, **{head: fit.labels for head, fit in fits.items()}}
                cells = []
                for head, predicted in served.items():
                    scores = clustering_scores(labels, predicted)
                    put_row(
                        store,
                        {
                            "section": SECTION,
                            "method": f"{space}/{head}",
                            "dataset": name,
                            "seed": seed,
                            "run": run_id,
                            "space": space,
                            "head": head,
                            "k": k,
                            "acc": scores["acc"],
                            "nmi": scores["nmi"],
                            "agreement": float(np.mean(predicted == groups)),
                        },
                    )
                    cells.append(f"{head} {100 * scores['acc']:.1f}")
                save_store(store)
                print(f"{name:15s} seed {seed} {space:14s} " + " | ".join(cells), flush=True)


def render(store: dict, rows: list[dict]) -> list[str]:
    """One line per corpus and space: ACC of the UMAP partition and of each head (agreement with it)."""
    hrows = [r for r in rows if r["section"] == SECTION]
    if not hrows:
        return []
    from hf_textcluster.data import BENCHMARKS

    out = (
        ["## How a partition is served", ""]
        + run_header(store, hrows)
        + [
            "",
            "A UMAP -> k-means partition (the BERTopic way) is served by a linear head fitted on its clusters, on the",
            "L2-normalised embeddings of the space it was made in; the head's argmax is what the model gives (and what",
            "`train --method auto` scores as the `umap_kmeans` candidates). On the models the `auto` runs kept: the",
            "pretrained MiniLM and each trained signal. ACC in %, mean over seeds (agreement with the UMAP partition",
            "in brackets). *shrunk LDA, no rounds*: the head before; *C = 10*: `distil_partition`'s default, what",
            "serves `umap_kmeans`, the consensus, a pretrained candidate and `refine --serve`; *C = 1*: a more",
            "regularised head, measured, not used: it moves the texts the embedding space places with another",
            "cluster's members.",
            "",
            "| dataset | space | K | " + " | ".join(HEADS.values()) + " | seeds |",
            "|---|---|---|" + "---|" * len(HEADS) + "---|",
        ]
    )
    for name in BENCHMARKS:
        for space in dict.fromkeys(r["space"] for r in hrows if r["dataset"] == name):
            d = [r for r in hrows if r["dataset"] == name and r["space"] == space]
            cells = []
            for head in HEADS:
                e = [r for r in d if r["head"] == head]
                kept = f" ({100 * np.mean([r['agreement'] for r in e]):.0f}%)" if e and head != "umap groups" else ""
                cells.append(f"{mean_std([r['acc'] for r in e])}{kept}" if e else "–")
            seeds = len({r["seed"] for r in d})
            out.append(f"| {name} | {space} | {d[0]['k']} | " + " | ".join(cells) + f" | {seeds} |")
    return [*out, ""]
