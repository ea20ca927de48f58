"""The figures of a clustering, as plotly figures built from plain arrays (so each can be drawn, tested and reused
alone): the HTML report's and ``Clusterer.visualize_*``'s.

- :func:`text_map_figure`: the texts on a 2-D map of their embeddings, coloured by cluster, the text on hover
  (:func:`documents_figure` projects them first: BERTopic's ``visualize_documents``);
- :func:`keyword_bars_figure`: each cluster's top keywords as bars of their c-TF-IDF weights;
- :func:`cluster_map_figure`: the clusters' centres projected to 2-D (PCA), each a disc sized by its cluster;
- :func:`hierarchy_figure`: the dendrogram of the centres (average linkage, cosine distance), whose lowest joins are
  the clusters a merge would join first (:func:`first_joins` lists them);
- :func:`confidence_figure`: the histogram of the confidence, flagged outliers stacked on the others;
- :func:`confusion_figure`: the classes against the clusters, Hungarian-matched as the ACC metric matches them.

The middle three are what BERTopic's ``visualize_barchart``, ``visualize_topics`` and ``visualize_hierarchy`` show. A
cluster's centre here is the mean of its texts' L2-normalised embeddings (:func:`cluster_centres`), whatever the
method: the same picture for every clusterer, computed from the texts the report shows.

    from hf_textcluster.figures.clusters import cluster_centres, hierarchy_figure
    ids, centres, sizes = cluster_centres(embeddings, clusters, num_clusters)
    hierarchy_figure(ids, centres, names).write_html("hierarchy.html")
"""

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..markup import escape_html
from ..modeling.input_checks import missing_labels
from .projection import method_title, project_2d

# The largest clusters get a bar chart each; more would make the page a wall of bars.
MAX_BAR_CLUSTERS = 12
CONFIDENCE_BINS = 40


# names and keywords are a model's data: escaped before a figure (plotly renders a subset of HTML in its labels)
_e = escape_html


def shorten(text: str, limit: int = 160) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking a cut.

    Example:
        >>> shorten("a long sentence", 6)
        'a lon…'
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def display_name(value, names) -> str:
    """How a figure shows a category: its name in ``names`` (a dict by value or its string, or a list by index)."""
    name = None
    if isinstance(names, Mapping):
        name = names.get(value, names.get(str(value)))
    elif names is not None and isinstance(value, (int, np.integer)) and 0 <= int(value) < len(names):
        name = names[int(value)]
    return str(value if name is None else name)


def _label(k: int, names: Mapping[int, str], limit: int = 40) -> str:
    return _e(f"{k}: {shorten(str(names.get(k, f'cluster_{k}')), limit)}")


def _laid_out(fig, height: int, x: str | None, y: str | None, axis: dict | None = None, **layout):
    """``fig`` laid out as every figure of the report is: ``height`` pixels, axes titled ``x`` and ``y`` (both with
    the options ``axis``), a small top margin unless ``layout`` (more of plotly's layout) says otherwise."""
    axes = {"xaxis": {"title": x, **(axis or {})}, "yaxis": {"title": y, **(axis or {})}}
    fig.update_layout(height=height, **{"margin": {"t": 30}, **axes, **layout})
    return fig


