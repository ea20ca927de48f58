"""The leaderboard: per corpus, the baselines and every method's main configuration, and the verdicts (our best
against the strongest baseline and the best reported number) that README's "leaderboard in short" shows."""

from __future__ import annotations

import statistics
from typing import NamedTuple

from .common import (
    PAPER_OTHER_METHODS,
    default_baselines,
    display_name,
    mean_std,
    method_order,
    methods,
    umap_cells,
    umap_scores,
)


class Entry(NamedTuple):
    """One leaderboard line: ACC / NMI values over seeds; the "after" / "before" lists are empty for baselines."""

    label: str
    acc: list
    nmi: list
    seeds: int
    kind: str  # "baseline" or "method"
    after_acc: list = []
    after_nmi: list = []
    before_acc: list = []
    umap_acc: list = []
    umap_nmi: list = []


def baseline_entries(rows: list[dict], dataset: str) -> list[Entry]:
    """The leaderboard's baselines of ``dataset``: TF-IDF / MiniLM + k-means, the BERTopic way with the true K and
    BERTopic's HDBSCAN default (the last two from the auto-K measurement, on the same MiniLM embeddings)."""
    entries = []
    for method, label in (("tfidf-kmeans", "TF-IDF + k-means"), ("embeddings-kmeans", "MiniLM + k-means")):
        b = [r for r in default_baselines(rows) if r["method"] == method and r["dataset"] == dataset]
        if b:
            entries.append(Entry(label, [r["acc"] for r in b], [r["nmi"] for r in b], len(b), "baseline"))
    for method, label in (
        ("bertopic-kmeans", "BERTopic way, true K (UMAP -> k-means)"),
        ("bertopic", "BERTopic default (UMAP -> HDBSCAN)"),
    ):
        b = [r for r in rows if r["section"] == "auto-k" and r["method"] == method and r["dataset"] == dataset]
        if b:
            if method == "bertopic":
                outliers = 100 * statistics.mean(r["outlier_share"] for r in b)
                label += f" [{b[0]['k_found']} topics, {outliers:.0f}% outliers]"
            entries.append(Entry(label, [r["acc"] for r in b], [r["nmi"] for r in b], len(b), "baseline"))
    return entries


def strongest_baseline(rows: list[dict], dataset: str) -> tuple[float, str] | None:
    """``(mean ACC, label)`` of the strongest of :func:`baseline_entries` (None without any): the baseline README's
    "leaderboard in short" and the model cards compare with."""
    entries = baseline_entries(rows, dataset)
    if not entries:
        return None
    acc, label = max((statistics.mean(e.acc), e.label) for e in entries)
    return acc, label.split(" [")[0]


