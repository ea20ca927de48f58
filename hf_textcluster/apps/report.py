"""A cluster report people look at: one self-contained HTML file per clustering.

The file opens offline in any browser (plotly's JavaScript is inlined, no CDN) and shows:

- an interactive 2-D map of (a seeded sample of) the texts coloured by cluster, the text on hover (UMAP when
  umap-learn is installed, else PCA);
- a table of the clusters: name, c-TF-IDF keywords, size, mean confidence, outliers, and the most and least typical
  members by the model's own measure (distance to the cluster's calibrated centre; the probability when the model
  is not calibrated);
- the pictures a BERTopic user looks for: each cluster's keywords as bars of their c-TF-IDF weights, a map of the
  clusters by similarity (their centres projected to 2-D, sized by their number of texts) and the hierarchy of their
  centres (a dendrogram: what a merge would join first), from :mod:`hf_textcluster.apps.report_figures`;
- the histogram of the confidence and the flagged outliers (a calibrated model only);
- with known labels: ACC / NMI / ARI and the confusion of classes and clusters, clusters Hungarian-matched to the
  classes as the ACC metric does.

plotly is optional: ``pip install "hf_textcluster[report]"``.

    from hf_textcluster.apps.report import cluster_report
    cluster_report(model, texts, labels=labels, output="report.html")    # -> Path("report.html")
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..markup import escape_html
from ..modeling.validation import missing_labels
from .plotting import is_placeholder_names, project_2d, sample_indices

REPORT_EXTRA = 'pip install "hf_textcluster[report]"'
DEFAULT_SAMPLE_SIZE = 3000
NUM_MEMBERS = 3
NUM_KEYWORDS = 8
MAX_OUTLIERS_SHOWN = 50
MAP_METHODS = ("auto", "umap", "pca")
HOVER_CHARS = 160


# ----- validation at the edge ---------------------------------------------------------------------------------------
def _require_plotly():
    try:
        import plotly.graph_objects as go
    except ImportError as err:
        raise ImportError(f"The cluster report needs plotly, which is not installed: {REPORT_EXTRA}") from err
    return go


def check_report_path(output: str | os.PathLike) -> Path:
    """The report's path, or one clear error before any work: not ``.html`` / ``.htm``, or no such folder."""
    if not isinstance(output, (str, os.PathLike)) or not os.fspath(output):
        raise TypeError(f"`output` must be a file path such as 'report.html', got {output!r}.")
    path = Path(output)
    if path.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"`output` {path} must end in .html (the report is one HTML file), e.g. report.html.")
    if not path.parent.resolve().is_dir():
        raise FileNotFoundError(f"`output` {path}: the folder {path.parent.resolve()} does not exist; create it first.")
    if path.is_dir():
        raise ValueError(f"`output` {path} is a folder; give a file name such as {path / 'report.html'}.")
    return path


def _check_map_method(map_method: str) -> str:
    if map_method not in MAP_METHODS:
        raise ValueError(f"`map_method` must be one of {', '.join(MAP_METHODS)}, got {map_method!r}.")
    if map_method != "auto":
        return map_method
    try:
        import umap  # noqa: F401
    except ImportError:
        return "pca"
    return "umap"


def _check_rows(name: str, values, num_rows: int, dtype=None) -> np.ndarray | None:
    if values is None:
        return None
    array = np.asarray(values, dtype=dtype)
    if array.ndim != 1 or len(array) != num_rows:
        raise ValueError(f"`{name}` must hold one value per text ({num_rows}), got shape {array.shape}.")
    return array


# ----- what the report shows, as plain data ------------------------------------------------------------------------
def _keywords(texts: Sequence[str], clusters: np.ndarray, num_clusters: int) -> dict[int, list[str]]:
    from ..representation import cluster_keywords  # c-TF-IDF

    return cluster_keywords(texts, clusters, num_clusters, top_n=NUM_KEYWORDS)


def _keyword_weights(texts: Sequence[str], clusters: np.ndarray, num_clusters: int) -> dict[int, list]:
    from ..representation import ClassTfidfRepresentation

    return ClassTfidfRepresentation(top_n=NUM_KEYWORDS).extract_weights(texts, clusters, num_clusters)


