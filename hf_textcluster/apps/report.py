"""A cluster report people look at: one self-contained HTML file per clustering.

The file opens offline in any browser (plotly's JavaScript is inlined, no CDN) and shows:

- an interactive 2-D map of (a seeded sample of) the texts coloured by cluster, the text on hover (UMAP when
  umap-learn is installed, else PCA);
- a table of the clusters: name, c-TF-IDF keywords, size, mean confidence, outliers, and the most and least typical
  members by the model's own measure (distance to the cluster's calibrated centre; the probability when the model
  is not calibrated);
- the pictures a BERTopic user looks for: each cluster's keywords as bars of their c-TF-IDF weights, a map of the
  clusters by similarity (their centres projected to 2-D, sized by their number of texts) and the hierarchy of their
  centres (a dendrogram: what a merge would join first);
- the histogram of the confidence and the flagged outliers (a calibrated model only);
- with known labels: ACC / NMI / ARI and the confusion of classes and clusters, clusters Hungarian-matched to the
  classes as the ACC metric does.

This module takes a model (:func:`cluster_report`) or arrays already computed (:func:`render_report`) and writes the
file. The page is cut where a newcomer would look for it: what it shows, checked once, in
:mod:`~hf_textcluster.apps.report_data`; one function per section, in page order, in
:mod:`~hf_textcluster.apps.report_sections`; their plotly figures in :mod:`~hf_textcluster.figures.clusters`.

plotly is optional: ``pip install "hf_textcluster[report]"``.

    from hf_textcluster.apps.report import cluster_report
    cluster_report(model, texts, labels=labels, output="report.html")    # -> Path("report.html")
"""

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..cache import write_whole
from ..figures.projection import resolve_projection
from ..modeling.validation import validate_texts
from ..representation.ctfidf import KEYWORDS_KEY
from ..representation.summary import assign_embeddings, sample_rows
from .report_data import DEFAULT_SAMPLE_SIZE, ReportData
from .report_sections import render_page

REPORT_EXTRA = 'pip install "hf_textcluster[report]"'


def _require_plotly():
    try:
        import plotly.graph_objects  # noqa: F401
    except ImportError as err:
        raise ImportError(f"The cluster report needs plotly, which is not installed: {REPORT_EXTRA}") from err


def check_report_path(output: str | os.PathLike) -> Path:
    """The report's path, or one clear error before any work.

    Args:
        output: The HTML file a report will be written to.

    Returns:
        ``output`` as a Path.

    Raises:
        TypeError: not a path.
        ValueError: not ``.html`` / ``.htm``, or a folder.
        FileNotFoundError: its folder does not exist.

    Example:
        >>> check_report_path("report.html")
        PosixPath('report.html')
    """
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


