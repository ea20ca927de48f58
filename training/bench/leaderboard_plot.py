"""The benchmark's leaderboard as grouped bars: each baseline and method per corpus, from ``docs/results.json``.

from training.bench.leaderboard_plot import plot_leaderboard
plot_leaderboard("docs/results.json", metric="nmi", path="leaderboard.png")
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from hf_textcluster.apps.canvas import is_drawable, new_figure, palette, save_figure
from hf_textcluster.data.corpora import CORPORA
from hf_textcluster.models import METHODS

_BASELINE_ORDER = ("bow-kmeans", "tfidf-kmeans", "embeddings-kmeans")
# the BERTopic ways, measured with the auto-K benchmark on the same embeddings
_BERTOPIC_SERIES = (
    ("bertopic-kmeans", "BERTopic (UMAP -> k-means, true K)"),
    ("bertopic", "BERTopic default (UMAP -> HDBSCAN)"),
)
_KMEANS_SERIES = " k-means on its embeddings"


def _section(rows: list[Mapping], section: str) -> list[Mapping]:
    return [r for r in rows if r.get("section") == section]


def leaderboard_table(
    rows, metric: str = "acc", variant: str = "", datasets: Sequence[str] | None = None
) -> tuple[list[str], dict[str, dict[str, list[float]]]]:
    """The values a leaderboard draws, per series and corpus.

    The series are the baselines (section ``baselines``, and the BERTopic rows of section ``auto-k``), and per
    method of section ``method`` its head's ``metric`` and ``kmeans_<metric>`` (k-means on its trained embeddings).

    Args:
        rows: The rows of ``docs/results.json`` (a list, the stored dict, or its path).
        metric: The score to draw (``"acc"``, ``"nmi"``, ...).
        variant: The runs of this variant; ``""`` = the main runs.
        datasets: The corpora to keep, in this order; default: every corpus with a value.

    Returns:
        ``(corpora, {series: {corpus: [value in % per seed]}})``.

    Raises:
        FileNotFoundError: ``rows`` is a path to no file.
        ValueError: a corpus of ``datasets`` has no rows.

    Example:
        >>> corpora, series = leaderboard_table("docs/results.json", "nmi")  # doctest: +SKIP
    """
    if isinstance(rows, (str, os.PathLike)):
        path = Path(rows)
        if not path.is_file():
            raise FileNotFoundError(
                f"No results file {path.resolve()} (`python -m training.bench` writes docs/results.json)."
            )
        rows = json.loads(path.read_text())
    rows = [r for r in (rows.get("rows", []) if isinstance(rows, Mapping) else rows) if isinstance(r, Mapping)]
    series: dict[str, dict[str, list[float]]] = {}

    def add(name, row, key=metric):
        if is_drawable(row.get(key)):
            series.setdefault(name, {}).setdefault(row["dataset"], []).append(100 * float(row[key]))

    rank = {method: i for i, method in enumerate(_BASELINE_ORDER)}
    for row in sorted(_section(rows, "baselines"), key=lambda r: rank.get(r.get("method"), len(rank))):
        add(row["method"], row)
    for method, name in _BERTOPIC_SERIES:
        for row in (r for r in _section(rows, "auto-k") if r.get("method") == method):
            add(name, row)
    methods = [r for r in _section(rows, "method") if (r.get("variant") or "") == variant]
    order = {name: i for i, name in enumerate(METHODS)}
    for row in sorted(methods, key=lambda r: (order.get(r["method"], len(order)), r["method"])):
        name = METHODS[row["method"]].display_name if row["method"] in METHODS else row["method"]
        add(f"{name} head", row)
        add(f"{name}{_KMEANS_SERIES}", row, f"kmeans_{metric}")
    rank = {name: i for i, name in enumerate(CORPORA)}  # in the order the package lists them, unknown ones last
    present = sorted({d for values in series.values() for d in values}, key=lambda d: (rank.get(d, len(rank)), d))
    if datasets is None:
        return present, series
    if missing := [d for d in datasets if d not in present]:
        raise ValueError(f"No rows for {missing} in the results (corpora there: {', '.join(present) or 'none'}).")
    return list(datasets), series


def plot_leaderboard(
    rows,
    metric: str = "acc",
    *,
    variant: str = "",
    datasets: Sequence[str] | None = None,
    title: str | None = None,
    path: str | os.PathLike | None = None,
    figsize: tuple[float, float] | None = None,
):
    """Grouped bars of ``metric`` (in %) per corpus for each baseline and method: the mean over seeds, the error bar
    their standard deviation when there are several.

    Args:
        rows: The rows of ``docs/results.json`` (a list, the stored dict, or its path).
        metric: The score to draw (ACC by default).
        variant: The runs of this variant; ``""`` = the main runs.
        datasets: The corpora to draw, in this order; default: all.
        title: The plot's title; default: what the bars are.
        path: Where to save the picture (its format from the suffix); None only returns it.
        figsize: ``(width, height)`` in inches; default: from the number of bars.

    Returns:
        The matplotlib Figure.

    Raises:
        ValueError: no rows with ``metric``, or a corpus of ``datasets`` without rows.

    Example:
        >>> plot_leaderboard("docs/results.json", path="leaderboard.png")  # doctest: +SKIP
    """
    corpora, series = leaderboard_table(rows, metric, variant, datasets)
    series = {name: values for name, values in series.items() if any(d in values for d in corpora)}
    if not corpora or not series:
        raise ValueError(f"No baseline or method rows with {metric!r} to plot.")
    fig = new_figure(figsize or (max(8.0, min(18.0, 0.16 * len(series) * len(corpora) + 3)), 5.0))
    ax = fig.add_subplot()
    # one bar per series in each corpus' group; a method's head and the k-means on its embeddings share a colour (the
    # latter hatched), so the two read as one method
    width, positions = 0.8 / len(series), np.arange(len(corpora))
    groups = [name.removesuffix(_KMEANS_SERIES).removesuffix(" head") for name in series]
    colours = dict(zip(dict.fromkeys(groups), palette(len(set(groups)))))
    for i, (name, values) in enumerate(series.items()):
        means = [float(np.mean(values[d])) if d in values else np.nan for d in corpora]
        stds = [float(np.std(values[d])) if len(values.get(d, [])) > 1 else 0.0 for d in corpora]
        colour = colours[groups[i]]
        hatched = {"hatch": "///", "edgecolor": "white", "alpha": 0.75}  # the k-means on a method's embeddings
        style = hatched if name.endswith(_KMEANS_SERIES) else {"edgecolor": colour}
        x = positions - 0.4 + (i + 0.5) * width
        ax.bar(x, means, width, yerr=stds, label=name, color=colour, linewidth=0, error_kw={"elinewidth": 0.8}, **style)
    ax.set_xticks(positions, corpora, rotation=20 if len(corpora) > 5 else 0)
    ax.set(ylabel=f"{metric.upper()} (%)", ylim=(0, 100))
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    seeds = sorted({len(v) for values in series.values() for v in values.values()})
    several = seeds[-1] > 1
    over = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    notes = f"mean over {over} seed{'s' if several else ''} per bar" + ("; error bar: std" if several else "")
    notes += f"; variant {variant!r}" if variant else ""
    ax.set_title(title or f"{metric.upper()} per corpus ({notes})")
    return save_figure(fig, path)