def _keyword_names(keywords: Mapping[int, Sequence[str]]) -> dict[int, str]:
    from ..representation import keyword_labels

    return keyword_labels(keywords)


def cluster_summaries(
    texts: Sequence[str],
    probabilities,
    *,
    confidence=None,
    distance=None,
    is_outlier=None,
    cluster_names: Mapping[int, str] | None = None,
    keywords: Mapping[int, Sequence[str]] | None = None,
    num_members: int = NUM_MEMBERS,
) -> list[dict[str, Any]]:
    """One summary per used cluster, largest first.

    Args:
        texts: The N texts.
        probabilities: N x K soft assignments; a text's cluster is its argmax.
        confidence: N confidences in [0, 1] (``predict_with_confidence``); default: the top probability.
        distance: N distances to the text's cluster centre (``predict_with_confidence``); when given, typicality is
            the distance (smallest first), else the confidence (highest first).
        is_outlier: N flags (``predict_with_confidence``); default: none flagged.
        cluster_names: cluster id -> name; default: its top three keywords.
        keywords: cluster id -> keywords; default: c-TF-IDF on ``texts``.
        num_members: How many most / least typical members each summary lists.

    Returns:
        A list of dicts with ``cluster``, ``name``, ``keywords``, ``size``, ``share``, ``mean_confidence``,
        ``num_outliers``, ``typical`` and ``atypical`` (lists of text indices, most / least typical first).
    """
    texts = list(texts)
    probs = np.asarray(probabilities, dtype=np.float64)
    if probs.ndim != 2 or len(probs) != len(texts):
        raise ValueError(f"`probabilities` must be a {len(texts)} x K matrix (one row per text), got {probs.shape}.")
    num_clusters = probs.shape[1]
    clusters = probs.argmax(axis=1)
    confidence = _check_rows("confidence", confidence, len(texts), np.float64)
    if confidence is None:
        confidence = probs.max(axis=1)
    distance = _check_rows("distance", distance, len(texts), np.float64)
    is_outlier = _check_rows("is_outlier", is_outlier, len(texts), bool)
    if keywords is None:
        keywords = _keywords(texts, clusters, num_clusters)
    if cluster_names is None or is_placeholder_names(cluster_names):
        cluster_names = _keyword_names(keywords)
    # typicality: near the centre is typical (a calibrated model), else a confident assignment
    atypicality = distance if distance is not None else -confidence
    summaries = []
    for k in np.argsort(-np.bincount(clusters, minlength=num_clusters), kind="stable"):
        members = np.flatnonzero(clusters == k)
        if len(members) == 0:
            continue
        order = members[np.argsort(atypicality[members], kind="stable")]
        summaries.append(
            {
                "cluster": int(k),
                "name": str(cluster_names.get(int(k), cluster_names.get(str(k), f"cluster_{k}"))),
                "keywords": list(keywords.get(int(k), [])),
                "size": len(members),
                "share": len(members) / len(texts),
                "mean_confidence": float(confidence[members].mean()),
                "num_outliers": int(is_outlier[members].sum()) if is_outlier is not None else 0,
                "typical": order[:num_members].tolist(),
                "atypical": order[::-1][:num_members].tolist(),
            }
        )
    return summaries


# ----- HTML pieces --------------------------------------------------------------------------------------------------
_STYLE = """
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
table { border-collapse: collapse; width: 100%; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .35em .5em; vertical-align: top; text-align: left; }
th { background: #f4f4f4; } td.num { text-align: right; white-space: nowrap; }
ul { margin: 0; padding-left: 1.1em; } .muted { color: #777; } .name { font-weight: 600; }
"""


# everything a model or a data file carries is escaped before it reaches the page or a plotly figure (plotly renders
# trace names, tick labels and hover text as HTML)
_e = escape_html