def cluster_centres(embeddings, clusters, num_clusters: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The centre of every cluster that holds texts: the mean of its texts' L2-normalised embeddings, normalised.

    Args:
        embeddings: N x d embeddings.
        clusters: N cluster ids in ``0 .. num_clusters - 1``; -1 (an outlier) is in no cluster.
        num_clusters: K.

    Returns:
        ``(ids, centres, sizes)``: the used cluster ids (ascending), their centres (one row each) and sizes.

    Raises:
        ValueError: ``embeddings`` and ``clusters`` of different lengths.

    Example:
        >>> ids, centres, sizes = cluster_centres(np.eye(3), [0, 2, 2], 3)
        >>> ids.tolist(), sizes.tolist()
        ([0, 2], [1, 2])
    """
    x = np.asarray(embeddings, dtype=np.float64)
    clusters = np.asarray(clusters, dtype=int)
    if x.ndim != 2 or len(x) != len(clusters):
        raise ValueError(f"`embeddings` must be an N x d matrix with N = {len(clusters)} (one row per cluster id).")
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    counts = np.bincount(clusters[clusters >= 0], minlength=num_clusters)
    ids = np.flatnonzero(counts)
    centres = np.stack([x[clusters == k].mean(axis=0) for k in ids])
    centres /= np.maximum(np.linalg.norm(centres, axis=1, keepdims=True), 1e-12)
    return ids, centres, counts[ids]


def centre_linkage(centres) -> np.ndarray:
    """scipy's linkage matrix of the centres: average linkage of their cosine distances (what the dendrogram draws)."""
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import pdist

    return linkage(pdist(np.asarray(centres, dtype=np.float64), "cosine"), "average")


def first_joins(ids: Sequence[int], centres, count: int = 3) -> list[tuple[list[int], list[int], float]]:
    """The first ``count`` joins of the hierarchy: which clusters a merge would join, closest first.

    Returns:
        ``[(cluster ids on one side, on the other, cosine distance), ...]`` in the order the hierarchy joins them.

    Example:
        >>> left, right, _ = first_joins([0, 1, 2], np.array([[1.0, 0.0], [0.99, 0.14], [0.0, 1.0]]), count=1)[0]
        >>> left, right
        ([0], [1])
    """
    ids = [int(k) for k in ids]
    if len(ids) < 2:
        return []
    members = {i: [k] for i, k in enumerate(ids)}
    joins = []
    for step, (a, b, distance, _) in enumerate(centre_linkage(centres)):
        left, right = members[int(a)], members[int(b)]
        members[len(ids) + step] = sorted(left + right)
        joins.append((sorted(left), sorted(right), float(distance)))
    return joins[:count]


def keyword_bars_figure(
    weights: Mapping[int, Sequence[tuple[str, float]]],
    order: Sequence[int],
    names: Mapping[int, str],
    *,
    max_clusters: int = MAX_BAR_CLUSTERS,
    words: int = 5,
    columns: int = 3,
):
    """One bar chart per cluster of ``order`` (the first ``max_clusters``): its top ``words`` keywords, each bar its
    c-TF-IDF weight (:meth:`ClassTfidfRepresentation.extract_weights`), the highest on top.

    Args:
        weights: ``{cluster: [(keyword, weight), ...]}``, highest weight first.
        order: cluster ids in the order to draw them (the report: largest first).
        names: cluster id -> name (the panel titles).

    Returns:
        A plotly Figure (one subplot per cluster; trace ``i`` is the ``i``-th cluster's bars).
    """
    from plotly.subplots import make_subplots

    shown = [int(k) for k in order][:max_clusters]
    rows = max(1, math.ceil(len(shown) / columns))
    heads = [_label(k, names, 32) for k in shown]
    fig = make_subplots(
        rows, columns, subplot_titles=heads, horizontal_spacing=0.12, vertical_spacing=min(0.12, 0.5 / rows)
    )
    for i, k in enumerate(shown):
        scored = list(weights.get(k, []))[:words][::-1]  # plotly draws the first bar at the bottom
        fig.add_bar(
            x=[w for _, w in scored],
            y=[_e(word) for word, _ in scored],
            name=_label(k, names),
            row=i // columns + 1,
            col=i % columns + 1,
        )
    fig.update_traces(orientation="h", showlegend=False, hovertemplate="%{y}: c-TF-IDF %{x:.4f}<extra></extra>")
    fig.update_layout(height=max(260, 210 * rows), margin={"t": 50, "l": 10, "r": 10})
    fig.update_xaxes(showticklabels=False)
    return fig


def cluster_map_figure(ids: Sequence[int], centres, sizes: Sequence[int], names: Mapping[int, str]):
    """The clusters as discs on a 2-D PCA projection of their centres, each sized by (the square root of) its number
    of texts: nearby discs are clusters with similar texts. Needs at least two clusters.

    Returns:
        A plotly Figure with one Scatter trace whose ``customdata`` holds ``[cluster id, size]`` per point.
    """
    import plotly.graph_objects as go
    from sklearn.decomposition import PCA

    centres = np.asarray(centres, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.int64)
    if len(centres) < 2:
        raise ValueError(f"A map of clusters needs at least 2 clusters holding texts, got {len(centres)}.")
    components = min(2, centres.shape[1])
    coords = PCA(n_components=components, random_state=0).fit_transform(centres)
    if components == 1:
        coords = np.column_stack([coords[:, 0], np.zeros(len(coords))])
    diameter = 12 + 48 * np.sqrt(sizes / max(sizes.max(), 1))
    fig = go.Figure().add_scatter(
        x=coords[:, 0].tolist(),  # lists: the page carries plain numbers, not base64 typed arrays
        y=coords[:, 1].tolist(),
        mode="markers+text",
        text=[str(int(k)) for k in ids],
        textposition="middle center",
        customdata=[[int(k), int(n)] for k, n in zip(ids, sizes)],
        hovertext=[f"{_label(int(k), names)}<br>{int(n):,} texts" for k, n in zip(ids, sizes)],
        hovertemplate="%{hovertext}<extra></extra>",
        marker={"size": diameter.tolist(), "opacity": 0.55, "line": {"width": 1, "color": "#333"}},
        showlegend=False,
    )
    return _laid_out(fig, 520, "PCA 1 of the cluster centres", "PCA 2", {"showticklabels": False, "zeroline": False})


def hierarchy_figure(ids: Sequence[int], centres, names: Mapping[int, str]):
    """The dendrogram of the cluster centres (average linkage of cosine distances, :func:`centre_linkage`): one leaf
    per cluster holding texts; the lower two branches join, the more alike their clusters. Needs at least two.

    Returns:
        A plotly Figure (``plotly.figure_factory.create_dendrogram``); the leaves are the y-axis tick labels.
    """
    import plotly.figure_factory as ff

    centres = np.asarray(centres, dtype=np.float64)
    if len(centres) < 2:
        raise ValueError(f"A hierarchy needs at least 2 clusters holding texts, got {len(centres)}.")
    labels = [_label(int(k), names) for k in ids]
    # linkagefun: the joins first_joins lists
    fig = ff.create_dendrogram(centres, orientation="left", labels=labels, linkagefun=lambda _: centre_linkage(centres))
    fig.update_yaxes(automargin=True)
    x_title = "cosine distance between the joined groups (average linkage)"
    # create_dendrogram fixes a width; the page's is wanted
    return _laid_out(fig, max(320, 22 * len(labels) + 120), x_title, None, width=None, autosize=True, showlegend=False)


def text_map_figure(coords, clusters, rows, texts: Sequence[str], names, confidence, method: str, title: str):
    """The texts of ``rows`` as points at ``coords``, one trace (and colour) per cluster, the text on hover.

    Args:
        coords: ``len(rows)`` x 2 coordinates, row i the point of text ``rows[i]``.
        clusters: The N texts' cluster ids (-1: outliers, in grey).
        rows: The sorted indices of the texts drawn.
        texts: The N texts.
        names: cluster id -> name.
        confidence: The N texts' confidences (shown on hover).
        method: The projection's name, for the axes (``"UMAP"``, ``"PCA"``).
        title: The figure's title.

    Returns:
        A plotly Figure with one Scatter trace per cluster drawn.

    Example:
        >>> fig = text_map_figure(coords, clusters, rows, texts, names, confidence, "PCA", "a map")  # doctest: +SKIP
    """
    import plotly.graph_objects as go
    from plotly.colors import qualitative

    fig = go.Figure()
    shown = np.unique(clusters[rows]).tolist()
    colours = qualitative.Plotly if len(shown) <= 10 else qualitative.Dark24  # Dark24's repeat beyond 24 clusters
    for position, k in enumerate(shown):
        points = rows[clusters[rows] == k]
        positions = np.searchsorted(rows, points)
        hover = [f"{_e(shorten(texts[i]))}<br><i>{_e(names[k])}</i> · confidence {confidence[i]:.2f}" for i in points]
        fig.add_scatter(
            x=coords[positions, 0],
            y=coords[positions, 1],
            mode="markers",
            name=f"{k}: {_e(names[k])}",
            marker={"size": 6, "opacity": 0.75, "color": "lightgrey" if k == -1 else colours[position % len(colours)]},
            text=hover,
            hovertemplate="%{text}<extra></extra>",
        )
    legend = {"itemsizing": "constant", "font": {"size": 10}}
    axis = {"showticklabels": False}
    return _laid_out(fig, 650, f"{method} 1", f"{method} 2", axis, title=title, legend=legend, margin={"t": 60})


def documents_figure(texts: Sequence[str], embeddings, clusters, rows, names, confidence, method: str, random_state):
    """:func:`text_map_figure` of the texts of ``rows`` (sorted indices) at the ``method`` projection
    (:func:`~hf_textcluster.figures.projection.project_2d`) of their ``embeddings`` (N x d, all texts')."""
    coords = project_2d(np.asarray(embeddings)[rows], method=method, random_state=random_state)
    shown = f"{len(rows):,} of {len(texts):,}" if len(rows) < len(texts) else f"{len(texts):,}"
    title = f"{shown} texts, {method_title(method)} projection of the embeddings"
    return text_map_figure(coords, np.asarray(clusters), rows, texts, names, confidence, method_title(method), title)


def confidence_figure(confidence, is_outlier, calibrated: bool):
    """A histogram of ``confidence`` over [0, 1] with both ends included, flagged outliers stacked on the others.

    The bins are counted here: numpy's last bin is closed, plotly's are not, so a text at exactly 1.0 would fall
    outside plotly's own bins.

    Args:
        confidence: N confidences in [0, 1] (values outside are clipped).
        is_outlier: N flags, or None.
        calibrated: Whether the confidence is calibrated (the x-axis says which it is).

    Returns:
        A plotly Figure of Bar traces: one, or two stacked when some text is flagged.

    Example:
        >>> confidence_figure([0.2, 0.9, 1.0], None, calibrated=False).data[0].y.sum()  # doctest: +SKIP
        3
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    edges = np.linspace(0.0, 1.0, CONFIDENCE_BINS + 1)
    centres, width = (edges[:-1] + edges[1:]) / 2, 1.0 / CONFIDENCE_BINS
    values = np.clip(np.asarray(confidence, dtype=np.float64), 0.0, 1.0)

    def bars(rows, name):
        counts, _ = np.histogram(values[rows], bins=edges)
        return go.Bar(x=centres, y=counts, width=width, name=name)

    if is_outlier is not None and is_outlier.any():
        fig.add_trace(bars(~is_outlier, "within its cluster"))
        fig.add_trace(bars(is_outlier, "flagged outlier"))
        fig.update_layout(barmode="stack")
    else:
        fig.add_trace(bars(np.ones(len(values), dtype=bool), "texts"))
    calibrated_what = "calibrated confidence (share of calibration texts less clearly in their cluster)"
    fig.update_xaxes(range=[0, 1])
    return _laid_out(fig, 350, calibrated_what if calibrated else "top soft-assignment probability", "texts", bargap=0)


def confusion_figure(labels, clusters, label_names: Sequence[str] | None, cluster_names: Mapping[int, str]):
    """The classes x clusters counts as a heatmap of each class's shares, the clusters reordered so that the
    Hungarian match (the one the ACC metric scores) is the diagonal and unmatched clusters follow, largest first.
    Texts without a known class are left out (they are no class of their own).

    Args:
        labels: N known classes (None / NaN / -1 for unknown).
        clusters: N cluster ids.
        label_names: Class names when ``labels`` are integer ids.
        cluster_names: cluster id -> name.

    Returns:
        A plotly Figure with one Heatmap trace (``customdata``: the counts).

    Example:
        >>> confusion_figure([0, 0, 1], [1, 1, 0], ["a", "b"], {0: "x", 1: "y"}).data[0].x  # doctest: +SKIP
        ('1: y', '0: x')
    """
    import plotly.graph_objects as go
    from scipy.optimize import linear_sum_assignment
    from sklearn.metrics.cluster import contingency_matrix

    labelled = ~missing_labels(labels)
    labels, clusters = np.asarray(labels)[labelled], np.asarray(clusters)[labelled]
    classes, used = np.unique(labels), np.unique(clusters)
    counts = contingency_matrix(labels, clusters)  # classes x clusters, both in sorted order
    rows, cols = linear_sum_assignment(counts, maximize=True)
    matched = [int(col) for _, col in sorted(zip(rows, cols))]
    rest = sorted(set(range(len(used))) - set(matched), key=lambda j: -counts[:, j].sum())
    order = matched + rest
    counts = counts[:, order]

    x = [f"{int(used[j])}: {_e(shorten(cluster_names[int(used[j])], 40))}" for j in order]
    yl = [_e(display_name(v, label_names)) for v in classes.tolist()]
    share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    fig = go.Figure().add_heatmap(
        z=share,
        x=x,
        y=yl,
        customdata=counts,
        colorscale="Blues",
        zmin=0,
        zmax=1,
        colorbar={"title": "share of class"},
        hovertemplate="class %{y}<br>cluster %{x}<br>%{customdata} texts (%{z:.0%} of the class)<extra></extra>",
    )
    fig.update_xaxes(tickangle=45)
    fig.update_yaxes(autorange="reversed")
    height = max(400, 22 * len(yl) + 200)
    return _laid_out(fig, height, "cluster (Hungarian-matched order)", "class", {"automargin": True})
