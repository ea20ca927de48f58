"""Pictures of a clustering: 2-D maps of the embeddings, cluster sizes, and training curves.

Every function draws with matplotlib's object-oriented API on the Agg canvas (no window, no ``plt.show``, no change
to pyplot's global backend), returns the ``matplotlib.figure.Figure`` and, given ``path``, saves it there (PNG or any
format matplotlib writes, from the suffix). matplotlib is optional: ``pip install
"hf_textcluster[plot]"``; the maps' projections (umap-learn, scikit-learn) are dependencies of the package.

This module draws the maps and the cluster sizes; the others live beside it: the projections in
:mod:`~hf_textcluster.figures.projection`, the training curves in :mod:`~hf_textcluster.apps.training_curves` and the
canvas every picture is drawn on in :mod:`~hf_textcluster.apps.canvas` (the benchmark's leaderboard picture is
``training/bench/leaderboard_plot.py``).

    from hf_textcluster.apps.plotting import plot_embedding_map, plot_cluster_sizes
    from hf_textcluster.apps.training_curves import plot_training_curves
    plot_embedding_map(model.embed(texts), labels=labels, path="map.png")           # UMAP, coloured by label
    plot_cluster_sizes(model.predict(texts), model.config.num_clusters, names=model.config.id2label)
    plot_training_curves(trainer.state.log_history)     # or a checkpoint's trainer_state.json
"""

import math
import os
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..figures.clusters import display_name
from ..figures.projection import embedding_matrix, method_title, project_2d
from ..representation.summary import sample_rows
from .canvas import new_figure, palette, save_figure

# More categories than this: no legend (the colours still tell them apart locally).
MAX_LEGEND_ENTRIES = 20


def _draw_map(ax, coords: np.ndarray, values, names, title: str, legend_title: str, random_state: int | None) -> None:
    n = coords.shape[0]
    size = float(np.clip(2000 / max(n, 1), 2, 30))
    order = np.random.default_rng(random_state).permutation(n)  # no category is always drawn on top
    if values is None:
        ax.scatter(coords[order, 0], coords[order, 1], s=size, c="tab:blue", alpha=0.7, linewidths=0)
    else:
        uniques, codes = np.unique(np.asarray(values), return_inverse=True)  # codes 0..C-1 of the C categories
        codes, display = codes.reshape(-1), [display_name(value, names) for value in uniques.tolist()]
        colours = palette(len(display))
        ax.scatter(coords[order, 0], coords[order, 1], s=size, c=colours[codes[order]], alpha=0.8, linewidths=0)
        if len(display) > MAX_LEGEND_ENTRIES:  # a note saying how many instead of a legend
            note = f"{len(display)} {legend_title or 'categories'} (too many for a legend)"
            ax.text(0.99, 0.01, note, transform=ax.transAxes, ha="right", va="bottom", fontsize="x-small", color="0.4")
        else:  # a legend right of the map
            from matplotlib.lines import Line2D

            handles = [Line2D([], [], marker="o", linestyle="", color=c, label=d) for c, d in zip(colours, display)]
            legend_style = {"fontsize": "small", "title_fontsize": "small", "frameon": False, "markerscale": 0.9}
            ax.legend(handles=handles, title=legend_title, loc="upper left", bbox_to_anchor=(1.0, 1.0), **legend_style)
    ax.set(xticks=[], yticks=[], title=title)


