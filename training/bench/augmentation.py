"""What the augmented views keep of the label signal: how far a precomputed view moves its text in MiniLM space and
whether it crosses cluster or class boundaries."""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from .common import add_corpus_arguments, run_header
from .store import put_row, save_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``augmentation``: the corpora, seeds and the views' family."""
    add_corpus_arguments(parser)
    parser.add_argument(
        "--augmentation",
        default=None,
        help="The views' family (default: sccl_contextual, the SCCL authors' contextual views).",
    )


def run(args, store: dict, run_id: str) -> None:
    """Per corpus: how far the precomputed views (``--augmentation``, default the SCCL authors' contextual ones) move
    a text in MiniLM space, and whether they cross cluster or class boundaries: the instance contrastive loss pulls
    a text and its views together, so a view that lands among another class's texts teaches the encoder to merge
    classes. Measured on the pretrained encoder (what the first steps of training see)."""
    import torch
    from sklearn.cluster import KMeans

    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.runs.baselines import EmbeddingKMeans

    from .precomputed import load_with_views

    family = args.augmentation or "sccl_contextual"
    for name in args.datasets:
        dataset = load_with_views(name, family, data_dir=args.data_dir)
        labels = np.asarray(dataset["label"])
        k = dataset.features["label"].num_classes
        start = time.perf_counter()
        n = len(labels)  # the texts and both views in one pass (one encoder load)
        everything = EmbeddingKMeans(k, show_progress_bar=False).embed(
            [text for column in ("text", "text_aug1", "text_aug2") for text in dataset[column]]
        )
        texts, views = everything[:n], [everything[n : 2 * n], everything[2 * n :]]
        embed_seconds = time.perf_counter() - start
        originals = torch.from_numpy(texts)
        for seed in args.seeds:
            kmeans = KMeans(k, n_init=10, random_state=seed).fit(texts)
            row = {
                "section": "augmentation",
                "method": family,
                "dataset": name,
                "seed": seed,
                "run": run_id,
                "num_texts": len(labels),
                "k": k,
                "embed_seconds": round(embed_seconds, 1),
                "text_kmeans_acc": clustering_scores(labels, kmeans.labels_)["acc"],
            }
            cos, moved, own_first, nearest_same_class, view_acc = [], [], [], [], []
            for view in views:
                cos.append(float(np.mean(np.sum(texts * view, axis=1))))
                moved.append(float(np.mean(kmeans.predict(view) != kmeans.labels_)))
                own, same = nearest_text(view, originals, labels)
                own_first.append(own)
                nearest_same_class.append(same)
                view_acc.append(
                    clustering_scores(labels, KMeans(k, n_init=10, random_state=seed).fit_predict(view))["acc"]
                )
            row.update(
                {
                    "cos_text_view": statistics.mean(cos),
                    "view_changes_cluster": statistics.mean(moved),
                    "view_nearest_is_own_text": statistics.mean(own_first),
                    "view_nearest_other_same_class": statistics.mean(nearest_same_class),
                    "view_kmeans_acc": statistics.mean(view_acc),
                }
            )
            # the same check for the texts themselves: the level a view should not fall below
            row["text_nearest_other_same_class"] = nearest_text(texts, originals, labels)[1]
            put_row(store, row)
            save_store(store)
            print(
                f"{name:15s} seed {seed} cos {row['cos_text_view']:.3f} changes cluster "
                f"{row['view_changes_cluster']:.3f} "
                f"nearest same class view {row['view_nearest_other_same_class']:.3f} text "
                f"{row['text_nearest_other_same_class']:.3f} view ACC {row['view_kmeans_acc']:.3f}",
                flush=True,
            )


def nearest_text(queries: np.ndarray, texts, labels: np.ndarray) -> tuple[float, float]:
    """For row i of ``queries`` (a view of text i, or text i itself): the share whose nearest text is text i, and the
    share whose nearest text other than i has text i's class (cosine; unit vectors)."""
    import torch

    own, same = [], []
    for lo in range(0, len(labels), 2048):
        sims = torch.from_numpy(queries[lo : lo + 2048]) @ texts.T
        rows = torch.arange(sims.shape[0])
        own.append((sims.argmax(1) == rows + lo).numpy())
        sims[rows, rows + lo] = -2.0
        same.append(labels[sims.argmax(1).numpy()] == labels[lo : lo + 2048])
    return float(np.concatenate(own).mean()), float(np.concatenate(same).mean())


def render(store: dict, rows: list[dict]) -> list[str]:
    """The views table, one line per corpus and augmentation family."""
    arows = [r for r in rows if r["section"] == "augmentation"]
    if not arows:
        return []
    out = (
        ["## What the augmented views keep", ""]
        + run_header(store, arows)
        + [
            "",
            "The precomputed views (two per text) embedded with the pretrained MiniLM, as the first training steps see",
            "them. *cos* = mean cosine between a text and its view; *changes cluster* = share of views that k-means "
            "(fit on",
            "the texts) puts in another cluster than their text; *own text first* = share of views whose nearest text "
            "is",
            "their own; *nearest other: same class* = share of views (texts, for the last column) whose nearest other "
            "text",
            "has the same class; *k-means ACC* on the texts and on the views alone. Means over the two views and the "
            "seeds.",
            "",
            "| dataset | views | K | cos | changes cluster | own text first | nearest other: same class (view / text) "
            "| k-means ACC text / view | seeds |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
    )
    from hf_textcluster.data import BENCHMARKS

    for name in BENCHMARKS:
        for family in sorted({r["method"] for r in arows if r["dataset"] == name}):
            d = [r for r in arows if (r["dataset"], r["method"]) == (name, family)]
            m = lambda key, d=d: statistics.mean(r[key] for r in d)  # noqa: E731
            out.append(
                f"| {name} | {family} | {d[0]['k']} | {m('cos_text_view'):.3f} | {100 * m('view_changes_cluster'):.1f}%"
                f" | {100 * m('view_nearest_is_own_text'):.1f}% | {100 * m('view_nearest_other_same_class'):.1f}% / "
                f"{100 * m('text_nearest_other_same_class'):.1f}% | {100 * m('text_kmeans_acc'):.1f} / "
                f"{100 * m('view_kmeans_acc'):.1f} | {len(d)} |"
            )
    out.append("")
    return out
