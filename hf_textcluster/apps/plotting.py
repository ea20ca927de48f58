"""Pictures of a clustering: 2-D maps of the embeddings, cluster sizes, training curves and a leaderboard.

Every function draws with matplotlib's object-oriented API on the Agg canvas (no window, no ``plt.show``, no change
to pyplot's global backend), returns the ``matplotlib.figure.Figure`` and, given ``path``, saves it there (PNG or any
format matplotlib writes, from the suffix). matplotlib and umap-learn are optional: ``pip install
"hf_textcluster[plot]"``; t-SNE and PCA maps use scikit-learn, which the package already needs.

    from hf_textcluster.apps.plotting import plot_embedding_map, plot_cluster_sizes, plot_training_curves
    plot_embedding_map(model.embed(texts), labels=labels, path="map.png")           # UMAP, coloured by label
    plot_cluster_sizes(model.predict(texts), model.config.num_clusters, names=model.config.id2label)
    plot_training_curves(trainer.state.log_history)     # or a checkpoint's trainer_state.json
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..modeling.kmeans import keeping_torch_threads
from ..modeling.validation import check_scalar

PLOT_EXTRA = 'pip install "hf_textcluster[plot]"'
MAP_METHODS = ("umap", "tsne", "pca")
# More categories than this: no legend (the colours still tell them apart locally).
MAX_LEGEND_ENTRIES = 20
SAVE_DPI = 120


# ----- optional dependencies ----------------------------------------------------------------------------------------
def _require_matplotlib():
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise ImportError(f"Plotting needs matplotlib, which is not installed: {PLOT_EXTRA}") from err
    return Figure, FigureCanvasAgg


def _new_figure(figsize: tuple[float, float]):
    Figure, FigureCanvasAgg = _require_matplotlib()
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)  # Agg, whatever pyplot's backend is
    return fig


def _finish(fig, path: str | os.PathLike | None):
    if path is not None:
        path = Path(path)
        if not path.parent.is_dir():
            raise FileNotFoundError(f"Cannot write {path}: the folder {path.parent} does not exist; create it first.")
        fig.savefig(path, dpi=SAVE_DPI)
    return fig


def check_image_path(path: str | os.PathLike) -> None:
    """Raise before any work when ``path`` cannot take a picture: unknown format (from the suffix) or no folder."""
    _, FigureCanvasAgg = _require_matplotlib()
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    formats = FigureCanvasAgg.get_supported_filetypes()
    if suffix not in formats:
        raise ValueError(
            f"{path}: matplotlib cannot write {'.' + suffix if suffix else 'a file without a suffix'}; "
            f"use one of {', '.join('.' + f for f in sorted(formats))} (e.g. map.png)."
        )
    if not path.parent.resolve().is_dir():
        raise FileNotFoundError(f"{path}: the folder {path.parent.resolve()} does not exist; create it first.")


# ----- 2-D maps -----------------------------------------------------------------------------------------------------
def sample_indices(num_rows: int, sample_size: int | None, random_state: int | None = 0) -> np.ndarray:
    """Sorted row indices: all rows, or a seeded sample of ``sample_size`` of them when there are more."""
    check_scalar(sample_size, "sample_size", int, min_val=1, allow_none=True)
    if sample_size is None or num_rows <= sample_size:
        return np.arange(num_rows)
    rng = np.random.default_rng(random_state)
    return np.sort(rng.choice(num_rows, size=sample_size, replace=False))


def project_2d(embeddings, method: str = "umap", random_state: int | None = 0, **kwargs) -> np.ndarray:
    """N x 2 coordinates of N embeddings: UMAP (umap-learn, cosine metric), t-SNE or PCA (scikit-learn).
    ``kwargs`` go to ``umap.UMAP`` / ``sklearn.manifold.TSNE`` / ``sklearn.decomposition.PCA``."""
    x = np.asarray(embeddings, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"`embeddings` must be a 2-D matrix (texts x dimensions), got shape {x.shape}.")
    if x.shape[0] < 4:
        raise ValueError(f"A 2-D map needs at least 4 embeddings, got {x.shape[0]}.")
    if not np.isfinite(x).all():
        raise ValueError("`embeddings` hold NaN or inf values.")
    n = x.shape[0]
    if method == "umap":
        try:
            import umap
        except ImportError as err:
            raise ImportError(
                f"UMAP maps need umap-learn, which is not installed: {PLOT_EXTRA} "
                "(or pass method='tsne', which scikit-learn draws)."
            ) from err
        options = {"n_neighbors": min(15, n - 1), "min_dist": 0.1, "metric": "cosine", "random_state": random_state}
        if n < 20:  # the spectral initialisation needs more points than a handful
            options["init"] = "random"
        options.update(kwargs)
        import warnings

        with warnings.catch_warnings(), keeping_torch_threads():  # "n_jobs overridden to 1": expected, seeded maps
            warnings.filterwarnings("ignore", message=".*n_jobs.*", category=UserWarning)
            return np.asarray(umap.UMAP(n_components=2, **options).fit_transform(x), dtype=np.float32)
    if method == "tsne":
        from sklearn.manifold import TSNE

        options = {
            "perplexity": float(min(30.0, max(1.0, (n - 1) / 3))),
            "init": "pca",
            "metric": "cosine",
            "random_state": random_state,
        }
        options.update(kwargs)
        return np.asarray(TSNE(n_components=2, **options).fit_transform(x), dtype=np.float32)
    if method == "pca":
        from sklearn.decomposition import PCA

        return np.asarray(PCA(n_components=2, random_state=random_state, **kwargs).fit_transform(x), dtype=np.float32)
    raise ValueError(f"`method` must be one of {', '.join(MAP_METHODS)}, got {method!r}.")


def _categories(values, names=None) -> tuple[np.ndarray, list[str]]:
    """(codes 0..C-1 per point, the C category names). ``names`` maps a value (or its index) to a display name."""
    values = np.asarray(values)
    uniques, codes = np.unique(values, return_inverse=True)
    display = []
    for value in uniques.tolist():
        name = None
        if isinstance(names, Mapping):
            name = names.get(value, names.get(str(value)))
        elif names is not None and isinstance(value, (int, np.integer)) and 0 <= int(value) < len(names):
            name = names[int(value)]
        display.append(str(value if name is None else name))
    return codes.reshape(-1), display


def _palette(count: int) -> np.ndarray:
    """``count`` distinct RGBA colours: tab10 / tab20, else a shuffled walk around a perceptual colour map."""
    from matplotlib import colormaps

    if count <= 10:
        return colormaps["tab10"](np.arange(count))
    if count <= 20:
        return colormaps["tab20"](np.arange(count))
    order = np.random.default_rng(0).permutation(count)  # neighbouring ids get far-apart colours
    return colormaps["turbo"](np.linspace(0.03, 0.97, count)[order])


def _draw_map(
    ax,
    coords: np.ndarray,
    values=None,
    names=None,
    title: str | None = None,
    legend_title: str | None = None,
    random_state: int | None = 0,
    point_size: float | None = None,
) -> None:
    n = coords.shape[0]
    size = point_size if point_size is not None else float(np.clip(2000 / max(n, 1), 2, 30))
    order = np.random.default_rng(random_state).permutation(n)  # no category is always drawn on top
    if values is None:
        ax.scatter(coords[order, 0], coords[order, 1], s=size, c="tab:blue", alpha=0.7, linewidths=0)
    else:
        codes, display = _categories(values, names)
        colours = _palette(len(display))
        ax.scatter(coords[order, 0], coords[order, 1], s=size, c=colours[codes[order]], alpha=0.8, linewidths=0)
        if len(display) <= MAX_LEGEND_ENTRIES:
            from matplotlib.lines import Line2D

            handles = [
                Line2D([], [], marker="o", linestyle="", color=colours[i], label=display[i])
                for i in range(len(display))
            ]
            ax.legend(
                handles=handles,
                title=legend_title,
                loc="upper left",
                bbox_to_anchor=(1.0, 1.0),
                fontsize="small",
                title_fontsize="small",
                frameon=False,
                markerscale=0.9,
            )
        else:
            ax.text(
                0.99,
                0.01,
                f"{len(display)} {legend_title or 'categories'} (too many for a legend)",
                transform=ax.transAxes,
                ha="right",
                va="bottom",
                fontsize="x-small",
                color="0.4",
            )
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title)


def _map_values(labels, clusters, label_names, cluster_names):
    if labels is not None:
        return labels, label_names, "label"
    if clusters is not None:
        return clusters, cluster_names, "cluster"
    return None, None, None


def _embedding_matrix(embeddings, name: str = "embeddings") -> np.ndarray:
    x = np.asarray(embeddings, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"`{name}` must be a 2-D matrix (texts x dimensions), got shape {x.shape}.")
    return x


def _check_rows(name: str, values, n: int):
    if values is None:
        return None
    values = np.asarray(values)
    if values.shape[0] != n:
        raise ValueError(f"`{name}` has {values.shape[0]} entries for {n} embeddings: give one per embedding row.")
    return values


def plot_embedding_map(
    embeddings,
    labels: Sequence | None = None,
    clusters: Sequence | None = None,
    method: str = "umap",
    random_state: int | None = 0,
    sample_size: int | None = 5000,
    *,
    label_names: Sequence[str] | Mapping | None = None,
    cluster_names: Sequence[str] | Mapping | None = None,
    title: str | None = None,
    path: str | os.PathLike | None = None,
    ax=None,
    figsize: tuple[float, float] = (8.0, 6.5),
    **projection_kwargs,
):
    """A 2-D map (UMAP by default; ``method="tsne"`` or ``"pca"``) of ``embeddings`` (N x D), points coloured by the
    true ``labels`` when given, else by ``clusters`` (one per row). More than ``sample_size`` rows: a seeded sample
    (``random_state``) is drawn. ``label_names`` / ``cluster_names``: display names by value (a list, or a dict
    such as ``model.config.id2label``). Draws on ``ax`` when given. Returns the Figure."""
    x = _embedding_matrix(embeddings)
    n = x.shape[0]
    labels, clusters = _check_rows("labels", labels, n), _check_rows("clusters", clusters, n)
    rows = sample_indices(n, sample_size, random_state)
    values, names, kind = _map_values(labels, clusters, label_names, cluster_names)
    coords = project_2d(x[rows], method=method, random_state=random_state, **projection_kwargs)
    fig = ax.figure if ax is not None else _new_figure(figsize)
    ax = ax if ax is not None else fig.add_subplot()
    default_title = f"{_method_title(method)} of {len(rows):,}" + (f" of {n:,}" if len(rows) < n else "") + " texts"
    _draw_map(
        ax,
        coords,
        None if values is None else values[rows],
        names,
        title=title or default_title + (f", coloured by {kind}" if kind else ""),
        legend_title=kind,
        random_state=random_state,
    )
    return _finish(fig, path)


def _method_title(method: str) -> str:
    return {"umap": "UMAP", "tsne": "t-SNE", "pca": "PCA"}.get(method, method)


def plot_maps_before_after(
    before,
    after,
    labels: Sequence | None = None,
    clusters: Sequence | None = None,
    method: str = "umap",
    random_state: int | None = 0,
    sample_size: int | None = 5000,
    *,
    titles: tuple[str, str] = ("before training", "after training"),
    label_names: Sequence[str] | Mapping | None = None,
    cluster_names: Sequence[str] | Mapping | None = None,
    suptitle: str | None = None,
    path: str | os.PathLike | None = None,
    figsize: tuple[float, float] = (15.0, 6.5),
    **projection_kwargs,
):
    """Two maps side by side: ``before`` and ``after`` are embedding matrices of the same texts (row i = text i,
    e.g. the pretrained encoder's and the trained model's). The same seeded sample of rows is drawn in both, each
    projected on its own, coloured by ``labels`` (else ``clusters``) alike. Returns the Figure."""
    before, after = _embedding_matrix(before, "before"), _embedding_matrix(after, "after")
    if before.shape[0] != after.shape[0]:
        raise ValueError(
            f"`before` and `after` must be embedding matrices of the same texts (same rows), got shapes "
            f"{before.shape} and {after.shape}."
        )
    n = before.shape[0]
    labels, clusters = _check_rows("labels", labels, n), _check_rows("clusters", clusters, n)
    rows = sample_indices(n, sample_size, random_state)
    values, names, kind = _map_values(labels, clusters, label_names, cluster_names)
    fig = _new_figure(figsize)
    axes = fig.subplots(1, 2)
    for ax, matrix, title in zip(axes, (before, after), titles):
        coords = project_2d(matrix[rows], method=method, random_state=random_state, **projection_kwargs)
        _draw_map(
            ax,
            coords,
            None if values is None else values[rows],
            names,
            title=title,
            legend_title=kind if ax is axes[-1] else None,
            random_state=random_state,
        )
        if ax is not axes[-1] and ax.get_legend() is not None:
            ax.get_legend().remove()  # one legend, right of the second map
    fig.suptitle(
        suptitle
        or f"{_method_title(method)} of {len(rows):,}"
        + (f" of {n:,}" if len(rows) < n else "")
        + " texts"
        + (f", coloured by {kind}" if kind else "")
    )
    return _finish(fig, path)


# ----- cluster sizes ------------------------------------------------------------------------------------------------
def plot_cluster_sizes(
    clusters: Sequence[int],
    num_clusters: int | None = None,
    names: Sequence[str] | Mapping | None = None,
    *,
    title: str | None = None,
    path: str | os.PathLike | None = None,
    ax=None,
    figsize: tuple[float, float] | None = None,
):
    """Bar chart of how many texts each cluster holds, largest first (empty clusters show as 0 when
    ``num_clusters`` is given). ``names``: a list or dict (e.g. ``model.config.id2label``) of cluster names for the
    bars. Returns the Figure."""
    clusters = np.asarray(clusters)
    if clusters.ndim != 1 or clusters.size == 0:
        raise ValueError(f"`clusters` must be a non-empty list of cluster ids, got shape {clusters.shape}.")
    if not np.issubdtype(clusters.dtype, np.integer) or clusters.min() < 0:
        raise ValueError("`clusters` must hold cluster ids: whole numbers >= 0.")
    if num_clusters is not None and clusters.max() >= num_clusters:
        raise ValueError(f"A cluster id {int(clusters.max())} is not below `num_clusters`={num_clusters}.")
    counts = np.bincount(clusters, minlength=num_clusters or 0)
    order = np.argsort(-counts, kind="stable")
    tick_names = []
    for k in order.tolist():
        name = None
        if isinstance(names, Mapping):
            name = names.get(k, names.get(str(k)))
        elif names is not None and k < len(names):
            name = names[k]
        tick_names.append(str(k) if name is None else str(name))
    k_total = len(counts)
    fig = ax.figure if ax is not None else _new_figure(figsize or (max(6.0, min(24.0, 0.35 * k_total + 2)), 4.5))
    ax = ax if ax is not None else fig.add_subplot()
    positions = np.arange(k_total)
    ax.bar(positions, counts[order], color="tab:blue")
    ax.axhline(clusters.size / k_total, color="0.4", linestyle="--", linewidth=1, label="equal sizes")
    step = max(1, math.ceil(k_total / 60))  # at most ~60 tick labels
    ax.set_xticks(positions[::step])
    ax.set_xticklabels(
        tick_names[::step], rotation=90 if max(map(len, tick_names)) > 3 or k_total > 20 else 0, fontsize="small"
    )
    ax.set_xlim(-0.6, k_total - 0.4)
    ax.set_ylabel("texts")
    ax.set_xlabel("cluster (largest first)")
    used = int((counts > 0).sum())
    ax.set_title(title or f"Cluster sizes: {clusters.size:,} texts in {used} of {k_total} clusters")
    ax.legend(fontsize="small", frameon=False)
    return _finish(fig, path)


# ----- training curves ----------------------------------------------------------------------------------------------
def load_log_history(source: str | os.PathLike) -> list[dict]:
    """The Trainer's ``log_history`` from a ``trainer_state.json`` file, a checkpoint folder, a run folder (its own
    ``trainer_state.json``, else that of its newest ``checkpoint-N``), or a JSON file with a ``log_history`` key."""
    path = Path(source)
    if path.is_dir():
        candidates = [path / "trainer_state.json"]
        checkpoints = sorted(
            (p for p in path.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()),
            key=lambda p: int(p.name.split("-")[-1]),
            reverse=True,
        )
        candidates += [p / "trainer_state.json" for p in checkpoints]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise FileNotFoundError(
                f"{path} holds no trainer_state.json (nor a checkpoint-N with one): the run was "
                "saved without checkpoints (save_strategy='no'), so no log history was kept."
            )
        path = found
    if not path.is_file():
        raise FileNotFoundError(f"No log history file {path.resolve()}.")
    data = json.loads(path.read_text())
    history = data.get("log_history") if isinstance(data, dict) else data
    if not isinstance(history, list):
        raise ValueError(f"{path} has no `log_history` list.")
    return history


_HEALTH_KEYS = ("health_agreement", "health_size_entropy", "health_changed")
_SCORE_KEYS = ("eval_acc", "eval_nmi", "eval_kmeans_acc", "eval_kmeans_nmi")


def _series(history: Sequence[Mapping], key: str) -> tuple[list[float], list[float]]:
    steps, values = [], []
    for entry in history:
        value = entry.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and "step" in entry:
            steps.append(entry["step"])
            values.append(float(value))
    return steps, values


def plot_training_curves(
    log_history: Sequence[Mapping[str, Any]] | str | os.PathLike,
    *,
    title: str | None = None,
    path: str | os.PathLike | None = None,
    ncols: int = 3,
):
    """One panel per loss term (``loss`` and each ``loss_<term>`` the clustering trainers log) over the steps, and
    one panel with the cluster health checks (``health_agreement``, ``health_size_entropy``, ``health_changed``;
    ``health_clusters_used`` on its own axis) and any ``eval_acc`` / ``eval_nmi`` logged. ``log_history`` is the
    Trainer's ``state.log_history`` or a path :func:`load_log_history` reads. Returns the Figure."""
    if isinstance(log_history, (str, os.PathLike)):
        log_history = load_log_history(log_history)
    history = [entry for entry in log_history if isinstance(entry, Mapping)]
    keys = list(dict.fromkeys(k for entry in history for k in entry))
    loss_keys = [k for k in keys if (k == "loss" or k.startswith("loss_")) and _series(history, k)[0]]
    score_keys = [k for k in (*_HEALTH_KEYS, *_SCORE_KEYS) if _series(history, k)[0]]
    has_used = bool(_series(history, "health_clusters_used")[0])
    panels = len(loss_keys) + (1 if score_keys or has_used else 0)
    if panels == 0:
        raise ValueError(
            "The log history holds no loss, health_* or eval_acc / eval_nmi values with a step: nothing "
            "to plot (was anything logged? see --logging-steps)."
        )
    ncols = max(1, min(ncols, panels))
    nrows = math.ceil(panels / ncols)
    fig = _new_figure((4.6 * ncols, 3.4 * nrows))
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False).ravel())
    for ax, key in zip(axes, loss_keys):
        steps, values = _series(history, key)
        ax.plot(steps, values, marker="o" if len(steps) < 30 else None, markersize=3, color="tab:blue")
        ax.set_title("total loss" if key == "loss" else f"loss term: {key[5:]}")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    if score_keys or has_used:
        ax = axes[len(loss_keys)]
        for key in score_keys:
            steps, values = _series(history, key)
            ax.plot(steps, values, marker="o", markersize=3, label=key)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("step")
        ax.set_title("cluster health" + (" and scores" if any(k.startswith("eval_") for k in score_keys) else ""))
        ax.grid(alpha=0.3)
        handles, names = ax.get_legend_handles_labels()
        if has_used:
            twin = ax.twinx()
            steps, values = _series(history, "health_clusters_used")
            line = twin.plot(
                steps, values, color="0.35", linestyle="--", marker="s", markersize=3, label="health_clusters_used"
            )
            twin.set_ylabel("clusters used")
            twin.set_ylim(0, max(values) * 1.1 + 1)
            handles, names = handles + line, names + ["health_clusters_used (right)"]
        ax.legend(handles, names, fontsize="x-small", loc="lower left", frameon=False)
    for ax in axes[panels:]:
        ax.set_visible(False)
    if title:
        import textwrap

        width = max(40, int(18 * fig.get_size_inches()[0]))  # characters that fit the figure's width
        fig.suptitle("\n".join(textwrap.wrap(title, width)), fontsize="medium")
    return _finish(fig, path)


