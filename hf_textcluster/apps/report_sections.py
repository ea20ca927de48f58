"""The sections of the cluster report, in page order: each one function from :class:`ReportData` to HTML.

To add a section, write a function ``(data: ReportData) -> str`` here (its figure, if any, in
:mod:`~hf_textcluster.figures.clusters`) and list it in :data:`SECTIONS` where it belongs on the page; a section
with nothing to show returns ``""``. :func:`render_page` puts the header, the sections and the style into one
self-contained HTML document.

    from hf_textcluster.apps.report_data import ReportData
    from hf_textcluster.apps.report_sections import render_page
    html = render_page(ReportData.from_arrays(texts, probabilities, embeddings), "My clusters")
"""

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ..figures.clusters import (
    MAX_BAR_CLUSTERS,
    cluster_map_figure,
    confidence_figure,
    confusion_figure,
    documents_figure,
    first_joins,
    hierarchy_figure,
    keyword_bars_figure,
    shorten,
)
from ..figures.projection import method_title
from ..markup import escape_html
from ..modeling.input_checks import missing_labels
from .report_data import ReportData

MAX_OUTLIERS_SHOWN = 50
MEMBER_CHARS = 200

STYLE = """
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


def figure_html(fig, *, with_plotly_js: bool = False) -> str:
    """A plotly figure as a ``<div>`` of the page; the first figure of the page carries plotly's JavaScript, inlined
    so that the file opens offline."""
    return fig.to_html(full_html=False, include_plotlyjs=with_plotly_js, default_width="100%")


def _table(header: Sequence[str], rows: Iterable[str]) -> str:
    return "<table><tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr>" + "".join(rows) + "</table>"


def _members_list(indices: Sequence[int], texts: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{_e(shorten(texts[i], MEMBER_CHARS))}</li>" for i in indices) + "</ul>"


def map_section(data: ReportData) -> str:
    """The texts (a seeded sample of them) on a 2-D map of their embeddings, coloured by cluster."""
    fig = documents_figure(
        data.texts,
        data.embeddings,
        data.clusters,
        data.rows,
        data.names,
        data.confidence,
        data.map_method,
        data.random_state,
    )
    return "<h2>Map</h2>" + figure_html(fig, with_plotly_js=True)


def clusters_section(data: ReportData) -> str:
    """The table of the clusters: name, keywords, size, mean confidence, outliers, most and least typical members."""
    typical_by = "assignment probability" if data.distance is None else "distance to the cluster's calibrated centre"
    header = ("cluster", "name", "keywords", "texts", "mean confidence", "outliers", "most typical", "least typical")
    rows = (
        f"<tr><td class='num'>{s['cluster']}</td><td class='name'>{_e(s['name'])}</td>"
        f"<td>{_e(', '.join(s['keywords']))}</td><td class='num'>{s['size']:,} ({100 * s['share']:.1f}%)</td>"
        f"<td class='num'>{s['mean_confidence']:.2f}</td><td class='num'>{s['num_outliers']}</td>"
        f"<td>{_members_list(s['typical'], data.texts)}</td><td>{_members_list(s['atypical'], data.texts)}</td></tr>"
        for s in data.summaries
    )
    return (
        f"<h2>Clusters</h2><p class='muted'>{len(data.summaries)} of {data.num_clusters} clusters hold texts, largest "
        f"first; keywords by c-TF-IDF on these texts; members ordered by {typical_by}.</p>" + _table(header, rows)
    )


def keywords_section(data: ReportData) -> str:
    """Each cluster's top keywords (the largest clusters') as bars of their c-TF-IDF weights."""
    order = [s["cluster"] for s in data.summaries]
    which = f"the {MAX_BAR_CLUSTERS} largest clusters" if len(order) > MAX_BAR_CLUSTERS else "each cluster"
    return (
        f"<h2>Keywords</h2><p class='muted'>The top keywords of {which}, each bar the word's c-TF-IDF weight "
        "(its share of the cluster's words times how rare it is in the other clusters).</p>"
        + figure_html(keyword_bars_figure(data.weights, order, data.names))
    )


def similarity_section(data: ReportData) -> str:
    """The clusters as discs at the 2-D projection of their centres, sized by their number of texts."""
    ids, centres, sizes = data.centres
    if len(ids) < 2:
        return "<h2>Clusters by similarity</h2><p class='muted'>One cluster holds every text: no map.</p>"
    return (
        "<h2>Clusters by similarity</h2><p class='muted'>Each disc is a cluster at the PCA projection of its centre "
        "(the mean of its texts' normalised embeddings), its area proportional to its number of texts; nearby discs "
        "hold similar texts.</p>" + figure_html(cluster_map_figure(ids, centres, sizes, data.names))
    )


def hierarchy_section(data: ReportData) -> str:
    """The dendrogram of the cluster centres and the first joins a merge would make (none for a single cluster)."""
    ids, centres, _ = data.centres
    if len(ids) < 2:
        return ""
    joins = "".join(
        f"<li>{_e(', '.join(map(str, left)))} with {_e(', '.join(map(str, right)))} "
        f"(cosine distance {distance:.3f})</li>"
        for left, right, distance in first_joins(ids, centres)
    )
    return (
        f"<h2>Hierarchy</h2><p class='muted'>The dendrogram of the {len(ids)} cluster centres (average linkage of "
        "their cosine distances): the lower two branches join, the more alike their clusters. A merge would join "
        f"first:</p><ul class='joins'>{joins}</ul>" + figure_html(hierarchy_figure(ids, centres, data.names))
    )


def confidence_section(data: ReportData) -> str:
    """The histogram of the confidence, flagged outliers stacked on the others."""
    return "<h2>Confidence</h2>" + figure_html(confidence_figure(data.confidence, data.is_outlier, data.calibrated))


def outliers_section(data: ReportData) -> str:
    """The texts farther from their cluster's centre than the calibration allows, farthest first (how to flag them
    when the model is not calibrated)."""
    if data.is_outlier is None:
        return (
            "<h2>Outliers</h2><p class='muted'>Not flagged: the model is not calibrated. Run "
            "<code>hf-textcluster calibrate --model DIR --input FILE</code> (or <code>model.calibrate(texts)"
            "</code>) to flag texts far from their cluster.</p>"
        )
    distance, clusters = data.distance, data.clusters
    flagged = np.flatnonzero(data.is_outlier)
    if distance is not None:
        flagged = flagged[np.argsort(-distance[flagged], kind="stable")]
    rows = (
        f"<tr><td>{_e(shorten(data.texts[i], MEMBER_CHARS))}</td>"
        f"<td>{clusters[i]}: {_e(data.names[int(clusters[i])])}</td>"
        f"<td class='num'>{'' if distance is None else f'{distance[i]:.3f}'}</td>"
        f"<td class='num'>{data.confidence[i]:.2f}</td></tr>"
        for i in flagged[:MAX_OUTLIERS_SHOWN]
    )
    more = f", the {MAX_OUTLIERS_SHOWN} farthest shown" if len(flagged) > MAX_OUTLIERS_SHOWN else ""
    return (
        f"<h2>Outliers</h2><p class='muted'>{len(flagged):,} texts ({100 * len(flagged) / len(data.texts):.1f}%) lie "
        f"farther from their cluster's centre than the model's calibration allows{more}.</p>"
        + (_table(("text", "cluster", "distance", "confidence"), rows) if len(flagged) else "")
    )


def scores_line(labels, clusters) -> str:
    """ACC / NMI / ARI of ``clusters`` against the known ``labels``, with what they were computed on.

    Args:
        labels: N known classes (None / NaN / -1 for unknown: left out, and said so).
        clusters: N cluster ids.

    Returns:
        One sentence, e.g. ``"ACC 71.0 · NMI 68.2 · ARI 55.1 on 2,000 texts, 20 classes, 20 clusters used."``.

    Example:
        >>> scores_line([0, 0, 1, 1], [1, 1, 0, 0])  # doctest: +SKIP
        'ACC 100.0 · NMI 100.0 · ARI 100.0 on 4 texts, 2 classes, 2 clusters used.'
    """
    from ..evaluation.metrics import clustering_scores

    labelled = ~missing_labels(labels)  # texts without a known class are not scored, nor a class of their own
    labels, clusters = np.asarray(labels)[labelled], np.asarray(clusters)[labelled]
    scores = clustering_scores(labels, clusters)
    return (
        f"ACC {100 * scores['acc']:.1f} · NMI {100 * scores['nmi']:.1f} · ARI {100 * scores['ari']:.1f} "
        f"on {len(labels):,} texts, {len(np.unique(labels))} classes, {len(np.unique(clusters))} clusters used."
        + (f" {int((~labelled).sum()):,} texts without a label are left out." if not labelled.all() else "")
    )


def labels_section(data: ReportData) -> str:
    """With known labels: the scores and the confusion of classes and clusters (nothing without labels)."""
    if data.labels is None:
        return ""
    fig = confusion_figure(data.labels, data.clusters, data.label_names, data.names)
    return f"<h2>Against the known labels</h2><p>{_e(scores_line(data.labels, data.clusters))}</p>" + figure_html(fig)


# the page, top to bottom
SECTIONS: tuple[Callable[[ReportData], str], ...] = (
    map_section,
    clusters_section,
    keywords_section,
    similarity_section,
    hierarchy_section,
    confidence_section,
    outliers_section,
    labels_section,
)


def render_page(data: ReportData, title: str) -> str:
    """The whole report as one HTML document: ``title``, a header saying what the page shows, then every section of
    :data:`SECTIONS`.

    Args:
        data: What the page shows (:meth:`ReportData.from_arrays`).
        title: The page's heading (escaped).

    Returns:
        The HTML document.

    Example:
        >>> data = ReportData.from_arrays(texts, probabilities, embeddings)  # doctest: +SKIP
        >>> html = render_page(data, "My clusters")  # doctest: +SKIP
    """
    confidence = "calibrated" if data.calibrated else "the top probability (the model is not calibrated)"
    header = (
        f"<h1>{_e(title)}</h1><p>{len(data.texts):,} texts in {len(data.summaries)} clusters (of {data.num_clusters}). "
        f"Confidence: {confidence}. "
        f"Map: {method_title(data.map_method)} of {data.shown} texts (seed {data.random_state}).</p>"
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>{header}"
        + "".join(section(data) for section in SECTIONS)
        + "</body></html>"
    )
