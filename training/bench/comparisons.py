"""Tables across sections: which partition to serve (the head or k-means after), and the stronger encoders beside the
default one."""

from __future__ import annotations

import statistics
import textwrap

from .common import (
    TRAIN_TIME_LEGEND,
    display_name,
    mean_std,
    method_order,
    run_header,
    train_time,
    umap_cells,
    umap_scores,
)


def render_head_or_kmeans(rows: list[dict]) -> list[str]:
    """Which partition to serve: each method's head against k-means on its own trained embeddings (what
    ``hf-textcluster recluster`` serves), per corpus, from the main-configuration rows."""
    from hf_textcluster.data import BENCHMARKS

    method_rows = [r for r in rows if r["section"] == "method" and not r.get("variant") and "kmeans_acc" in r]
    if not method_rows:
        return []
    out = [
        "## Serve the head or k-means after?",
        "",
        "The head's ACC / NMI against k-means on the same trained embeddings (means over seeds; Δ = k-means after −",
        "head). `hf-textcluster recluster --model DIR --input TRAINING_TEXTS` (or",
        "`hf_textcluster.editing.initialize_clusters(model, texts)` then `calibrate`) makes a trained model serve the",
        "latter: exactly for the methods whose head works on the",
        "pooled embedding (SCCL, DEC-MLM, ClusterBERT) and for AECL (its re-clustered model serves k-means centres",
        "on the embeddings instead of its clustering network). DEC-CRL re-clusters in its latent space FC_e:",
        "*k-means in the head's space* is that partition (for AECL: k-means on its projector's output, shown for",
        "comparison; not what it serves). Models trained before that column existed were re-scored by",
        "`python -m training.bench rescore` (seeds without a kept model show –).",
        "",
        "| method | dataset | head ACC | k-means after ACC | Δ ACC | Δ NMI | k-means in the head's space ACC | NMI "
        "| seeds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    deltas = []
    for method in sorted({r["method"] for r in method_rows}, key=method_order):
        for name in BENCHMARKS:
            d = [r for r in method_rows if r["method"] == method and r["dataset"] == name]
            if not d:
                continue
            acc, after = statistics.mean(r["acc"] for r in d), statistics.mean(r["kmeans_acc"] for r in d)
            nmi = statistics.mean(r["kmeans_nmi"] - r["nmi"] for r in d)
            deltas.append((after - acc, nmi))
            latent = [r for r in d if "latent_kmeans_acc" in r]
            own_space = (
                f"{mean_std([r['latent_kmeans_acc'] for r in latent])} ({len(latent)}) | "
                f"{mean_std([r['latent_kmeans_nmi'] for r in latent])}"
                if latent
                else "– | –"
            )
            out.append(
                f"| {display_name(method)} | {name} | {100 * acc:.1f} | {100 * after:.1f} | "
                f"{100 * (after - acc):+.1f} | {100 * nmi:+.1f} | {own_space} | {len(d)} |"
            )
    better = sum(a > 0 for a, _ in deltas)
    out += [
        "",
        f"k-means after has the higher ACC in {better} of {len(deltas)} method × corpus cells (higher NMI in "
        f"{sum(n > 0 for _, n in deltas)}); median Δ ACC {100 * statistics.median(a for a, _ in deltas):+.1f}, "
        f"largest loss {100 * min(a for a, _ in deltas):+.1f}, largest gain {100 * max(a for a, _ in deltas):+.1f}.",
        "",
    ]
    return out


def render_encoders(store: dict, rows: list[dict]) -> list[str]:
    """A stronger encoder beside the default: its embeddings + k-means and the methods trained with it, next to the
    same entries with MiniLM (means over seeds; methods in their main configuration)."""
    from hf_textcluster.data import BENCHMARKS

    encoders = sorted(
        {r["variant"] for r in rows if r["section"] == "baselines" and r.get("variant")}
        | {r["variant"] for r in rows if r["section"] == "method" and r.get("encoder")}
    )
    if not encoders:
        return []
    base = [r for r in rows if r["section"] == "baselines" and r["method"] in ("embeddings-kmeans", "bertopic-kmeans")]
    base += [
        {**r, "section": "baselines"}
        for r in rows  # MiniLM's BERTopic way comes from the auto-k section
        if r["section"] == "auto-k" and r["method"] == "bertopic-kmeans" and not r.get("variant")
    ]
    methods = [r for r in rows if r["section"] == "method" and r.get("variant", "") in ("", *encoders)]
    out = (
        ["## Stronger encoders", ""]
        + run_header(store, [r for r in base + methods if r.get("variant")])
        + [
            "",
            "The same entries with the default MiniLM and with another encoder (its short name in the encoder column);",
            "`--encoder` of `python -m training.bench`. Methods run their `cpu` recipe unchanged (same steps × batch); "
            "their time",
            "column shows what the bigger encoder costs on this CPU.",
            *textwrap.wrap(TRAIN_TIME_LEGEND, 110),
            "",
            "*BERTopic way* = UMAP -> k-means at the true K on the untrained embeddings; *UMAP k-means after* = the "
            "same on",
            "the trained ones (`recluster --kmeans-init umap`; how many seeds in brackets when fewer).",
            "",
            "| dataset | entry | encoder | ACC | NMI | k-means after ACC | NMI | UMAP k-means after ACC | NMI | train "
            "(s) "
            "| seeds |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
    )
    for name in BENCHMARKS:
        if not any(r["dataset"] == name and r.get("variant") in encoders for r in base + methods):
            continue
        for method, label in (
            ("embeddings-kmeans", "embeddings + k-means"),
            ("bertopic-kmeans", "BERTopic way, true K"),
        ):
            for encoder in ("", *encoders):
                b = [r for r in base if (r["dataset"], r["method"], r.get("variant", "")) == (name, method, encoder)]
                if b:
                    out.append(
                        f"| {name} | {label} | {encoder or 'all-MiniLM-L6-v2'} | {mean_std([r['acc'] for r in b])}"
                        f" | {mean_std([r['nmi'] for r in b])} | – | – | – | – | – | {len(b)} |"
                    )
        with_encoder = {r["method"] for r in methods if r["dataset"] == name and r.get("variant")}
        for method in sorted(with_encoder, key=method_order):
            for encoder in ("", *encoders):
                d = [r for r in methods if (r["dataset"], r["method"], r.get("variant", "")) == (name, method, encoder)]
                if d:
                    out.append(
                        f"| {name} | {display_name(method)} | {encoder or 'all-MiniLM-L6-v2'}"
                        f" | {mean_std([r['acc'] for r in d])} | {mean_std([r['nmi'] for r in d])}"
                        f" | {mean_std([r['kmeans_acc'] for r in d])} | {mean_std([r['kmeans_nmi'] for r in d])}"
                        f" | {umap_cells(*umap_scores(d), len(d))} | {train_time(store, d)} | {len(d)} |"
                    )
    out.append("")
    return out
