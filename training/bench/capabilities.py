"""The method sections' extra tables, keyed on what a model or trainer has rather than on a method's name: learned
topics (a model with a topic model: DEC-CRL's Table 4), scores after each stage (a staged trainer: ClusterBERT's
Figure 3) and serving modes (a model with attention over samples: AECL). A new method with the same capability gets
the table without a line here; the code stays in the benchmark because it formats with its helpers and is no part of
what a served model or remote code needs."""

from __future__ import annotations

import statistics

import numpy as np

from hf_textcluster.markup import escape_markdown
from hf_textcluster.representation.topics import cluster_topics

from .common import by_method_and_dataset, display_name, mean_std


def topics_by_cluster(model, dataset) -> dict:
    """A topic model's learned topics per cluster, with the class most of the cluster's ``dataset`` texts have."""
    predicted = model.predict(dataset["text"], batch_size=128)
    names, gold = dataset.features["label"].names, np.asarray(dataset["label"])
    return {
        str(k): {
            "topics": words,
            "size": int((predicted == k).sum()),
            "majority_class": names[int(np.bincount(gold[predicted == k]).argmax())]
            if (predicted == k).any()
            else None,
        }
        for k, words in cluster_topics(model, top_n=4).items()
    }


def serving_modes(model, dataset, batch_size: int, seed: int) -> dict:
    """ACC / NMI of an attention-over-samples model (AECL) when each text attends to the reference set (served), to
    itself only, and to the other texts of random batches of the training batch size (the authors' evaluation)."""
    import torch

    from hf_textcluster.evaluation.metrics import clustering_scores

    embeddings = torch.from_numpy(model.embed(dataset["text"], batch_size=128))
    labels = dataset["label"]
    model.eval()
    out = {}
    with torch.no_grad():
        z = model.cluster_features(embeddings)
        for mode in ("reference", "self"):
            h, _ = model.attend(z, mode=mode)
            predicted = model.cluster_head(h).argmax(-1).numpy()
            out.update({f"serving_{mode}_{k}": v for k, v in clustering_scores(labels, predicted).items()})
        order = np.random.default_rng(seed).permutation(len(z))
        predicted = np.empty(len(z), dtype=int)
        for start in range(0, len(z), batch_size):
            rows = order[start : start + batch_size]
            h, _ = model.attend(z[rows], mode="batch")
            predicted[rows] = model.cluster_head(h).argmax(-1).numpy()
        out.update({f"serving_batch_{k}": v for k, v in clustering_scores(labels, predicted).items()})
    return out


def render_topics(rows: list[dict]) -> list[str]:
    """The DEC-CRL paper's Table 4: the top four words of learned topics of the StackOverflow clusters whose texts are
    mostly 'osx', 'excel' and 'oracle' (seed 0 of the plain configuration first, else the first run with topics)."""
    candidates = [r for r in rows if r["section"] == "method" and r.get("topics") and r["dataset"] == "stackoverflow"]
    if not candidates:
        return []
    row = sorted(candidates, key=lambda r: (r.get("variant", "") != "", r.get("seed") or 0))[0]
    clusters = row["topics"]
    variant = f" ({row['variant']})" if row.get("variant") else ""
    out = [
        f"## {display_name(row['method'])} topics (the paper's Table 4)",
        "",
        f"StackOverflow, {display_name(row['method'])}{variant}, seed {row['seed']}: each cluster's topics as the four "
        "most probable words of β_k^t (`cluster_topics(model, top_n=4)`). A cluster is named by the class most of its",
        "training texts belong to (labels are used for this naming only); the paper shows 'osx', 'excel', 'oracle'.",
        "",
    ]
    num_topics = max(len(c["topics"]) for c in clusters.values())
    out += [
        "| cluster (majority class, texts) | " + " | ".join(f"topic {t + 1}" for t in range(num_topics)) + " |",
        "|---|" + "---|" * num_topics,
    ]
    chosen = [
        (k, c)
        for name in TABLE4_CLUSTERS
        for k, c in sorted(clusters.items(), key=lambda kc: int(kc[0]))
        if c["majority_class"] == name
    ]
    for k, c in chosen:
        out.append(
            f"| {k} ({escape_markdown(c['majority_class'])}, {c['size']:,}) | "
            + " | ".join(", ".join(escape_markdown(w) for w in t) for t in c["topics"])
            + " |"
        )
    missing = [name for name in TABLE4_CLUSTERS if name not in {c["majority_class"] for c in clusters.values()}]
    if missing:
        out += ["", f"No cluster has a majority of {', '.join(repr(m) for m in missing)} texts in this run."]
    out += [
        "",
        "All clusters (first topic only):",
        "",
        "| cluster | majority class | texts | topic 1 |",
        "|---|---|---|---|",
    ]
    out += [
        f"| {k} | {escape_markdown(c['majority_class'])} | {c['size']:,} | "
        f"{', '.join(escape_markdown(w) for w in c['topics'][0])} |"
        for k, c in sorted(clusters.items(), key=lambda kc: int(kc[0]))
    ]
    return out + [""]


