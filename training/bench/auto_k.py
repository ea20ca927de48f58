"""Choosing K without labels (hf_textcluster.choosing.auto_k): each criterion per corpus, k-means at the K found and
at the true K, and BERTopic's default pipeline and the BERTopic way at the true K on the same embeddings."""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

from .common import add_corpus_arguments, mean_std, run_header
from .store import put_row, save_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``auto-k``: the corpora, seeds and criteria."""
    add_corpus_arguments(parser)
    parser.add_argument(
        "--k-criteria",
        nargs="+",
        default=["all"],
        metavar="NAME",
        help="The criteria of hf_textcluster.choosing.auto_k to run, and/or bertopic (default: all).",
    )


def run(args, store: dict, run_id: str) -> None:
    """Per corpus: MiniLM embeddings (as the baselines' embeddings-kmeans), each criterion of
    hf_textcluster.choosing.auto_k
    (default range and sample), k-means (10 restarts) at the K found and at the true K; and BERTopic's default
    pipeline (seeded UMAP -> HDBSCAN) on the same embeddings, when installed (the `bench` extra)."""
    from sklearn.cluster import KMeans

    from hf_textcluster.choosing.auto_k import compare_criteria
    from hf_textcluster.choosing.criteria import K_CRITERIA as CRITERIA
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.runs.baselines import EmbeddingKMeans

    wanted = list(CRITERIA) + ["bertopic"] if args.k_criteria == ["all"] else args.k_criteria
    unknown = sorted(set(wanted) - set(CRITERIA) - {"bertopic"})
    if unknown:
        raise SystemExit(f"error: --k-criteria: unknown {unknown}; choose from {', '.join(CRITERIA)}, bertopic, all.")
    criteria = [c for c in wanted if c != "bertopic"]
    for name in args.datasets:
        dataset = load_benchmark(name, data_dir=args.data_dir)
        texts, labels = dataset["text"], np.asarray(dataset["label"])
        k_true = dataset.features["label"].num_classes
        start = time.perf_counter()
        embeddings = EmbeddingKMeans(k_true, show_progress_bar=False).embed(texts)  # the baselines' code path
        embed_seconds = round(time.perf_counter() - start, 2)
        for seed in args.seeds:
            at_k: dict[int, dict] = {}

            def kmeans_scores(k, at_k=at_k, seed=seed, labels=labels, embeddings=embeddings):
                if k not in at_k:
                    at_k[k] = clustering_scores(labels, KMeans(k, n_init=10, random_state=seed).fit_predict(embeddings))
                return at_k[k]

            truth = kmeans_scores(k_true)
            common = {
                "section": "auto-k",
                "dataset": name,
                "seed": seed,
                "run": run_id,
                "k_true": k_true,
                "num_texts": len(texts),
                "embed_seconds": embed_seconds,
                "true_k_acc": truth["acc"],
                "true_k_nmi": truth["nmi"],
            }
            results = compare_criteria(embeddings, criteria=criteria, random_state=seed) if criteria else {}
            for criterion, result in results.items():
                found = kmeans_scores(result.num_clusters)
                put_row(
                    store,
                    {
                        **common,
                        "method": criterion,
                        "k_found": result.num_clusters,
                        "k_range": [result.k_min, result.k_max],
                        "sample_size": result.sample_size,
                        "seconds": round(result.seconds, 2),
                        "acc": found["acc"],
                        "nmi": found["nmi"],
                        "scores": {str(k): round(v, 6) for k, v in sorted(result.scores.items())},
                    },
                )
                print(
                    f"{name:15s} seed {seed} {criterion:18s} K {result.num_clusters:3d} (true {k_true}) "
                    f"ACC {100 * found['acc']:.1f} NMI {100 * found['nmi']:.1f} | at true K ACC "
                    f"{100 * truth['acc']:.1f} "
                    f"NMI {100 * truth['nmi']:.1f} | {result.seconds:.0f}s",
                    flush=True,
                )
            if "bertopic" in wanted:
                rows = bertopic_rows(texts, labels, embeddings, seed, k_true)
                if rows is not None:
                    row, with_k = rows
                    put_row(store, {**common, **row})
                    put_row(store, {**common, **with_k})
                    print(
                        f"{name:15s} seed {seed} bertopic           {row['k_found']} topics, "
                        f"{100 * row['outlier_share']:.1f}% outliers, ACC {100 * row['acc']:.1f} NMI "
                        f"{100 * row['nmi']:.1f} "
                        f"(non-outliers ACC {100 * row['inlier_acc']:.1f} NMI {100 * row['inlier_nmi']:.1f}) | "
                        f"{row['seconds']:.0f}s; UMAP -> k-means at the true K: ACC {100 * with_k['acc']:.1f} "
                        f"NMI {100 * with_k['nmi']:.1f}",
                        flush=True,
                    )
            save_store(store)


def bertopic_umap(seed: int):
    """BERTopic's default UMAP (15 neighbours -> 5 dims, cosine), seeded."""
    from umap import UMAP

    return UMAP(n_neighbors=15, n_components=5, min_dist=0.0, metric="cosine", random_state=seed)


def bertopic_timed(
    texts, labels, seed: int, encoder: str | None = None, num_clusters: int | None = None
) -> dict | None:
    """BERTopic as its users run it, encoding included: ``BERTopic(embedding_model=the encoder, umap_model=UMAP
    seeded, hdbscan_model=KMeans(K)).fit_transform(texts)`` with ``num_clusters`` (the BERTopic way), else its default
    (HDBSCAN, ``min_topic_size=10``). Its wall seconds, topics (outliers, topic -1, not counted), outlier share and
    ACC / NMI with the outliers as one cluster (labels only score). What the default's time is quoted against,
    measured on the same machine right before its run."""
    try:
        from bertopic import BERTopic
    except ImportError as err:
        print(f"BERTopic skipped: {err} (pip install -e '.[bench]')", flush=True)
        return None
    from sentence_transformers import SentenceTransformer
    from sklearn.cluster import KMeans

    from hf_textcluster.encoders import resolve_encoder_path
    from hf_textcluster.evaluation.metrics import clustering_scores

    start = time.perf_counter()
    clusters = {} if num_clusters is None else {"hdbscan_model": KMeans(num_clusters, n_init=10, random_state=seed)}
    topic_model = BERTopic(
        embedding_model=SentenceTransformer(resolve_encoder_path(encoder), device="cpu"),
        umap_model=bertopic_umap(seed),
        **clusters,
    )
    topics = np.asarray(topic_model.fit_transform(list(texts))[0])
    seconds = time.perf_counter() - start
    scores = clustering_scores(np.asarray(labels), topics)
    return {
        "seconds": round(seconds, 1),
        "k": int(len(set(topics[topics >= 0].tolist()))),
        "outlier_share": round(float((topics < 0).mean()), 4),
        "acc": scores["acc"],
        "nmi": scores["nmi"],
    }


def bertopic_rows(texts, labels, embeddings, seed, k_true) -> list[dict] | None:
    """BERTopic with its defaults (UMAP 15 neighbours -> 5 dims, cosine; HDBSCAN min_cluster_size 10), UMAP seeded,
    on the given embeddings: its topics as clusters, topic -1 (outliers) as one more cluster or left out; and the
    same UMAP reduction clustered by k-means with the true K."""
    try:
        from bertopic import BERTopic
    except ImportError as err:
        print(f"bertopic skipped: {err} (pip install -e '.[bench]')", flush=True)
        return None
    from sklearn.cluster import KMeans

    from hf_textcluster.evaluation.metrics import clustering_scores

    start = time.perf_counter()
    umap_model = bertopic_umap(seed)
    topics, _ = BERTopic(umap_model=umap_model).fit_transform(list(texts), embeddings=embeddings)
    seconds = time.perf_counter() - start
    topics = np.asarray(topics)
    inliers = topics != -1
    everything = clustering_scores(labels, topics)
    kept = clustering_scores(labels[inliers], topics[inliers]) if inliers.any() else {"acc": 0.0, "nmi": 0.0}
    # the BERTopic way with the true K: the same UMAP reduction, then k-means (BERTopic's `hdbscan_model=KMeans(K)`)
    start = time.perf_counter()
    reduced = KMeans(k_true, n_init=10, random_state=seed).fit_predict(umap_model.embedding_)
    with_k = clustering_scores(labels, reduced)
    return [
        {
            "method": "bertopic",
            "k_found": int(len(set(topics[inliers].tolist()))),
            "outlier_share": float(1 - inliers.mean()),
            "seconds": round(seconds, 2),
            "acc": everything["acc"],
            "nmi": everything["nmi"],
            "inlier_acc": kept["acc"],
            "inlier_nmi": kept["nmi"],
        },
        {
            "method": "bertopic-kmeans",
            "k_found": k_true,
            "seconds": round(time.perf_counter() - start, 2),
            "acc": with_k["acc"],
            "nmi": with_k["nmi"],
        },
    ]


def render(store: dict, rows: list[dict]) -> list[str]:
    """The K each criterion found per corpus, k-means at that K vs at the true K, and one line per criterion."""
    if not rows:
        return []
    from hf_textcluster.choosing.auto_k import DEFAULT_CRITERION
    from hf_textcluster.choosing.criteria import K_CRITERIA as CRITERIA
    from hf_textcluster.data import BENCHMARKS

    order = {m: i for i, m in enumerate([*CRITERIA, "bertopic", "bertopic-kmeans"])}
    names_of = {
        "bertopic": "BERTopic default (UMAP -> HDBSCAN)",
        "bertopic-kmeans": "BERTopic, true K (UMAP -> k-means)",
    }
    label = lambda m: names_of.get(m, f"`{m}`")  # noqa: E731
    out = [
        "## Choosing K without labels",
        "",
        *run_header(store, rows),
        "",
        "MiniLM embeddings of every text (as in the baselines). Each criterion of `hf_textcluster.choosing.auto_k`",
        "(`--num-clusters auto`) searches K in its default range, 2..min(200, 3√N), on a seeded sample of at most",
        "4,000 texts; then k-means (10 restarts, seeded) on all embeddings at the K found and at the true K (the",
        "number of classes, which the criteria never see). BERTopic: its default pipeline (UMAP, seeded -> HDBSCAN)",
        "on the same embeddings; its topics are its clusters; ACC / NMI with the outliers (topic -1) as one more",
        "cluster, and on the non-outliers only; and the same UMAP reduction clustered by k-means at the true K (the",
        "BERTopic way when K is known). ACC / NMI in %, mean over seeds; K found per seed.",
        "",
        "| dataset | N | true K | criterion | K found | ACC at K found | NMI | ACC at true K | NMI | outliers "
        "| non-outliers ACC / NMI | search (s) | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    names = [n for n in BENCHMARKS if any(r["dataset"] == n for r in rows)]
    names += sorted({r["dataset"] for r in rows} - set(names))
    for name in names:
        for method in sorted({r["method"] for r in rows if r["dataset"] == name}, key=lambda m: (order.get(m, 99), m)):
            drows = sorted([r for r in rows if r["dataset"] == name and r["method"] == method], key=lambda r: r["seed"])
            found = ", ".join(str(k) for k in dict.fromkeys(r["k_found"] for r in drows))
            bert = method == "bertopic"
            outliers = f"{100 * statistics.mean(r['outlier_share'] for r in drows):.1f}%" if bert else "–"
            inliers = (
                f"{mean_std([r['inlier_acc'] for r in drows])} / {mean_std([r['inlier_nmi'] for r in drows])}"
                if bert
                else "–"
            )
            out.append(
                f"| {name} | {drows[0]['num_texts']:,} | {drows[0]['k_true']} | {label(method)} | {found}"
                f" | {mean_std([r['acc'] for r in drows])} | {mean_std([r['nmi'] for r in drows])}"
                f" | {mean_std([r['true_k_acc'] for r in drows])} | {mean_std([r['true_k_nmi'] for r in drows])}"
                f" | {outliers} | {inliers} | {statistics.mean(r['seconds'] for r in drows):.0f} | {len(drows)} |"
            )
    out += [
        "",
        "Per criterion, over the corpora above (each corpus and seed counts once): *log2 error* = the absolute",
        "value of log2(K found / true K) (1.0 = off by a factor of 2), median and mean; *within 25%* = corpora-seeds",
        "with K found within ±25% of the true K; *Δ ACC / Δ NMI* = k-means at K found minus at the true K, in points.",
        "",
        "| criterion | median log2 error | mean log2 error | within 25% | Δ ACC | Δ NMI | mean search (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    errors = {}
    for method in sorted({r["method"] for r in rows} - {"bertopic-kmeans"}, key=lambda m: (order.get(m, 99), m)):
        mrows = [r for r in rows if r["method"] == method]
        err = [abs(math.log2(max(r["k_found"], 1) / r["k_true"])) for r in mrows]
        errors[method] = statistics.median(err)
        within = sum(abs(r["k_found"] - r["k_true"]) <= 0.25 * r["k_true"] for r in mrows)
        d_acc = 100 * statistics.mean(r["acc"] - r["true_k_acc"] for r in mrows)
        d_nmi = 100 * statistics.mean(r["nmi"] - r["true_k_nmi"] for r in mrows)
        out.append(
            f"| {label(method)} | {statistics.median(err):.2f} | {statistics.mean(err):.2f} | {within} of {len(mrows)}"
            f" | {d_acc + 0.0:+.1f} | {d_nmi + 0.0:+.1f} | {statistics.mean(r['seconds'] for r in mrows):.0f} |"
        )
    measured = [m for m in errors if m in CRITERIA]
    if measured:
        best = min(measured, key=lambda m: (errors[m], m != DEFAULT_CRITERION, order[m]))  # ties: the default
        out += [
            "",
            f"Lowest median log2 error among the criteria: `{best}`; the default of `--num-clusters auto` is "
            f"`{DEFAULT_CRITERION}` (`hf_textcluster.choosing.auto_k.DEFAULT_CRITERION`).",
        ]
    return out + [""]