def _short(text: str, limit: int = HOVER_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _members_list(indices: Sequence[int], texts: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{_e(_short(texts[i], 200))}</li>" for i in indices) + "</ul>"


def _palette(count: int) -> list[str]:
    """Distinct colours for ``count`` clusters: plotly's 10, else its 24 (which repeat beyond 24)."""
    from plotly.colors import qualitative

    return qualitative.Plotly if count <= 10 else qualitative.Dark24


def _map_figure(go, coords, clusters, rows, texts, names, confidence, method, title):
    fig = go.Figure()
    shown = np.unique(clusters[rows]).tolist()
    colours = _palette(len(shown))
    for position, k in enumerate(shown):
        points = rows[clusters[rows] == k]
        positions = np.searchsorted(rows, points)
        hover = [f"{_e(_short(texts[i]))}<br><i>{_e(names[k])}</i> · confidence {confidence[i]:.2f}" for i in points]
        fig.add_trace(
            go.Scatter(
                x=coords[positions, 0],
                y=coords[positions, 1],
                mode="markers",
                name=f"{k}: {_e(names[k])}",
                marker={"size": 6, "opacity": 0.75, "color": colours[position % len(colours)]},
                text=hover,
                hovertemplate="%{text}<extra></extra>",
            )
        )
    fig.update_layout(
        title=title,
        height=650,
        legend={"itemsizing": "constant", "font": {"size": 10}},
        xaxis={"title": f"{method} 1", "showticklabels": False},
        yaxis={"title": f"{method} 2", "showticklabels": False},
        margin={"t": 60},
    )
    return fig


CONFIDENCE_BINS = 40


def _confidence_figure(go, confidence, is_outlier, calibrated: bool):
    """A histogram of ``confidence`` over [0, 1] with both ends included (numpy's last bin is closed, plotly's are not:
    a text at exactly 1.0 would fall outside plotly's own bins)."""
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
    what = (
        "calibrated confidence (share of calibration texts less clearly in their cluster)"
        if calibrated
        else "top soft-assignment probability"
    )
    fig.update_layout(
        height=350, bargap=0, xaxis={"title": what, "range": [0, 1]}, yaxis={"title": "texts"}, margin={"t": 30}
    )
    return fig


def _confusion(go, labels, clusters, label_names, cluster_names):
    """(figure, scores line): classes x clusters counts, clusters reordered so the Hungarian match is the diagonal."""
    from scipy.optimize import linear_sum_assignment

    from ..evaluation.metrics import clustering_scores

    labelled = ~missing_labels(labels)  # texts without a known class are not scored, nor a class of their own
    labels, clusters = np.asarray(labels)[labelled], np.asarray(clusters)[labelled]
    classes, y = np.unique(labels, return_inverse=True)
    used, c = np.unique(clusters, return_inverse=True)
    counts = np.zeros((len(classes), len(used)), dtype=np.int64)
    np.add.at(counts, (y.reshape(-1), c.reshape(-1)), 1)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    matched = [int(col) for _, col in sorted(zip(rows, cols))]
    rest = sorted(set(range(len(used))) - set(matched), key=lambda j: -counts[:, j].sum())
    order = matched + rest
    counts = counts[:, order]

    def class_name(value):
        if label_names is not None and isinstance(value, (int, np.integer)) and 0 <= int(value) < len(label_names):
            return str(label_names[int(value)])
        return str(value)

    x = [f"{int(used[j])}: {_e(_short(cluster_names[int(used[j])], 40))}" for j in order]
    yl = [_e(class_name(v)) for v in classes.tolist()]
    share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    fig = go.Figure(
        go.Heatmap(
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
    )
    fig.update_layout(
        height=max(400, 22 * len(yl) + 200),
        xaxis={"title": "cluster (Hungarian-matched order)", "tickangle": 45, "automargin": True},
        yaxis={"title": "class", "autorange": "reversed", "automargin": True},
        margin={"t": 30},
    )
    scores = clustering_scores(labels, clusters)
    line = (
        f"ACC {100 * scores['acc']:.1f} · NMI {100 * scores['nmi']:.1f} · ARI {100 * scores['ari']:.1f} "
        f"on {len(labels):,} texts, {len(classes)} classes, {len(used)} clusters used."
        + (f" {int((~labelled).sum()):,} texts without a label are left out." if not labelled.all() else "")
    )
    return fig, line


def _cluster_pictures(go, weights, embeddings, clusters, order, names) -> list[str]:
    """The keyword bars, the map of clusters by similarity and the hierarchy of their centres, as HTML sections."""
    from .report_figures import (
        MAX_BAR_CLUSTERS,
        cluster_centres,
        cluster_map_figure,
        first_joins,
        hierarchy_figure,
        keyword_bars_figure,
    )

    def html_of(fig) -> str:
        return fig.to_html(full_html=False, include_plotlyjs=False, default_width="100%")

    bars = keyword_bars_figure(weights, order, names)
    which = f"the {MAX_BAR_CLUSTERS} largest clusters" if len(order) > MAX_BAR_CLUSTERS else "each cluster"
    parts = [
        f"<h2>Keywords</h2><p class='muted'>The top keywords of {which}, each bar the word's c-TF-IDF weight "
        "(its share of the cluster's words times how rare it is in the other clusters).</p>" + html_of(bars)
    ]
    ids, centres, sizes = cluster_centres(embeddings, clusters, len(names))
    if len(ids) < 2:
        return parts + ["<h2>Clusters by similarity</h2><p class='muted'>One cluster holds every text: no map.</p>"]
    parts.append(
        "<h2>Clusters by similarity</h2><p class='muted'>Each disc is a cluster at the PCA projection of its centre "
        "(the mean of its texts' normalised embeddings), its area proportional to its number of texts; nearby discs "
        "hold similar texts.</p>" + html_of(cluster_map_figure(ids, centres, sizes, names))
    )
    joins = "".join(
        f"<li>{_e(', '.join(map(str, left)))} with {_e(', '.join(map(str, right)))} "
        f"(cosine distance {distance:.3f})</li>"
        for left, right, distance in first_joins(ids, centres)
    )
    parts.append(
        f"<h2>Hierarchy</h2><p class='muted'>The dendrogram of the {len(ids)} cluster centres (average linkage of "
        "their cosine distances): the lower two branches join, the more alike their clusters. A merge would join "
        f"first:</p><ul class='joins'>{joins}</ul>" + html_of(hierarchy_figure(ids, centres, names))
    )
    return parts


def render_report(
    texts: Sequence[str],
    probabilities,
    embeddings,
    output: str | os.PathLike = "report.html",
    *,
    confidence=None,
    distance=None,
    is_outlier=None,
    labels=None,
    label_names: Sequence[str] | None = None,
    cluster_names: Mapping[int, str] | None = None,
    keywords: Mapping[int, Sequence[str]] | None = None,
    calibrated: bool | None = None,
    sample_size: int | None = DEFAULT_SAMPLE_SIZE,
    map_method: str = "auto",
    random_state: int | None = 0,
    title: str = "Cluster report",
) -> Path:
    """Write the cluster report of arrays already computed (see :func:`cluster_report` for a model and texts).

    Args:
        texts: The N texts.
        probabilities: N x K soft assignments (``model.predict_proba``); a text's cluster is its argmax.
        embeddings: N x d embeddings the map projects (``model.embed``).
        output: The HTML file to write (its folder must exist).
        confidence, distance, is_outlier: N values each, as ``model.predict_with_confidence`` returns them;
            without them the confidence is the top probability and no text is flagged.
        labels: N known classes (optional): the report adds ACC / NMI / ARI and the confusion.
        label_names: Class names when ``labels`` are integer ids.
        cluster_names: cluster id -> name (e.g. ``model.config.id2label``); default: top keywords.
        keywords: cluster id -> keywords; default: c-TF-IDF on ``texts``.
        calibrated: Whether ``confidence`` is calibrated (the histogram's axis says which); default: whether
            ``distance`` was given.
        sample_size: At most this many texts in the map (a seeded sample); None maps all. Sizes count all texts.
        map_method: ``"auto"`` (UMAP when umap-learn is installed, else PCA), ``"umap"`` or ``"pca"``.
        random_state: Seed of the sample and the projection.
        title: The page's heading.

    Returns:
        The path written.

    Raises:
        ImportError: plotly (or, with ``map_method="umap"``, umap-learn) is not installed.
        ValueError: arrays of mismatched lengths, a path not ending in .html, a bad ``sample_size``.
    """
    go = _require_plotly()
    path = check_report_path(output)
    method = _check_map_method(map_method)
    from ..modeling.validation import validate_texts

    texts = validate_texts(texts)
    n = len(texts)
    probs = np.asarray(probabilities, dtype=np.float64)
    if probs.ndim != 2 or len(probs) != n:
        raise ValueError(f"`probabilities` must be a {n} x K matrix (one row per text), got shape {probs.shape}.")
    embeddings = np.asarray(embeddings, dtype=np.float32)
    if embeddings.ndim != 2 or len(embeddings) != n:
        raise ValueError(f"`embeddings` must be a {n} x d matrix (one row per text), got shape {embeddings.shape}.")
    if n < 4:
        raise ValueError(f"A report needs at least 4 texts (its map does), got {n}.")
    rows = sample_indices(n, sample_size, random_state)
    labels = _check_rows("labels", labels, n)
    confidence = _check_rows("confidence", confidence, n, np.float64)
    distance = _check_rows("distance", distance, n, np.float64)
    is_outlier = _check_rows("is_outlier", is_outlier, n, bool)
    calibrated = distance is not None if calibrated is None else bool(calibrated)
    if confidence is None:
        confidence = probs.max(axis=1)

    clusters = probs.argmax(axis=1)
    num_clusters = probs.shape[1]
    weights = _keyword_weights(texts, clusters, num_clusters)
    if keywords is None:
        keywords = {k: [word for word, _ in scored] for k, scored in weights.items()}
    if cluster_names is None or is_placeholder_names(cluster_names):
        cluster_names = _keyword_names(keywords)
    names = {k: str(cluster_names.get(k, cluster_names.get(str(k), f"cluster_{k}"))) for k in range(num_clusters)}
    summaries = cluster_summaries(
        texts,
        probs,
        confidence=confidence,
        distance=distance,
        is_outlier=is_outlier,
        cluster_names=names,
        keywords=keywords,
    )

    coords = project_2d(embeddings[rows], method=method, random_state=random_state)
    shown = f"{len(rows):,} of {n:,}" if len(rows) < n else f"{n:,}"
    map_fig = _map_figure(
        go,
        coords,
        clusters,
        rows,
        texts,
        names,
        confidence,
        method.upper(),
        f"{shown} texts, {method.upper()} projection of the embeddings",
    )
    parts = [map_fig.to_html(full_html=False, include_plotlyjs=True, default_width="100%")]

    # clusters table
    typical_by = "distance to the cluster's calibrated centre" if distance is not None else "assignment probability"
    table = [
        (
            "<table><tr><th>cluster</th><th>name</th><th>keywords</th><th>texts</th><th>mean confidence</th>"
            "<th>outliers</th><th>most typical</th><th>least typical</th></tr>"
        )
    ]
    for s in summaries:
        table.append(
            f"<tr><td class='num'>{s['cluster']}</td><td class='name'>{_e(s['name'])}</td>"
            f"<td>{_e(', '.join(s['keywords']))}</td><td class='num'>{s['size']:,} ({100 * s['share']:.1f}%)</td>"
            f"<td class='num'>{s['mean_confidence']:.2f}</td><td class='num'>{s['num_outliers']}</td>"
            f"<td>{_members_list(s['typical'], texts)}</td><td>{_members_list(s['atypical'], texts)}</td></tr>"
        )
    table.append("</table>")
    parts.append(
        f"<h2>Clusters</h2><p class='muted'>{len(summaries)} of {num_clusters} clusters hold texts, largest "
        f"first; keywords by c-TF-IDF on these texts; members ordered by {typical_by}.</p>" + "".join(table)
    )

    parts += _cluster_pictures(go, weights, embeddings, clusters, [s["cluster"] for s in summaries], names)

    # confidence and outliers
    hist = _confidence_figure(go, confidence, is_outlier, calibrated)
    parts.append("<h2>Confidence</h2>" + hist.to_html(full_html=False, include_plotlyjs=False, default_width="100%"))
    if is_outlier is None:
        parts.append(
            "<h2>Outliers</h2><p class='muted'>Not flagged: the model is not calibrated. Run "
            "<code>hf-textcluster calibrate --model DIR --input FILE</code> (or <code>model.calibrate(texts)"
            "</code>) to flag texts far from their cluster.</p>"
        )
    else:
        flagged = np.flatnonzero(is_outlier)
        if distance is not None:
            flagged = flagged[np.argsort(-distance[flagged], kind="stable")]
        rows_html = "".join(
            f"<tr><td>{_e(_short(texts[i], 200))}</td><td>{clusters[i]}: {_e(names[int(clusters[i])])}</td>"
            f"<td class='num'>{'' if distance is None else f'{distance[i]:.3f}'}</td>"
            f"<td class='num'>{confidence[i]:.2f}</td></tr>"
            for i in flagged[:MAX_OUTLIERS_SHOWN]
        )
        more = f", the {MAX_OUTLIERS_SHOWN} farthest shown" if len(flagged) > MAX_OUTLIERS_SHOWN else ""
        parts.append(
            f"<h2>Outliers</h2><p class='muted'>{len(flagged):,} texts ({100 * len(flagged) / n:.1f}%) lie "
            f"farther from their cluster's centre than the model's calibration allows{more}.</p>"
            + (
                f"<table><tr><th>text</th><th>cluster</th><th>distance</th><th>confidence</th></tr>{rows_html}</table>"
                if len(flagged)
                else ""
            )
        )

    if labels is not None:
        fig, line = _confusion(go, labels, clusters, label_names, names)
        parts.append(
            f"<h2>Against the known labels</h2><p>{_e(line)}</p>"
            + fig.to_html(full_html=False, include_plotlyjs=False, default_width="100%")
        )

    header = (
        f"<h1>{_e(title)}</h1><p>{n:,} texts in {len(summaries)} clusters (of {num_clusters}). Confidence: "
        f"{'calibrated' if calibrated else 'the top probability (the model is not calibrated)'}. "
        f"Map: {method.upper()} of {shown} texts (seed {random_state}).</p>"
    )
    document = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>{header}<h2>Map</h2>"
        + "".join(parts)
        + "</body></html>"
    )
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(document, encoding="utf-8")
    os.replace(tmp, path)  # atomic: a reader never sees half a report
    return path


def model_outputs(
    model, embeddings, *, outlier_quantile: float | None = None, batch_size: int = 4096
) -> dict[str, np.ndarray]:
    """What the report needs from ``model``, from embeddings already computed (``model.embed(texts)``), so a caller
    that has them encodes nothing twice: ``probabilities`` and, when the model is calibrated, ``confidence``,
    ``distance`` and ``is_outlier`` as ``predict_with_confidence`` computes them.

    Args:
        model: A clusterer with initialised clusters.
        embeddings: N x d ``model.embed(texts)``.
        outlier_quantile: A calibrated model's outlier threshold (default: the pipeline's, 0.99).
        batch_size: Rows per call of the model's head.

    Returns:
        A dict of N-row numpy arrays.
    """
    import torch

    from ..modeling.calibration import DEFAULT_OUTLIER_QUANTILE, check_outlier_quantile

    quantile = check_outlier_quantile(DEFAULT_OUTLIER_QUANTILE if outlier_quantile is None else outlier_quantile)
    model._check_clusters_initialized()
    embeddings = torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32))
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            probs = torch.cat(
                [
                    model.cluster_probabilities(embeddings[i : i + batch_size].to(model.device)).float().cpu()
                    for i in range(0, len(embeddings), batch_size)
                ]
            )
            out = {"probabilities": probs.numpy()}
            if model.is_calibrated:
                calibration = model.calibration
                clusters = probs.argmax(dim=-1)
                distance = torch.cat(
                    [
                        calibration.distance(
                            embeddings[i : i + batch_size].to(model.device),
                            clusters[i : i + batch_size].to(model.device),
                        ).cpu()
                        for i in range(0, len(embeddings), batch_size)
                    ]
                )
                out["confidence"] = torch.cat(
                    [
                        model.calibrated_confidence(
                            embeddings[i : i + batch_size].to(model.device), probs[i : i + batch_size].to(model.device)
                        ).cpu()
                        for i in range(0, len(embeddings), batch_size)
                    ]
                ).numpy()
                out["distance"] = distance.numpy()
                out["is_outlier"] = (distance > calibration.thresholds(quantile).cpu()[clusters]).numpy()
    finally:
        model.train(was_training)
    return out