TABLE4_CLUSTERS = ("osx", "excel", "oracle")  # the StackOverflow clusters of the DEC-CRL paper's Table 4


def render_stages(rows: list[dict]) -> list[str]:
    """Scores after each training stage (the ClusterBERT paper's Figure 3), mean over seeds."""
    staged = [r for r in rows if r["section"] == "method" and r.get("stages")]
    if not staged:
        return []
    from hf_textcluster.models.clusterbert.trainer_clusterbert import STAGE_NAMES

    out = [
        "## After each stage (the ClusterBERT paper's Figure 3)",
        "",
        "k-means (seeded) on the embeddings of all training texts after each stage, the head's argmax from stage 2 on,",
        "and the silhouette index of the k-means clusters (Euclidean, a seeded sample of 3,000 texts). Stage 0 is the",
        "pretrained encoder. ACC / NMI in %, mean ± std over seeds.",
        "",
        "| method | dataset | stage | step | k-means ACC | NMI | head ACC | NMI | silhouette | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, dataset, drows in by_method_and_dataset(staged):
        for stage in sorted({m["stage"] for r in drows for m in r["stages"]}):
            entries = [m for r in drows for m in r["stages"] if m["stage"] == stage]
            cell = lambda k, entries=entries: mean_std([m[k] for m in entries]) if all(k in m for m in entries) else "–"  # noqa: E731
            sil = statistics.mean(m["silhouette"] for m in entries)
            out.append(
                f"| {name} | {dataset} | {stage} {STAGE_NAMES[stage]} | {entries[0]['step']} | {cell('kmeans_acc')}"
                f" | {cell('kmeans_nmi')} | {cell('head_acc')} | {cell('head_nmi')} | {sil:.3f} | {len(entries)} |"
            )
    return out + [""]


def render_serving(rows: list[dict]) -> list[str]:
    """Served (reference set) vs. the authors' batch-dependent prediction, measured on the same trained models."""
    served = [r for r in rows if r["section"] == "method" and "serving_batch_acc" in r]
    if not served:
        return []
    out = [
        "## Serving without the batch (AECL)",
        "",
        "The same trained models, predicted three ways: *reference* (served: each text attends to itself and the",
        "reference set stored with the checkpoint; a text's cluster never depends on its companions), *self* (to",
        "itself only) and *batch* (to the other texts of random batches of the training batch size: the authors'",
        "evaluation, batch-dependent). ACC / NMI in %, mean ± std over seeds.",
        "",
        "| method | dataset | reference ACC | NMI | self ACC | NMI | batch ACC | NMI | ACC reference − batch | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, dataset, drows in by_method_and_dataset(served):
        diff = [r["serving_reference_acc"] - r["serving_batch_acc"] for r in drows]
        out.append(
            f"| {name} | {dataset} | "
            + " | ".join(
                mean_std([r[f"serving_{m}_{k}"] for r in drows])
                for m in ("reference", "self", "batch")
                for k in ("acc", "nmi")
            )
            + f" | {mean_std(diff)} | {len(drows)} |"
        )
    return out + [""]
