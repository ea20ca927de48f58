"""The shallow baselines: BoW / TF-IDF / encoder embeddings + k-means (and, with ``--encoder``, the BERTopic way
at the true K on that encoder), per corpus and seed."""

from __future__ import annotations

import argparse
import statistics
import time

from .auto_k import bertopic_umap
from .common import add_corpus_arguments, default_baselines, encoder_variant, mean_std, paper_cell, run_header
from .store import put_row, save_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``baselines``: the corpora and seeds, and ``--encoder``."""
    add_corpus_arguments(parser)
    parser.add_argument(
        "--encoder",
        default=None,
        help="A hub id or path instead of the default MiniLM: only its embeddings baselines run "
        "(k-means, and the BERTopic way at the true K), stored under its short name as variant.",
    )


def run(args, store: dict, run_id: str) -> None:
    """Fit and score every baseline on every corpus and seed; each corpus is encoded once."""
    from sklearn.cluster import KMeans

    from hf_textcluster.data import load_benchmark
    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.runs.baselines import EmbeddingKMeans, VectorizerKMeans

    # With --encoder only the embeddings baselines run (k-means, and the BERTopic way at the true K), stored under
    # the encoder's short name as their variant.
    variant = encoder_variant(args.encoder)
    for name in args.datasets:
        dataset = load_benchmark(name, data_dir=args.data_dir)
        texts, labels = dataset["text"], dataset["label"]
        k = dataset.features["label"].num_classes
        start = time.perf_counter()
        # once per corpus, shared by seeds
        embeddings = EmbeddingKMeans(k, encoder=args.encoder, show_progress_bar=False).embed(texts)
        embed_seconds = time.perf_counter() - start
        for seed in args.seeds:
            fits = [
                ("bow-kmeans", lambda s, k=k, t=texts: VectorizerKMeans(k, kind="bow", random_state=s).fit_predict(t)),
                (
                    "tfidf-kmeans",
                    lambda s, k=k, t=texts: VectorizerKMeans(k, kind="tfidf", random_state=s).fit_predict(t),
                ),
                ("embeddings-kmeans", lambda s, k=k, e=embeddings: KMeans(k, n_init=10, random_state=s).fit_predict(e)),
            ]
            if variant:  # the BERTopic way at the true K on this encoder (MiniLM's is in the auto-k section)
                fits.append(
                    (
                        "bertopic-kmeans",
                        lambda s, k=k, e=embeddings: KMeans(k, n_init=10, random_state=s).fit_predict(
                            bertopic_umap(s).fit(e).embedding_
                        ),
                    )
                )
            for method, fit in [f for f in fits if not variant or f[0] in ("embeddings-kmeans", "bertopic-kmeans")]:
                start = time.perf_counter()
                predictions = fit(seed)
                seconds = time.perf_counter() - start + (embed_seconds if method == "embeddings-kmeans" else 0.0)
                scores = clustering_scores(labels, predictions)
                put_row(
                    store,
                    {
                        "section": "baselines",
                        "method": method,
                        "dataset": name,
                        "seed": seed,
                        "run": run_id,
                        "seconds": round(seconds, 2),
                        **scores,
                        **({"variant": variant, "encoder": args.encoder} if variant else {}),
                    },
                )
                print(
                    f"{name:15s} seed {seed} {method:18s} ACC {100 * scores['acc']:.1f} NMI {100 * scores['nmi']:.1f}",
                    flush=True,
                )
            save_store(store)


def render(store: dict, rows: list[dict]) -> list[str]:
    """The baselines table (default encoder only; another encoder's rows are in the encoders section)."""
    from hf_textcluster.data import BENCHMARKS

    out = []
    baseline_rows = default_baselines(rows)
    if baseline_rows:
        out += ["## Baselines: BoW / TF-IDF / MiniLM embeddings + k-means", ""]
        out += run_header(store, baseline_rows) + [""]
        out += [
            "BoW and TF-IDF: 1,500 features (as in the SCCL paper), English stop words removed. Embeddings:",
            "MiniLM as its sentence-transformers config defines it (mean pooling, L2-normalised). k-means: 10 "
            "restarts.",
            "Embedding time is included in the time column (encoding once per corpus).",
            "",
        ]
        out += [
            "| dataset | N | K | BoW ACC | BoW NMI | TF-IDF ACC | TF-IDF NMI | MiniLM+k-means ACC | MiniLM+k-means "
            "NMI "
            "| paper TF-IDF ACC / NMI | seeds | MiniLM time (s) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        from hf_textcluster.data import CORPORA

        for name in BENCHMARKS:
            by = {
                m: [r for r in baseline_rows if r["dataset"] == name and r["method"] == m]
                for m in ("bow-kmeans", "tfidf-kmeans", "embeddings-kmeans")
            }
            if not any(by.values()):
                continue
            cells = []
            for m in ("bow-kmeans", "tfidf-kmeans", "embeddings-kmeans"):
                cells += [
                    mean_std([r["acc"] for r in by[m]]) if by[m] else "–",
                    mean_std([r["nmi"] for r in by[m]]) if by[m] else "–",
                ]
            spec = CORPORA[name]
            seconds = statistics.mean(r["seconds"] for r in by["embeddings-kmeans"]) if by["embeddings-kmeans"] else 0
            out.append(
                f"| {name} | {spec.num_rows:,} | {spec.num_labels} | "
                + " | ".join(cells)
                + f" | {paper_cell('tfidf-kmeans', name, 0)} / {paper_cell('tfidf-kmeans', name, 1)}"
                + f" | {len(by['embeddings-kmeans'])} | {seconds:.0f} |"
            )
        out.append("")
    return out