def cluster_report(
    model,
    texts: Sequence[str],
    labels=None,
    output: str | os.PathLike = "report.html",
    *,
    label_names: Sequence[str] | None = None,
    sample_size: int | None = DEFAULT_SAMPLE_SIZE,
    map_method: str = "auto",
    outlier_quantile: float | None = None,
    batch_size: int | None = None,
    precision="auto",
    random_state: int | None = 0,
    title: str | None = None,
) -> Path:
    """Cluster ``texts`` with ``model`` and write one self-contained HTML report (map, clusters, confidence,
    outliers and, with ``labels``, the confusion against them).

    Args:
        model: A trained hf_textcluster clusterer (``AutoModel.from_pretrained(dir)``).
        texts: The texts to cluster and show.
        labels: Known classes of ``texts`` (optional; used only to score and for the confusion).
        output: The HTML file to write; its folder must exist.
        label_names: Class names when ``labels`` are integer ids.
        sample_size: At most this many texts in the map (a seeded sample); None maps all.
        map_method: ``"auto"`` (UMAP when umap-learn is installed, else PCA), ``"umap"`` or ``"pca"``.
        outlier_quantile: A calibrated model's outlier threshold (default: the pipeline's, 0.99).
        batch_size: Texts per encoding batch (default: the model's encoding default).
        precision: As in ``model.embed``.
        random_state: Seed of the map's sample and projection.
        title: The page's heading (default: the model's class).

    Returns:
        The path written.

    Raises:
        ImportError: plotly is not installed (``pip install "hf_textcluster[report]"``).
        ValueError: no usable texts, labels of another length, a path not ending in .html, ...

    Example:
        >>> from hf_textcluster.apps.report import cluster_report
        >>> cluster_report(model, texts, labels, "report.html")  # doctest: +SKIP
        PosixPath('report.html')
    """
    from ..modeling.modeling_utils import TextClusteringPreTrainedModel
    from ..modeling.validation import validate_texts

    _require_plotly()
    path = check_report_path(output)
    _check_map_method(map_method)
    if not isinstance(model, TextClusteringPreTrainedModel):
        raise TypeError(
            f"`model` must be an hf_textcluster clusterer (AutoModel.from_pretrained of a trained "
            f"directory), got {type(model).__name__}."
        )
    texts = validate_texts(texts)
    if labels is not None and len(labels) != len(texts):
        raise ValueError(f"`labels` has {len(labels)} items but `texts` has {len(texts)}; give one label per text.")
    sample_indices(len(texts), sample_size, random_state)  # a bad sample_size fails before the encoding pass
    from ..modeling.calibration import DEFAULT_OUTLIER_QUANTILE, check_outlier_quantile
    from ..modeling.modeling_utils import DEFAULT_ENCODE_BATCH_SIZE

    check_outlier_quantile(DEFAULT_OUTLIER_QUANTILE if outlier_quantile is None else outlier_quantile)
    model._check_clusters_initialized()
    embeddings = model.embed(texts, batch_size=batch_size or DEFAULT_ENCODE_BATCH_SIZE, precision=precision)
    outputs = model_outputs(model, embeddings, outlier_quantile=outlier_quantile)
    return render_report(
        texts,
        outputs["probabilities"],
        embeddings,
        path,
        confidence=outputs.get("confidence"),
        distance=outputs.get("distance"),
        is_outlier=outputs.get("is_outlier"),
        labels=labels,
        label_names=label_names,
        cluster_names=getattr(model.config, "id2label", None),
        calibrated=model.is_calibrated,
        sample_size=sample_size,
        map_method=map_method,
        random_state=random_state,
        title=title or f"{type(model).__name__}: cluster report",
    )