def check_rows(name: str, values, num_rows: int, dtype=None) -> np.ndarray | None:
    """``values`` as a 1-D array of one value per text, or None when not given.

    Raises:
        ValueError: not one value per text (embedding row).

    Example:
        >>> check_rows("labels", [0, 1], 2).tolist()
        [0, 1]
    """
    if values is None:
        return None
    array = np.asarray(values, dtype=dtype)
    if array.ndim != 1 or len(array) != num_rows:
        raise ValueError(f"`{name}` has shape {array.shape} for {num_rows} embeddings: give one per embedding row.")
    return array


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
    """A 2-D map of ``embeddings``, points coloured by the true ``labels`` when given, else by ``clusters``.

    Args:
        embeddings: N x D embeddings.
        labels: One true class per row (optional).
        clusters: One cluster id per row (optional; used when ``labels`` are not given).
        method: ``"umap"`` (default), ``"tsne"`` or ``"pca"``.
        random_state: Seed of the sample, the projection and the drawing order.
        sample_size: More rows than this: a seeded sample of them is drawn; None draws all.
        label_names, cluster_names: Display names by value (a list, or a dict such as ``model.config.id2label``).
        title: The map's title; default: what it shows.
        path: Where to save the picture (its format from the suffix); None only returns it.
        ax: A matplotlib Axes to draw on; default: a new figure.
        figsize: The new figure's size in inches.
        **projection_kwargs: Passed to the projection (:func:`~hf_textcluster.figures.projection.project_2d`).

    Returns:
        The matplotlib Figure.

    Raises:
        ValueError: not a matrix, ``labels`` / ``clusters`` of another length, an unknown ``method``.
        ImportError: matplotlib (or, for UMAP, umap-learn) is not installed.

    Example:
        >>> plot_embedding_map(model.embed(texts), labels=labels, path="map.png")  # doctest: +SKIP
    """
    x = embedding_matrix(embeddings)
    n = x.shape[0]
    labels, clusters = check_rows("labels", labels, n), check_rows("clusters", clusters, n)
    rows = sample_rows(n, sample_size, random_state)
    # coloured by the true labels when given, else by the clusters
    kind, values, names = ("label", labels, label_names) if labels is not None else ("cluster", clusters, cluster_names)
    coords = project_2d(x[rows], method=method, random_state=random_state, **projection_kwargs)
    ax = ax if ax is not None else new_figure(figsize).add_subplot()
    shown = f"{len(rows):,} of {n:,}" if len(rows) < n else f"{n:,}"
    coloured = f", coloured by {kind}" if values is not None else ""
    title = title or f"{method_title(method)} of {shown} texts{coloured}"
    _draw_map(ax, coords, None if values is None else values[rows], names, title, kind, random_state)
    return save_figure(ax.figure, path)


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
    """Two maps side by side of the same texts: the same seeded sample of rows in both, each projected on its own,
    coloured by ``labels`` (else ``clusters``) alike.

    Args:
        before, after: Embedding matrices of the same texts (row i = text i), e.g. the pretrained encoder's and the
            trained model's.
        labels, clusters, method, random_state, sample_size, label_names, cluster_names: As in
            :func:`plot_embedding_map`.
        titles: The two maps' titles.
        suptitle: The title above both; default: what they show.
        path: Where to save the picture (its format from the suffix); None only returns it.
        figsize: The figure's size in inches.
        **projection_kwargs: Passed to the projection.

    Returns:
        The matplotlib Figure.

    Raises:
        ValueError: ``before`` and ``after`` of different numbers of rows, or as :func:`plot_embedding_map`.

    Example:
        >>> plot_maps_before_after(encoder_embeddings, model.embed(texts), labels, path="maps.png")  # doctest: +SKIP
    """
    before, after = embedding_matrix(before, "before"), embedding_matrix(after, "after")
    if before.shape[0] != after.shape[0]:
        raise ValueError(
            f"`before` and `after` must be embedding matrices of the same texts (same rows), got shapes "
            f"{before.shape} and {after.shape}."
        )
    fig = new_figure(figsize)
    axes = fig.subplots(1, 2)
    shared = {"label_names": label_names, "cluster_names": cluster_names, **projection_kwargs}
    for ax, matrix in zip(axes, (before, after)):  # the same seeded sample of rows in both
        plot_embedding_map(matrix, labels, clusters, method, random_state, sample_size, ax=ax, **shared)
    if axes[0].get_legend() is not None:
        axes[0].get_legend().remove()  # one legend, right of the second map
    fig.suptitle(suptitle or axes[0].get_title())  # by default, what both maps show
    for ax, title in zip(axes, titles):
        ax.set_title(title)
    return save_figure(fig, path)


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
    """Bar chart of how many texts each cluster holds, largest first, beside the line of equal sizes.

    Args:
        clusters: One cluster id per text.
        num_clusters: K; when given, empty clusters show as bars of 0.
        names: Cluster names for the bars (a list, or a dict such as ``model.config.id2label``); default: the ids.
        title: The chart's title; default: how many texts in how many clusters.
        path: Where to save the picture (its format from the suffix); None only returns it.
        ax: A matplotlib Axes to draw on; default: a new figure.
        figsize: The new figure's size in inches; default: from K.

    Returns:
        The matplotlib Figure.

    Raises:
        ValueError: no ids, ids that are not whole numbers >= 0, an id not below ``num_clusters``.

    Example:
        >>> plot_cluster_sizes(model.predict(texts), model.config.num_clusters, path="sizes.png")  # doctest: +SKIP
    """
    clusters = np.asarray(clusters)
    if clusters.ndim != 1 or clusters.size == 0:
        raise ValueError(f"`clusters` must be a non-empty list of cluster ids, got shape {clusters.shape}.")
    if not np.issubdtype(clusters.dtype, np.integer) or clusters.min() < 0:
        raise ValueError("`clusters` must hold cluster ids: whole numbers >= 0.")
    if num_clusters is not None and clusters.max() >= num_clusters:
        raise ValueError(f"A cluster id {int(clusters.max())} is not below `num_clusters`={num_clusters}.")
    counts = np.bincount(clusters, minlength=num_clusters or 0)
    order = np.argsort(-counts, kind="stable")
    tick_names = [display_name(k, names) for k in order.tolist()]
    k_total = len(counts)
    if ax is None:
        ax = new_figure(figsize or (max(6.0, min(24.0, 0.35 * k_total + 2)), 4.5)).add_subplot()
    positions = np.arange(k_total)
    ax.bar(positions, counts[order], color="tab:blue")
    ax.axhline(clusters.size / k_total, color="0.4", linestyle="--", linewidth=1, label="equal sizes")
    step = max(1, math.ceil(k_total / 60))  # at most ~60 tick labels
    rotation = 90 if max(map(len, tick_names)) > 3 or k_total > 20 else 0
    ax.set_xticks(positions[::step], tick_names[::step], rotation=rotation, fontsize="small")
    used = int((counts > 0).sum())
    title = title or f"Cluster sizes: {clusters.size:,} texts in {used} of {k_total} clusters"
    ax.set(xlim=(-0.6, k_total - 0.4), xlabel="cluster (largest first)", ylabel="texts", title=title)
    ax.legend(fontsize="small", frameon=False)
    return save_figure(ax.figure, path)


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
    """One picture of a model's clustering (what ``hf-textcluster plot`` draws): the 2-D map of ``embeddings``
    coloured by ``clusters`` (and, given ``labels``, a second map of the same points coloured by label), above the
    cluster sizes.

    Args:
        embeddings: N x D embeddings (all of them are projected: sample before calling).
        clusters: One cluster id per row.
        labels: One true class per row (optional: adds the second map).
        num_clusters: K, for the sizes' empty clusters.
        cluster_names, label_names: Display names by value (a list or a dict).
        all_clusters: The clusters whose sizes are drawn; default: ``clusters`` (pass the clusters of every text
            when the map shows a sample).
        method: ``"umap"`` (default), ``"tsne"`` or ``"pca"``.
        random_state: Seed of the projection and the drawing order.
        title: A title above the picture.
        path: Where to save the picture (its format from the suffix); None only returns it.
        **projection_kwargs: Passed to the projection.

    Returns:
        The matplotlib Figure.

    Raises:
        ValueError: as :func:`plot_embedding_map` and :func:`plot_cluster_sizes`.

    Example:
        >>> plot_clustering_overview(model.embed(texts), model.predict(texts), path="overview.png")  # doctest: +SKIP
    """
    x = embedding_matrix(embeddings)
    clusters, labels = check_rows("clusters", clusters, len(x)), check_rows("labels", labels, len(x))
    coords = project_2d(x, method=method, random_state=random_state, **projection_kwargs)
    maps = 2 if labels is not None else 1
    fig = new_figure((7.5 * maps, 10.5))
    grid = fig.add_gridspec(2, maps, height_ratios=(2.2, 1))
    name = method_title(method)
    coloured_by = [("cluster", clusters, cluster_names)] + ([("label", labels, label_names)] if maps == 2 else [])
    for column, (kind, values, names) in enumerate(coloured_by):
        ax = fig.add_subplot(grid[0, column])
        _draw_map(ax, coords, values, names, f"{name}, coloured by {kind}", kind, random_state)
    sized = all_clusters if all_clusters is not None else clusters
    plot_cluster_sizes(sized, num_clusters, cluster_names, ax=fig.add_subplot(grid[1, :]))
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


def is_placeholder_names(names: Mapping | Iterable | None) -> bool:
    """Whether ``names`` are the config's placeholders (``cluster_0``, ...), which say nothing a number does not.

    Args:
        names: Cluster names by id (a dict such as ``model.config.id2label``), or None.

    Returns:
        True for None or a dict of only ``cluster_<id>`` / ``LABEL_<id>`` names; False for any other names.

    Example:
        >>> is_placeholder_names({0: "cluster_0", 1: "LABEL_1"}), is_placeholder_names({0: "sql"})
        (True, False)
    """
    if not isinstance(names, Mapping):
        return names is None
    return all(str(v) == f"cluster_{k}" or str(v) == f"LABEL_{k}" for k, v in names.items())