# ----- leaderboard --------------------------------------------------------------------------------------------------
def _rows_of(rows) -> list[dict]:
    if isinstance(rows, (str, os.PathLike)):
        path = Path(rows)
        if not path.is_file():
            raise FileNotFoundError(
                f"No results file {path.resolve()} (`python -m training.bench` writes docs/results.json)."
            )
        rows = json.loads(path.read_text())
    if isinstance(rows, Mapping):
        rows = rows.get("rows", [])
    return [r for r in rows if isinstance(r, Mapping)]


def _display_name(method: str) -> str:
    try:
        from ..models import METHODS

        spec = METHODS.get(method)
        return spec.display_name if spec else method
    except Exception:  # noqa: BLE001 - a name is only a label here
        return method


_KMEANS_SERIES = " k-means on its embeddings"


def leaderboard_table(
    rows, metric: str = "acc", variant: str = "", datasets: Sequence[str] | None = None
) -> tuple[list[str], dict[str, dict[str, list[float]]]]:
    """(corpora, {series: {corpus: [value per seed]}}) from ``docs/results.json`` rows: the baselines (section
    ``baselines``, and the BERTopic rows of section ``auto-k``), and per method of section ``method`` (runs of
    ``variant``, "" = the main runs) its head's
    ``metric`` and ``kmeans_<metric>`` (k-means on its trained embeddings)."""
    rows = _rows_of(rows)
    series: dict[str, dict[str, list[float]]] = {}

    def add(name, dataset, value):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            series.setdefault(name, {}).setdefault(dataset, []).append(100 * float(value))

    baselines = [r for r in rows if r.get("section") == "baselines"]
    methods = [r for r in rows if r.get("section") == "method" and (r.get("variant") or "") == variant]
    for row in sorted(
        baselines,
        key=lambda r: (
            ("bow-kmeans", "tfidf-kmeans", "embeddings-kmeans").index(r["method"])
            if r.get("method") in ("bow-kmeans", "tfidf-kmeans", "embeddings-kmeans")
            else 9
        ),
    ):
        add(row["method"], row["dataset"], row.get(metric))
    # the BERTopic ways, measured with the auto-K benchmark on the same embeddings
    for method, name in (
        ("bertopic-kmeans", "BERTopic (UMAP -> k-means, true K)"),
        ("bertopic", "BERTopic default (UMAP -> HDBSCAN)"),
    ):
        for row in rows:
            if row.get("section") == "auto-k" and row.get("method") == method:
                add(name, row["dataset"], row.get(metric))
    try:
        from ..models import METHODS

        registry_order = list(METHODS)
    except Exception:  # noqa: BLE001
        registry_order = []
    order = {name: i for i, name in enumerate(registry_order)}
    for row in sorted(methods, key=lambda r: (order.get(r["method"], len(order)), r["method"])):
        name = _display_name(row["method"])
        add(f"{name} head", row["dataset"], row.get(metric))
        add(f"{name}{_KMEANS_SERIES}", row["dataset"], row.get(f"kmeans_{metric}"))
    present = list(dict.fromkeys(d for values in series.values() for d in values))
    try:
        from ..data import CORPORA

        present.sort(key=lambda d: (list(CORPORA).index(d) if d in CORPORA else len(CORPORA), d))
    except Exception:  # noqa: BLE001
        pass
    if datasets is not None:
        missing = [d for d in datasets if d not in present]
        if missing:
            raise ValueError(f"No rows for {missing} in the results (corpora there: {', '.join(present) or 'none'}).")
        present = list(datasets)
    return present, series


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
    """Grouped bars of ``metric`` (ACC by default, in %) per corpus for each baseline and method, the mean over
    seeds (error bar: the standard deviation when there are several). ``rows``: the rows of ``docs/results.json``
    (a list, the stored dict, or its path). Returns the Figure."""
    corpora, series = leaderboard_table(rows, metric, variant, datasets)
    series = {name: values for name, values in series.items() if any(d in values for d in corpora)}
    if not corpora or not series:
        raise ValueError(f"No baseline or method rows with {metric!r} to plot.")
    names = list(series)
    width = 0.8 / len(names)
    fig = _new_figure(figsize or (max(8.0, min(18.0, 0.16 * len(names) * len(corpora) + 3)), 5.0))
    ax = fig.add_subplot()
    # a method's head and the k-means on its embeddings share a colour (the latter hatched)
    groups = list(dict.fromkeys(name.removesuffix(_KMEANS_SERIES).removesuffix(" head") for name in names))
    colours = dict(zip(groups, _palette(len(groups))))
    positions = np.arange(len(corpora))
    for i, name in enumerate(names):
        means = [float(np.mean(series[name][d])) if d in series[name] else np.nan for d in corpora]
        stds = [float(np.std(series[name][d])) if len(series[name].get(d, [])) > 1 else 0.0 for d in corpora]
        hatched = name.endswith(_KMEANS_SERIES)
        colour = colours[name.removesuffix(_KMEANS_SERIES).removesuffix(" head")]
        ax.bar(
            positions - 0.4 + (i + 0.5) * width,
            means,
            width,
            yerr=stds,
            label=name,
            color=colour,
            hatch="///" if hatched else None,
            edgecolor="white" if hatched else colour,
            linewidth=0,
            alpha=0.75 if hatched else 1.0,
            error_kw={"elinewidth": 0.8},
        )
    ax.set_xticks(positions)
    ax.set_xticklabels(corpora, rotation=20 if len(corpora) > 5 else 0)
    ax.set_ylabel(f"{metric.upper()} (%)")
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    seeds = sorted({len(v) for values in series.values() for v in values.values()})
    over = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    ax.set_title(
        title
        or f"{metric.upper()} per corpus (mean over {over} seed{'s' if seeds[-1] > 1 else ''} per bar"
        + ("; error bar: std" if seeds[-1] > 1 else "")
        + (f"; variant {variant!r}" if variant else "")
        + ")"
    )
    return _finish(fig, path)