def render_leaderboard(rows: list[dict]) -> tuple[list[str], list[Verdict]]:
    """Per corpus: the baselines (TF-IDF / MiniLM + k-means, the BERTopic way with the true K and its HDBSCAN default)
    and every method's main configuration (head, k-means after, k-means before), the best ACC marked; then, per corpus,
    our best against the baselines and against the best number the five papers report."""
    from hf_textcluster.data import BENCHMARKS

    method_rows = [r for r in rows if r["section"] == "method" and not r.get("variant")]
    if not method_rows:
        return [], []
    out = [
        "## Leaderboard",
        "",
        "Means over seeds of the sections above; each method in its main configuration (no ablations), trained on",
        "this CPU with its `cpu` recipe (steps × batch in the method sections). For each corpus the best ACC is in",
        "bold. *head* = the trained cluster head; *k-means after* = k-means on the trained embeddings; *before* =",
        "k-means on the same run's initial embeddings. BERTopic rows come from the auto-K measurement (same MiniLM",
        "embeddings): UMAP -> k-means at the true K, and its default UMAP -> HDBSCAN (its number of topics and outlier",
        "share in brackets; outliers counted as one more cluster). *UMAP k-means after* = the BERTopic way on the",
        "trained embeddings, as `hf-textcluster recluster --kmeans-init umap` serves it (the nearest of the means of",
        "the clusters k-means finds on their UMAP reduction); measured on the runs made or kept since it exists",
        "(how many in brackets when fewer than the seeds). DEC-CRL re-clusters in its latent space instead, so its",
        'two "after" columns are not what its `recluster` serves (see the next section).',
        "",
        "| dataset | entry | ACC | NMI | k-means after ACC | NMI | UMAP k-means after ACC | NMI | k-means before ACC "
        "| seeds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for name in BENCHMARKS:
        mrows = [r for r in method_rows if r["dataset"] == name]
        if not mrows:
            continue
        entries = baseline_entries(rows, name)
        for method in sorted({r["method"] for r in mrows}, key=method_order):
            d = [r for r in mrows if r["method"] == method]
            entries.append(
                Entry(
                    display_name(method),
                    [r["acc"] for r in d],
                    [r["nmi"] for r in d],
                    len(d),
                    "method",
                    [r["kmeans_acc"] for r in d],
                    [r["kmeans_nmi"] for r in d],
                    [r["init_kmeans_acc"] for r in d],
                    *umap_scores(d),
                )
            )
        mean = lambda values: statistics.mean(values) if values else -1.0  # noqa: E731
        best = max(max(mean(e.acc), mean(e.after_acc), mean(e.umap_acc)) for e in entries)

        def cell(values, mean=mean, best=best):
            if not values:
                return "–"
            text = mean_std(values)
            return f"**{text}**" if abs(mean(values) - best) < 1e-12 else text

        for e in entries:
            out.append(
                f"| {name} | {e.label} | {cell(e.acc)} | {mean_std(e.nmi)} | {cell(e.after_acc)}"
                f" | {mean_std(e.after_nmi) if e.after_nmi else '–'}"
                f" | {umap_cells(e.umap_acc, e.umap_nmi, e.seeds, cell)}"
                f" | {mean_std(e.before_acc) if e.before_acc else '–'} | {e.seeds} |"
            )
        ours = max(
            (value, f"{e.label}{how}")
            for e in entries
            if e.kind == "method"
            for value, how in (
                (mean(e.acc), ""),
                (mean(e.after_acc), ", k-means after"),
                (mean(e.umap_acc), ", UMAP k-means after"),
            )
        )
        strongest = strongest_baseline(rows, name)  # what the model cards compare with too
        papers = [
            (spec.paper_results[name][0], spec.display_name)
            for spec in methods().values()
            if name in spec.paper_results
        ]
        papers += [(acc[name], f"{other}, SCCL's Table 1") for other, acc in PAPER_OTHER_METHODS.items() if name in acc]
        paper = max(papers) if papers else None
        # The same over every configuration measured with the default encoder (ablations and earlier recipes too):
        # what a user could train today with the variant's --config, chosen with labels like "our best" is.
        configs = {}
        for r in rows:
            if (
                r["section"] == "method"
                and r["dataset"] == name
                and not r.get("encoder")
                and "held-out" not in (r.get("variant") or "")
            ):
                configs.setdefault((r["method"], r.get("variant") or ""), []).append(r)
        any_best = max(
            (
                mean([r[key] for r in d if key in r]),
                len([r for r in d if key in r]),
                f"{display_name(method)}{f' {variant}' if variant else ''}{how}",
            )
            for (method, variant), d in configs.items()
            for key, how in (
                ("acc", ""),
                ("kmeans_acc", ", k-means after"),
                ("umap_kmeans_acc", ", UMAP k-means after"),
            )
        )
        # What `train` serves by default: `--method auto`'s label-free choice, its mean over the seeds measured.
        arows = [r for r in rows if r["section"] == "auto" and r["dataset"] == name and not r.get("variant")]
        served = (statistics.mean(r["served_acc"] for r in arows), len(arows), "auto") if arows else None
        verdicts.append(
            Verdict(
                name,
                100 * ours[0],
                ours[1],
                strongest and 100 * strongest[0],
                strongest and strongest[1],
                paper and paper[0],
                paper and paper[1],
                100 * any_best[0],
                _with_seeds(any_best[2], any_best[1]),
                served and 100 * served[0],
                served and _with_seeds(served[2], served[1]),
            )
        )
    out += [
        "",
        "Per corpus: our best ACC (head, k-means after or UMAP k-means after, any method; servable with `recluster`",
        'except DEC-CRL\'s "after" partitions)',
        "against the strongest baseline above and against the best ACC the five papers report for the corpus (their",
        "encoders, GPUs and schedules): their own methods' numbers and the rows of other methods in their tables",
        "that top them (HAC-SD and Self-Train in the SCCL paper's Table 1; the papers disagree on such rows: the",
        "AECL paper reports Self-Train at 40.1 on Biomedical where SCCL's reports 54.8). ClusterBERT's BBC News is",
        "the articles split into sentences, a harder task than our whole articles.",
        "*Best of any configuration* takes every configuration measured with MiniLM (ablations and earlier",
        "recipes too; each trainable with the `--config` of its section's command), when one beats our best: a",
        "choice made with labels, so optimistic on one seed.",
        "*Served by default*: what `train` serves by default (`--method auto`: two training signals, every read-out",
        "of each and their consensus, one chosen without labels; see its section below), mean over the seeds run.",
        "",
        *verdict_table(verdicts, "dataset"),
        "",
    ]
    return out, verdicts


def _with_seeds(label: str, seeds: int) -> str:
    return f"{label}; {seeds} seed{'s' * (seeds > 1)}"


class Verdict(NamedTuple):
    """One corpus of the leaderboard in short: our best ACC against the strongest baseline and the best reported."""

    dataset: str
    ours: float
    ours_how: str  # "<method>[, k-means after | , UMAP k-means after]"
    baseline: float | None
    baseline_label: str | None
    paper: float | None
    paper_label: str | None
    any_config: float  # the best over every configuration measured, variants included
    any_config_how: str
    served: float | None = None  # the best method's partition served by the label-free choice (train's default)
    served_how: str | None = None


def verdict_table(verdicts: list[Verdict], first_column: str, names: dict | None = None) -> list[str]:
    """The leaderboard in short as markdown lines; `names` maps corpus keys to display names (README)."""
    lines = [
        f"| {first_column} | our best ACC | strongest baseline ACC | Δ | best reported ACC | Δ "
        "| best of any configuration measured | served by default (label-free) ACC | Δ baseline "
        "| Δ reported |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for v in verdicts:
        lines.append(
            f"| {(names or {}).get(v.dataset, v.dataset)} | {v.ours:.1f} ({v.ours_how}) | "
            + (f"{v.baseline:.1f} ({v.baseline_label}) | {v.ours - v.baseline:+.1f} | " if v.baseline else "– | – | ")
            + (f"{v.paper:.1f} ({v.paper_label}) | {v.ours - v.paper:+.1f} | " if v.paper else "– | – | ")
            + (f"{v.any_config:.1f} ({v.any_config_how}) | " if v.any_config > v.ours + 1e-9 else "the same | ")
            + (f"{v.served:.1f} ({v.served_how}) | " if v.served is not None else "not measured | ")
            + (f"{v.served - v.baseline:+.1f} | " if v.served is not None and v.baseline else "– | ")
            + (f"{v.served - v.paper:+.1f} |" if v.served is not None and v.paper else "– |")
        )
    return lines