def render_report(
    texts: Sequence[str],
    probabilities,
    embeddings,
    output: str | os.PathLike = "report.html",
    *,
    map_method: str = "auto",
    title: str = "Cluster report",
    **arrays,
) -> Path:
    """Write the cluster report of arrays already computed (see :func:`cluster_report` for a model and texts).

    Args:
        texts: The N texts.
        probabilities: N x K soft assignments (``model.predict_proba``); a text's cluster is its argmax.
        embeddings: N x d embeddings the map projects (``model.embed``).
        output: The HTML file to write (its folder must exist).
        map_method: ``"auto"`` (UMAP when umap-learn is installed, else PCA), ``"umap"``, ``"tsne"`` or ``"pca"``.
        title: The page's heading.
        **arrays: What else the page shows, as :meth:`~hf_textcluster.apps.report_data.ReportData.from_arrays`
            takes it, all optional. ``confidence``, ``distance``, ``is_outlier``: N values each, as
            ``model.predict_with_confidence`` returns them (without them the confidence is the top probability and
            no text is flagged). ``labels``: N known classes (the report adds ACC / NMI / ARI and the confusion), with
            ``label_names`` when they are integer ids. ``cluster_names``: cluster id -> name (e.g.
            ``model.config.id2label``; default: top keywords). ``keywords``: cluster id -> keywords (default: c-TF-IDF
            on ``texts``, its words counted with ``keyword_vectorizer``). ``calibrated``: whether ``confidence`` is
            calibrated (the histogram's axis says which;
            default: whether ``distance`` was given). ``sample_size``: at most this many texts in the map, a seeded
            sample (3,000 by default; None maps all; sizes count all texts). ``random_state``: seed of the sample and
            the projection.

    Returns:
        The path written.

    Raises:
        ImportError: plotly (or, with ``map_method="umap"``, umap-learn) is not installed.
        ValueError: arrays of mismatched lengths, a path not ending in .html, a bad ``sample_size``.

    Example:
        >>> probabilities = model.predict_proba(texts)  # doctest: +SKIP
        >>> render_report(texts, probabilities, model.embed(texts), "report.html", labels=labels)  # doctest: +SKIP
        PosixPath('report.html')
    """
    _require_plotly()
    path = check_report_path(output)
    data = ReportData.from_arrays(
        texts, probabilities, embeddings, map_method=resolve_projection(map_method, "map_method"), **arrays
    )
    write_whole(path, render_page(data, title))
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

    Raises:
        ValueError: a bad ``outlier_quantile``, or a model whose clusters are not initialised.

    Example:
        >>> outputs = model_outputs(model, model.embed(texts))  # doctest: +SKIP
        >>> sorted(outputs)  # a calibrated model  # doctest: +SKIP
        ['confidence', 'distance', 'is_outlier', 'probabilities']
    """
    from ..modeling.calibration import DEFAULT_OUTLIER_QUANTILE, check_outlier_quantile

    quantile = check_outlier_quantile(DEFAULT_OUTLIER_QUANTILE if outlier_quantile is None else outlier_quantile)
    model._check_clusters_initialized()
    assigned = assign_embeddings(model, embeddings, batch_size, keep_probabilities=True, outliers=False)
    out = {"probabilities": assigned.probabilities.astype(np.float32)}
    if model.is_calibrated:
        distance = -assigned.typicality
        threshold = model.calibration.thresholds(quantile).float().cpu().numpy()[assigned.clusters]
        out.update(confidence=assigned.confidence, distance=distance, is_outlier=distance > threshold)
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
        map_method: ``"auto"`` (UMAP when umap-learn is installed, else PCA), ``"umap"``, ``"tsne"`` or ``"pca"``.
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

    _require_plotly()
    path = check_report_path(output)
    resolve_projection(map_method, "map_method")  # an unknown one fails before the encoding pass
    if not isinstance(model, TextClusteringPreTrainedModel):
        raise TypeError(
            f"`model` must be an hf_textcluster clusterer (AutoModel.from_pretrained of a trained "
            f"directory), got {type(model).__name__}."
        )
    texts = validate_texts(texts)
    if labels is not None and len(labels) != len(texts):
        raise ValueError(f"`labels` has {len(labels)} items but `texts` has {len(texts)}; give one label per text.")
    sample_rows(len(texts), sample_size, random_state)  # a bad sample_size fails before the encoding pass
    from ..modeling.calibration import DEFAULT_OUTLIER_QUANTILE, check_outlier_quantile
    from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE

    check_outlier_quantile(DEFAULT_OUTLIER_QUANTILE if outlier_quantile is None else outlier_quantile)
    model._check_clusters_initialized()
    embeddings = model.embed(texts, batch_size=batch_size or DEFAULT_ENCODE_BATCH_SIZE, precision=precision)
    outputs = model_outputs(model, embeddings, outlier_quantile=outlier_quantile)
    return render_report(
        texts,
        outputs.pop("probabilities"),
        embeddings,
        path,
        labels=labels,
        label_names=label_names,
        cluster_names=getattr(model.config, "id2label", None),
        keyword_vectorizer=getattr(model.config, KEYWORDS_KEY, None),
        calibrated=model.is_calibrated,
        sample_size=sample_size,
        map_method=map_method,
        random_state=random_state,
        title=title or f"{type(model).__name__}: cluster report",
        **outputs,  # confidence, distance and is_outlier of a calibrated model
    )