# ----- a model's clusters on texts (hf-textcluster plot) ------------------------------------------------------------
def plot_clustering_overview(
    embeddings,
    clusters: Sequence[int],
    labels: Sequence | None = None,
    *,
    num_clusters: int | None = None,
    cluster_names: Sequence[str] | Mapping | None = None,
    label_names: Sequence[str] | Mapping | None = None,
    all_clusters: Sequence[int] | None = None,
    method: str = "umap",
    random_state: int | None = 0,
    title: str | None = None,
    path: str | os.PathLike | None = None,
    **projection_kwargs,
):
    """One picture of a model's clustering: the 2-D map of ``embeddings`` coloured by ``clusters`` (and, given
    ``labels``, a second map of the same points coloured by label), above the cluster sizes of ``all_clusters``
    (default: ``clusters``; pass the clusters of every text when the map shows a sample). Returns the Figure."""
    x = _embedding_matrix(embeddings)
    clusters = _check_rows("clusters", clusters, x.shape[0])
    labels = _check_rows("labels", labels, x.shape[0])
    coords = project_2d(x, method=method, random_state=random_state, **projection_kwargs)
    maps = 2 if labels is not None else 1
    fig = _new_figure((7.5 * maps, 10.5))
    grid = fig.add_gridspec(2, maps, height_ratios=(2.2, 1))
    name = _method_title(method)
    ax = fig.add_subplot(grid[0, 0])
    _draw_map(
        ax,
        coords,
        clusters,
        cluster_names,
        title=f"{name}, coloured by cluster",
        legend_title="cluster",
        random_state=random_state,
    )
    if labels is not None:
        ax = fig.add_subplot(grid[0, 1])
        _draw_map(
            ax,
            coords,
            labels,
            label_names,
            title=f"{name}, coloured by label",
            legend_title="label",
            random_state=random_state,
        )
    plot_cluster_sizes(
        all_clusters if all_clusters is not None else clusters,
        num_clusters,
        cluster_names,
        ax=fig.add_subplot(grid[1, :]),
    )
    if title:
        fig.suptitle(title)
    return _finish(fig, path)


def is_placeholder_names(names: Mapping | Iterable | None) -> bool:
    """Whether ``names`` are the config's placeholders (``cluster_0``, ...), which say nothing a number does not."""
    if not isinstance(names, Mapping):
        return names is None
    return all(str(v) == f"cluster_{k}" or str(v) == f"LABEL_{k}" for k, v in names.items())
